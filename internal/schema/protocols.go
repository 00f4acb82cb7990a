package schema

import (
	"github.com/wsplan/wsplan/internal/proto"
)

// protocols defines #/$defs/protocol (plan.Protocol refers to it): a
// registered protocol's name, or a mapping of name and that protocol's
// settings, each generated from the protocol's settings struct, as the
// loader decodes it (internal/proto's registry).
func (g *gen) protocols() error {
	names := []any{}
	branches := []any{map[string]any{"enum": names}}
	for _, d := range proto.Defs() {
		names = append(names, d.Name)
		obj, err := g.object(d.Settings, "protocol."+d.Name)
		if err != nil {
			return err
		}
		props := obj["properties"].(map[string]any)
		props["name"] = map[string]any{"const": d.Name}
		branches = append(branches, map[string]any{
			"description":          d.Doc,
			"type":                 "object",
			"required":             []any{"name"},
			"properties":           props,
			"additionalProperties": false,
		})
	}
	branches[0] = map[string]any{"enum": names}
	g.defs["protocol"] = map[string]any{
		"description": "what the server speaks over its WebSocket messages: a protocol's name, or a mapping of name and its settings; left out = raw messages",
		"anyOf":       branches,
	}
	return nil
}
