package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/wsplan/wsplan/frameworks"
)

// The servers key's schema comes from the frameworks registry: every
// adapter and preset name, one options schema per adapter (its options'
// types, enums, bounds and defaults), and defaults.options as any option
// of any framework.

// servers refines servers[] and defaults.options with the frameworks
// registry: names, and each framework's options with their types, enums
// and bounds.
func (g *gen) servers(props map[string]any) error {
	names := frameworks.Names()
	enum := make([]any, len(names))
	for i, n := range names {
		enum[i] = n
	}
	servers := props["servers"].(map[string]any)
	item := servers["items"].(map[string]any)
	sp := item["properties"].(map[string]any)
	retype(sp["framework"].(map[string]any), map[string]any{"enum": enum})
	retype(sp["name"].(map[string]any), map[string]any{"type": "string", "pattern": `^[A-Za-z0-9_][A-Za-z0-9_.-]*$`, "patternErrorMessage": "use letters, digits, _, - and ."})
	sp["name"].(map[string]any)["examples"] = enum
	retype(sp["path"].(map[string]any), map[string]any{"type": "string", "pattern": "^/", "patternErrorMessage": "want a path starting with /"})
	item["type"] = "object"
	union := g.adapterOptions()
	item["allOf"] = optionsByName()

	// defaults.options apply to every server: any option of any framework
	// (the loader checks each against each server's framework).
	du := map[string]any{}
	for name, ss := range union {
		if len(ss) == 1 {
			du[name] = ss[0]
		} else {
			du[name] = map[string]any{"anyOf": ss}
		}
	}
	defaults := props["defaults"].(map[string]any)["properties"].(map[string]any)
	defaults["options"] = merge(defaults["options"].(map[string]any), map[string]any{
		"properties":           du,
		"additionalProperties": false,
	})
	return nil
}

// adapterOptions defines one options schema per adapter (options.NAME;
// the common options once, as option.NAME) and returns every option
// name's distinct schemas over the adapters.
func (g *gen) adapterOptions() map[string][]any {
	g.defs["boolString"] = map[string]any{
		"description": "a bool as strconv.ParseBool reads it",
		"enum":        []any{"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"},
	}
	union := map[string][]any{}
	common := map[string]bool{}
	for _, o := range frameworks.Common {
		common[o.Name] = true
		g.defs["option."+o.Name] = optionSchema(o)
	}
	for _, a := range frameworks.Adapters() {
		opts := map[string]any{}
		for _, o := range a.AllOptions() {
			s := optionSchema(o)
			if common[o.Name] {
				s = map[string]any{"$ref": "#/$defs/option." + o.Name}
			}
			opts[o.Name] = s
			union[o.Name] = appendDistinct(union[o.Name], s)
		}
		g.defs["options."+a.Name] = map[string]any{
			"type":                 []any{"object", "null"},
			"description":          fmt.Sprintf("options of framework %s (%s)", a.Name, a.Library),
			"properties":           opts,
			"additionalProperties": false,
		}
	}
	return union
}

// optionsByName maps each server name (adapter or preset), given as
// framework: or else as name:, to its adapter's options schema.
func optionsByName() []any {
	adapterOf := map[string]string{}
	for _, a := range frameworks.Adapters() {
		adapterOf[a.Name] = a.Name
	}
	for _, p := range frameworks.Presets() {
		adapterOf[p.Name] = p.Framework
	}
	keys := make([]string, 0, len(adapterOf))
	for k := range adapterOf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var allOf []any
	for _, n := range keys {
		then := map[string]any{"properties": map[string]any{"options": map[string]any{"$ref": "#/$defs/options." + adapterOf[n]}}}
		allOf = append(allOf,
			map[string]any{
				"if":   map[string]any{"required": []any{"framework"}, "properties": map[string]any{"framework": map[string]any{"const": n}}},
				"then": then,
			},
			map[string]any{
				"if": map[string]any{
					"not":        map[string]any{"required": []any{"framework"}},
					"required":   []any{"name"},
					"properties": map[string]any{"name": map[string]any{"const": n}},
				},
				"then": then,
			})
	}
	return allOf
}

// optionSchema is a framework option's schema. Options are strings to the
// loader, so 80 and "80", true and "true" are the same.
func optionSchema(o frameworks.Option) map[string]any {
	var s map[string]any
	switch o.Type {
	case frameworks.TypeBool:
		s = withRef(map[string]any{"type": "boolean"}, map[string]any{"$ref": "#/$defs/boolString"})
		if b, err := strconv.ParseBool(o.Default); err == nil {
			s["default"] = b
		}
	case frameworks.TypeInt:
		n := map[string]any{"type": "integer", "minimum": o.Min}
		if o.Max > 0 {
			n["maximum"] = o.Max
		}
		s = withRef(n, map[string]any{"type": "string", "pattern": IntPattern})
		if v, err := strconv.Atoi(o.Default); err == nil {
			s["default"] = v
		}
	case frameworks.TypeEnum:
		e := make([]any, len(o.Enum))
		for i, v := range o.Enum {
			e[i] = v
		}
		s = withRef(map[string]any{"enum": e})
		s["default"] = o.Default
	default:
		s = map[string]any{"type": []any{"string", "number", "boolean"}, "default": o.Default}
	}
	doc := o.Doc
	if b := o.Bounds(); b != "" {
		doc += " (" + b + ")"
	}
	s["description"] = doc
	return s
}

// appendDistinct appends s to list unless an equal schema is in it.
func appendDistinct(list []any, s map[string]any) []any {
	b, _ := json.Marshal(s) // maps of JSON values always marshal
	for _, x := range list {
		if xb, _ := json.Marshal(x); bytes.Equal(b, xb) {
			return list
		}
	}
	return append(list, s)
}
