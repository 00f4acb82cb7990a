package schema

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/proto"
)

// protocolType is `protocol:`'s type: its schema comes from the protocols
// registry (internal/proto), not from the struct.
var protocolType = reflect.TypeFor[plan.Protocol]()

// protocol is the schema of `protocol:`: a registered protocol's name, or
// a mapping of name and that protocol's settings, generated from the
// struct each protocol registers (its decl tags), as the loader decodes
// them. The mapping's properties are every protocol's keys, each
// described by the protocols that read it ("mqtt: …; stomp: …"); an
// if/then per protocol holds that protocol's own schema of its keys and
// rejects the keys of the others.
func (g *gen) protocol() (map[string]any, error) {
	var names, conds []any
	docs := map[string][]string{}
	shared, owned := map[string]map[string]any{}, map[string]map[string]any{}
	for _, d := range proto.Defs() {
		names = append(names, d.Name)
		obj, err := g.object(d.Settings, "protocol."+d.Name)
		if err != nil {
			return nil, err
		}
		props := obj["properties"].(map[string]any)
		allowed := []any{"name"}
		for _, k := range slices.Sorted(maps.Keys(props)) {
			allowed = append(allowed, k)
			p := props[k].(map[string]any)
			if desc, _ := p["description"].(string); desc != "" {
				docs[k] = append(docs[k], d.Name+": "+desc)
			}
			if shared[k] == nil {
				shared[k], owned[k] = maps.Clone(p), p
				delete(shared[k], "default")
			}
		}
		conds = append(conds, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"name": map[string]any{"const": d.Name}}, "required": []any{"name"}},
			"then": map[string]any{"properties": props, "propertyNames": map[string]any{"enum": allowed}},
		})
	}
	props := map[string]any{"name": map[string]any{"enum": names, "description": "the protocol"}}
	for k, s := range shared {
		if len(docs[k]) == 1 { // one protocol's: its schema as it is
			s["default"] = owned[k]["default"]
			if s["default"] == nil {
				delete(s, "default")
			}
			s["description"] = docs[k][0]
		} else { // several protocols': each its bounds and default in brackets
			for i, d := range docs[k] {
				if head, def, ok := strings.Cut(d, "; default "); ok {
					docs[k][i] = head + " [default " + def + "]"
				}
			}
			s["description"] = strings.Join(docs[k], "; ")
		}
		props[k] = s
	}
	return map[string]any{"anyOf": []any{
		map[string]any{"enum": names},
		map[string]any{"type": "object", "additionalProperties": false, "required": []any{"name"}, "properties": props, "allOf": conds},
	}}, nil
}
