package plan

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Keys whose written form is not a plain YAML value of the field's Go
// type: each decodes itself (UnmarshalYAML, a leaf to the loader) and
// states its own JSON Schema for package schema.

// ShardCount is `client.shards`: a number of client processes, or "auto"
// (-1: the engine decides).
type ShardCount int

// JSONSchema describes the values UnmarshalYAML takes, for package schema.
func (ShardCount) JSONSchema() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "integer", "minimum": 0},
		map[string]any{"const": "auto"},
	}}
}

// MarshalYAML writes auto as a plan does.
func (s ShardCount) MarshalYAML() (any, error) {
	if s < 0 {
		return "auto", nil
	}
	return int(s), nil
}

// UnmarshalYAML takes an integer or "auto".
func (s *ShardCount) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "auto" {
		*s = -1
		return nil
	}
	var v int
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil || n.ShortTag() != "!!int" || v < 0 {
		return fmt.Errorf("want an integer >= 0 or \"auto\", got %s", describe(n))
	}
	*s = ShardCount(v)
	return nil
}

// Argv is `command:`: a list of arguments, or one string split on white
// space (no shell quoting: use the list form for arguments with spaces).
type Argv []string

// JSONSchema describes the values UnmarshalYAML takes, for package schema.
func (Argv) JSONSchema() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string"},
		map[string]any{"type": "array", "items": map[string]any{"type": []any{"string", "number", "boolean"}}},
	}}
}

// UnmarshalYAML takes a command line or a list of arguments.
func (a *Argv) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*a = strings.Fields(n.Value)
		return nil
	case yaml.SequenceNode:
		out, _, ok := scalars(n)
		if !ok {
			return fmt.Errorf("want a list of arguments, got an item that is not a string")
		}
		*a = out
		return nil
	}
	return fmt.Errorf("want a command line or a list of arguments, got %s", describe(n))
}

// Names is a name or a list of names (`assert[].server`).
type Names []string

// JSONSchema describes the values UnmarshalYAML takes, for package schema.
func (Names) JSONSchema() map[string]any { return Argv(nil).JSONSchema() }

// UnmarshalYAML takes a name or a list of names.
func (s *Names) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*s = []string{n.Value}
		return nil
	case yaml.SequenceNode:
		out, bad, ok := scalars(n)
		if !ok {
			return fmt.Errorf("want a name or a list of names, got a list with %s in it", describe(bad))
		}
		*s = out
		return nil
	}
	return fmt.Errorf("want a name or a list of names, got %s", describe(n))
}

// scalars returns the values of a list of scalars; false and the first
// item that is not one (aliases followed) otherwise.
func scalars(n *yaml.Node) (values []string, bad *yaml.Node, ok bool) {
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		if c = deref(c); c == nil || c.Kind != yaml.ScalarNode {
			return nil, c, false
		}
		out = append(out, c.Value)
	}
	return out, nil, true
}
