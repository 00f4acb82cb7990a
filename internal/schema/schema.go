// Package schema generates the JSON Schema (draft 2020-12) of a plan file
// from the declarations the loader itself uses, so editors running
// yaml-language-server complete and check plans as users type.
//
// Data flow: `wsplan schema` calls Generate and prints the result; the
// repository keeps a copy in wsplan.schema.json, which every plan in plans/
// names on its first line. Four registries feed it:
//
//   - the plan's sections and keys: the tags of plan.Syntax() (yaml, doc,
//     default, min, max, required);
//   - each phase kind's parameters: the same tags on the struct that
//     scenarios.Kind.New returns;
//   - each framework's options, with their types, enums and bounds: the
//     frameworks registry (servers[].options per framework or preset, by
//     if/then on framework:, or on name: when framework: is absent);
//   - each protocol's settings: the tags of the struct it registers with
//     internal/proto (protocol: {name: …, …}, an if/then per name).
//
// Values: units.Duration is a Go duration string ("10s"); units.Size an
// integer or a string with a unit ("1KiB"); units.Rate a number or "200/s".
// Since `${name}` references are substituted before decoding, any scalar
// may also be a string containing one. Bounds of integers, sizes and rates
// are minimum/maximum of their numeric form; bounds of durations, which the
// schema cannot compare, are stated in the description. Mappings that the
// loader decodes strictly have additionalProperties: false. Patterns carry
// patternErrorMessage, which yaml-language-server shows instead of the
// regular expression (validators ignore it, as any unknown keyword).
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// ID is the schema's $id.
const ID = "https://github.com/wsplan/wsplan/wsplan.schema.json"

// The value syntaxes, as ECMA-262/RE2 patterns.
const (
	// RefPattern matches a string holding a ${name} or ${env:NAME} reference.
	RefPattern = `\$\{(env:)?[A-Za-z_][A-Za-z0-9_]*\}`
	// DurationPattern is what time.ParseDuration takes (surrounding white
	// space trimmed).
	DurationPattern = `^\s*[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)\s*$`
	// SizePattern is what units.ParseSize takes: a number and an optional
	// unit B, K/M/G, KB/MB/GB, KiB/MiB/GiB, any case.
	SizePattern = `^\s*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?\s*([kKmMgG]([iI][bB]|[bB])?|[bB])?\s*$`
	// RatePattern is what units.Rate takes in a string: a number and an
	// optional "/s".
	RatePattern = `^\s*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?(/s)?\s*$`
	// IntPattern is an integer written as a string (framework options are
	// strings to the loader: 80 and "80" are the same).
	IntPattern = `^\s*[-+]?[0-9]+\s*$`
)

// Described is a type that states its own schema: the plan's custom YAML
// types (client.shards, command:, assert server:) implement it.
type Described interface {
	JSONSchema() map[string]any
}

var (
	durationType  = reflect.TypeFor[units.Duration]()
	sizeType      = reflect.TypeFor[units.Size]()
	rateType      = reflect.TypeFor[units.Rate]()
	nodeType      = reflect.TypeFor[yaml.Node]()
	describedType = reflect.TypeFor[Described]()
	shorthandType = reflect.TypeFor[decl.Shorthand]()
	enumType      = reflect.TypeFor[decl.Enum]()
)

