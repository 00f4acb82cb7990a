package reference

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/schema"
)

// A small schema in the shape internal/schema writes: a section with a
// duration, a size, a bounded integer with a doc-stated default, a
// required key, a recursive definition and a phase kind.
func testSchema(t *testing.T) []byte {
	t.Helper()
	ref := map[string]any{"$ref": "#/$defs/ref"}
	s := map[string]any{
		"required": []any{"phases"},
		"properties": map[string]any{
			"phases": map[string]any{"description": "what to run", "type": "array", "items": map[string]any{}},
			"client": map[string]any{
				"type":     []any{"object", "null"},
				"required": []any{"loops"},
				"properties": map[string]any{
					"timeout": map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/duration"}, ref}, "default": "5s", "description": "per attempt (1ns..120s); default 5s"},
					"buffer":  map[string]any{"anyOf": []any{map[string]any{"type": "integer", "minimum": 0}, map[string]any{"type": "string", "pattern": schema.SizePattern}, ref}, "description": "bytes; default: the payload's (>= 0)"},
					"loops":   map[string]any{"anyOf": []any{map[string]any{"type": "integer", "minimum": 1, "maximum": 64}, ref}, "description": "event loops"},
					"steps":   map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/step"}},
				},
			},
		},
		"$defs": map[string]any{
			"ref":      map[string]any{"type": "string"},
			"duration": map[string]any{"anyOf": []any{map[string]any{"type": "string", "pattern": schema.DurationPattern}, map[string]any{"const": 0}}},
			"step": map[string]any{"type": []any{"object", "null"}, "properties": map[string]any{
				"send": map[string]any{"type": []any{"string", "number", "boolean"}, "description": "a template"},
				"loop": map[string]any{"type": []any{"object", "null"}, "properties": map[string]any{
					"steps": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/step"}},
				}},
			}},
			"phase.wait": map[string]any{"properties": map[string]any{
				"for": map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/duration"}, ref}, "description": "how long"},
			}, "required": []any{"for"}},
		},
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTablesOf(t *testing.T) {
	tables, err := TablesOf(testSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, rows := range map[string][]string{
		RegionKeys: {
			"| `client` | mapping |  |  |  |",
			"| `phases` | list | required |  | what to run |",
		},
		RegionSection + "client": {
			"| `client.timeout` | duration | 5s | 1ns..120s | per attempt |",
			"| `client.buffer` | size | the payload's | >= 0 | bytes |",
			"| `client.loops` | integer | required | 1..64 | event loops |",
			"| `client.steps[].send` | string |  |  | a template |",
			"| `client.steps[].loop.steps` | list of mappings |  |  |  |",
		},
		RegionKind + "wait": {"| `for` | duration | required |  | how long |"},
	} {
		got, ok := tables[name]
		if !ok {
			t.Errorf("no table %q; have %v", name, keys(tables))
			continue
		}
		for _, row := range rows {
			if !strings.Contains(got, row+"\n") {
				t.Errorf("table %q has no row\n\t%s\ngot:\n%s", name, row, got)
			}
		}
	}
	if _, ok := tables[RegionSection+"phases"]; ok {
		t.Error("phases has a section table: its items are the kinds' tables")
	}
	if strings.Count(tables[RegionSection+"client"], "steps[].loop.steps[]") != 0 {
		t.Error("a recursive definition was walked again")
	}
}

func TestTablesOfSad(t *testing.T) {
	if _, err := TablesOf([]byte("{not json")); err == nil {
		t.Error("TablesOf(broken JSON) = nil error")
	}
}

// The schema wsplan generates renders, with a table per kind.
func TestTablesFromGenerate(t *testing.T) {
	tables, err := Tables()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{RegionKeys, RegionSection + "servers", RegionKind + "echo", RegionOptions} {
		if !strings.HasPrefix(tables[name], "| key | type | default | bounds | doc |\n") {
			t.Errorf("table %q missing or malformed:\n%s", name, tables[name])
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