// Generate returns the plan's JSON Schema, indented, with a final newline.
// It fails only on a malformed declaration (a default or bound that does
// not parse as its field's type).
func Generate() ([]byte, error) {
	g := &gen{defs: map[string]any{}}
	root, err := g.object(reflect.TypeOf(plan.Syntax()), "plan")
	if err != nil {
		return nil, err
	}
	props := root["properties"].(map[string]any)
	props["vars"] = merge(props["vars"].(map[string]any), map[string]any{
		"type":          []any{"object", "null"},
		"propertyNames": map[string]any{"pattern": `^[A-Za-z_][A-Za-z0-9_]*$`},
		"additionalProperties": map[string]any{
			"type": []any{"string", "number", "boolean"},
		},
	})
	phases, err := g.phases()
	if err != nil {
		return nil, err
	}
	props["phases"] = merge(props["phases"].(map[string]any), map[string]any{"items": phases})
	if err := g.servers(props); err != nil {
		return nil, err
	}
	g.defs["ref"] = map[string]any{
		"description":         "a string with a ${name} reference to a variable of vars: (or ${env:NAME}, an environment variable), substituted before the plan is decoded",
		"type":                "string",
		"pattern":             RefPattern,
		"patternErrorMessage": "want a ${name} or ${env:NAME} reference",
	}
	g.defs["duration"] = map[string]any{
		"description": "a Go duration: 500ms, 10s, 1m30s",
		"anyOf": []any{
			map[string]any{"type": "string", "pattern": DurationPattern, "patternErrorMessage": "want a duration such as 500ms, 10s, 1m30s"},
			map[string]any{"const": 0},
		},
	}
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = ID
	root["title"] = "wsplan plan"
	root["description"] = "A wsplan benchmark plan: servers, phases and assertions. Generated by `wsplan schema`; the loader's own checks (wsplan validate) are the reference."
	root["type"] = "object"
	root["$defs"] = g.defs
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type gen struct {
	defs map[string]any
	// open holds the struct types being generated, to tell a recursive
	// type (a script's loop holds steps): its inner uses become $refs,
	// and its schema a definition of its own (recursive).
	open, recursive map[reflect.Type]bool
}

// defName is the $defs name of a recursive type: script.Step.
func defName(t reflect.Type) string {
	return path.Base(t.PkgPath()) + "." + t.Name()
}

// structValue is the schema of a struct type; a recursive one is a
// definition of its own, referred to.
func (g *gen) structValue(t reflect.Type, where string) (map[string]any, error) {
	if g.open == nil {
		g.open, g.recursive = map[reflect.Type]bool{}, map[reflect.Type]bool{}
	}
	ref := map[string]any{"$ref": "#/$defs/" + defName(t)}
	if g.open[t] {
		g.recursive[t] = true
		return ref, nil
	}
	g.open[t] = true
	s, err := g.object(t, where)
	delete(g.open, t)
	if err != nil || !g.recursive[t] {
		return s, err
	}
	g.defs[defName(t)] = s
	return ref, nil
}

// tags are a field's declaration. hint is the reason for a minimum
// (scenarios adds it to the error of a value below min).
type tags struct {
	key, doc, def, min, max, hint string
	required                      bool
}

func fieldTags(f reflect.StructField) tags {
	key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return tags{
		key:      key,
		doc:      f.Tag.Get("doc"),
		def:      f.Tag.Get("default"),
		min:      f.Tag.Get("min"),
		max:      f.Tag.Get("max"),
		hint:     f.Tag.Get("hint"),
		required: f.Tag.Get("required") == "true",
	}
}

// object is the schema of a struct decoded strictly: its yaml-tagged
// fields (inline structs flattened, an empty name meaning the lower-case
// field name, as the loader reads them), additionalProperties false. A
// mapping may be empty (null).
func (g *gen) object(t reflect.Type, where string) (map[string]any, error) {
	props := map[string]any{}
	var required []any
	var walk func(t reflect.Type) error
	walk = func(t reflect.Type) error {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("yaml") == "-" {
				continue
			}
			_, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if strings.Contains(","+opts+",", ",inline,") && f.Type.Kind() == reflect.Struct {
				if err := walk(f.Type); err != nil {
					return err
				}
				continue
			}
			tg := fieldTags(f)
			if tg.key == "" {
				tg.key = strings.ToLower(f.Name)
			}
			s, err := g.field(f.Type, tg, where+"."+tg.key)
			if err != nil {
				return err
			}
			props[tg.key] = s
			if tg.required {
				required = append(required, tg.key)
			}
		}
		return nil
	}
	if err := walk(t); err != nil {
		return nil, err
	}
	out := map[string]any{
		"type":                 []any{"object", "null"},
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		out["required"] = required
	}
	return out, nil
}

// field is the schema of one field with its tags applied.
func (g *gen) field(t reflect.Type, tg tags, where string) (map[string]any, error) {
	s, err := g.value(t, where)
	if err != nil {
		return nil, err
	}
	doc := tg.doc
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if tg.min != "" || tg.max != "" {
		if err := g.bounds(s, base, tg, where); err != nil {
			return nil, err
		}
		doc = strings.TrimSpace(doc + " (" + boundsText(tg) + ")")
	}
	if tg.def != "" {
		v, err := decl.Parse(base, tg.def)
		if err != nil {
			return nil, fmt.Errorf("%s: default %q: %w", where, tg.def, err)
		}
		s["default"] = jsonDefault(base, tg.def, v)
		doc = strings.TrimSpace(doc + "; default " + tg.def)
	}
	if doc != "" {
		s["description"] = doc
	}
	return s, nil
}

// value is the schema of a type, without a field's tags.
func (g *gen) value(t reflect.Type, where string) (map[string]any, error) {
	if t == protocolType {
		s, err := g.protocol()
		if err != nil {
			return nil, err
		}
		return withRef(s), nil
	}
	if t.Implements(describedType) {
		return withRef(reflect.New(t).Elem().Interface().(Described).JSONSchema()), nil
	}
	if reflect.PointerTo(t).Implements(describedType) {
		return withRef(reflect.New(t).Interface().(Described).JSONSchema()), nil
	}
	if reflect.PointerTo(t).Implements(shorthandType) {
		return g.shorthand(t, where)
	}
	if t.Implements(enumType) {
		var names []any
		for _, n := range reflect.New(t).Elem().Interface().(decl.Enum).Values() {
			names = append(names, n)
		}
		return withRef(map[string]any{"enum": names}), nil
	}
	switch t {
	case durationType:
		return withRef(map[string]any{"$ref": "#/$defs/duration"}), nil
	case sizeType:
		return withRef(map[string]any{"type": "integer"}, map[string]any{"type": "string", "pattern": SizePattern, "patternErrorMessage": "want a size such as 1024, 1KiB, 4MB"}), nil
	case rateType:
		return withRef(map[string]any{"type": "number"}, map[string]any{"type": "string", "pattern": RatePattern, "patternErrorMessage": "want messages per second, e.g. 200 or 0.5"}), nil
	case nodeType:
		return map[string]any{}, nil // vars: and phases: items, filled in by Generate
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.value(t.Elem(), where)
	case reflect.Bool:
		return withRef(map[string]any{"type": "boolean"}), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return withRef(map[string]any{"type": "integer"}), nil
	case reflect.Float32, reflect.Float64:
		return withRef(map[string]any{"type": "number"}), nil
	case reflect.String:
		// yaml.v3 decodes any scalar into a string: 0 and "0" are the same.
		return map[string]any{"type": []any{"string", "number", "boolean"}}, nil
	case reflect.Slice:
		items, err := g.value(t.Elem(), where+"[]")
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		elem, err := g.value(t.Elem(), where+"{}")
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": []any{"object", "null"}, "additionalProperties": elem}, nil
	case reflect.Struct:
		return g.structValue(t, where)
	}
	return nil, fmt.Errorf("%s: no schema for Go type %s", where, t)
}

// shorthand is the schema of a struct with a short form (decl.Shorthand):
// the form's value, or the struct's mapping. A switch whose zero value is
// true only turns on (close: true): its form is that constant.
func (g *gen) shorthand(t reflect.Type, where string) (map[string]any, error) {
	v, _ := reflect.New(t).Interface().(decl.Shorthand).Shorten()
	short := map[string]any{"const": true}
	if on, isBool := v.(bool); !isBool || !on {
		var err error
		if short, err = g.value(reflect.TypeOf(v), where); err != nil {
			return nil, err
		}
	}
	obj, err := g.structValue(t, where)
	if err != nil {
		return nil, err
	}
	if branches, ok := short["anyOf"].([]any); ok && len(short) == 1 {
		// withRef adds the reference once, after the mapping.
		short = map[string]any{"anyOf": slices.DeleteFunc(slices.Clone(branches), func(b any) bool {
			return reflect.DeepEqual(b, map[string]any{"$ref": "#/$defs/ref"})
		})}
	}
	return withRef(short, obj), nil
}

// bounds puts min and max on the numeric branch of s (the first anyOf
// branch typed integer or number; s itself for arrays, as item counts).
func (g *gen) bounds(s map[string]any, t reflect.Type, tg tags, where string) error {
	for _, b := range []struct{ text, kw, arrKw string }{{tg.min, "minimum", "minItems"}, {tg.max, "maximum", "maxItems"}} {
		if b.text == "" {
			continue
		}
		if t.Kind() == reflect.Slice {
			n, err := strconv.Atoi(b.text)
			if err != nil {
				return fmt.Errorf("%s: bound %q of a list: want a count", where, b.text)
			}
			s[b.arrKw] = n
			continue
		}
		v, err := decl.Parse(t, b.text)
		if err != nil {
			return fmt.Errorf("%s: bound %q: %w", where, b.text, err)
		}
		if t == durationType {
			continue // a string: stated in the description
		}
		num, ok := numeric(v)
		if !ok {
			return fmt.Errorf("%s: bound %q on a %s, which has no order", where, b.text, t)
		}
		for _, br := range s["anyOf"].([]any) {
			m := br.(map[string]any)
			if m["type"] == "integer" || m["type"] == "number" {
				m[b.kw] = num
			}
		}
	}
	return nil
}

func boundsText(tg tags) string {
	hint := ""
	if tg.hint != "" && tg.min != "" {
		hint = ": " + tg.hint
	}
	switch {
	case tg.min != "" && tg.max != "":
		return tg.min + ".." + tg.max + hint
	case tg.min != "":
		return ">= " + tg.min + hint
	}
	return "<= " + tg.max
}

// numeric returns a number for integer, size and rate values.
func numeric(v reflect.Value) (any, bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint(), true
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	}
	return nil, false
}

// jsonDefault is a default as JSON: numbers and bools as such, anything
// with a unit ("5s", "1KiB") as written.
func jsonDefault(t reflect.Type, text string, v reflect.Value) any {
	if t == durationType || t == sizeType {
		var n int64
		if t == sizeType && yaml.Unmarshal([]byte(text), &n) == nil {
			return n
		}
		return text
	}
	if n, ok := numeric(v); ok {
		return n
	}
	if v.Kind() == reflect.Bool {
		return v.Bool()
	}
	return text
}

// withRef lets a typed scalar also be a ${name} reference.
func withRef(branches ...map[string]any) map[string]any {
	out := make([]any, 0, len(branches)+1)
	for _, b := range branches {
		if inner, ok := b["anyOf"].([]any); ok && len(b) == 1 {
			out = append(out, inner...)
			continue
		}
		out = append(out, b)
	}
	return map[string]any{"anyOf": append(out, map[string]any{"$ref": "#/$defs/ref"})}
}

// retype replaces the type of a field's schema (keeping its description
// and default) by the branches, or a ${name} reference.
func retype(s map[string]any, branches ...map[string]any) {
	delete(s, "type")
	s["anyOf"] = withRef(branches...)["anyOf"]
}

func merge(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// phaseKeys adds the keys every phase body has (plan.PhaseKeys) to a
// kind's properties, each described by its declaration's doc.
func (g *gen) phaseKeys(props map[string]any, k scenarios.Kind) error {
	for _, f := range decl.Fields(reflect.ValueOf(&plan.PhaseKeys{})) {
		var s map[string]any
		switch f.Key {
		case "name": // a number is a name too (name: 2)
			s = map[string]any{"type": []any{"string", "number"}}
		case "allow": // the kind's own faults
			s = allowSchema(k.Faults)
		default:
			var err error
			if s, err = g.value(f.Struct.Type, "phases[]."+k.Name+"."+f.Key); err != nil {
				return err
			}
		}
		s["description"] = f.Struct.Tag.Get("doc")
		props[f.Key] = s
	}
	return nil
}

// phases is the schema of one item of phases:: one key, a kind, whose body
// is that kind's parameters plus name:.
func (g *gen) phases() (map[string]any, error) {
	var oneOf []any
	for _, k := range scenarios.Kinds() {
		t := reflect.TypeOf(k.New())
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil, fmt.Errorf("phase kind %s: New returns a %s, want a pointer to a struct", k.Name, t)
		}
		body, err := g.object(t, "phases[]."+k.Name)
		if err != nil {
			return nil, err
		}
		if err := g.phaseKeys(body["properties"].(map[string]any), k); err != nil {
			return nil, err
		}
		body["description"] = k.Doc
		def := "phase." + k.Name
		g.defs[def] = body
		oneOf = append(oneOf, map[string]any{
			"type":                 "object",
			"description":          k.Doc,
			"properties":           map[string]any{k.Name: map[string]any{"$ref": "#/$defs/" + def}},
			"required":             []any{k.Name},
			"additionalProperties": false,
		})
	}
	kinds := make([]any, 0, len(oneOf))
	for _, n := range scenarios.Names() {
		kinds = append(kinds, n)
	}
	return map[string]any{
		"type":          "object",
		"description":   "one key, the phase kind, whose value holds the phase's settings",
		"propertyNames": map[string]any{"enum": kinds},
		"minProperties": 1,
		"maxProperties": 1,
		"oneOf":         oneOf,
	}, nil
}

// allowSchema is a phase's `allow:`: each of its kind's faults (a phase
// may add its own: a script's exchanges) with a count or a percentage.
func allowSchema(faults []scenarios.Fault) map[string]any {
	value := map[string]any{"oneOf": []any{
		map[string]any{"type": "integer", "minimum": 0},
		map[string]any{"type": "string", "pattern": `^[0-9]+(\.[0-9]+)?%$`},
	}}
	props := map[string]any{}
	for _, f := range faults {
		v := map[string]any{"description": "how many " + f.What + " the phase may count and pass: a count, or a percentage"}
		for k, x := range value {
			v[k] = x
		}
		props[f.Metric] = v
	}
	return map[string]any{
		"type":                 "object",
		"description":          "faults the phase may count and still pass (the verdict rule): {failed: 10, lost: 0.1%}",
		"properties":           props,
		"additionalProperties": value,
	}
}
