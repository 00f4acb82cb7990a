package echo

import (
	"reflect"
	"testing"

	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/payload"
	"github.com/wsplan/wsplan/scenarios"
)

// TestTagDefaultsMatchClient: echo's payload_kind defaults to the one
// internal/payload makes when none is named.
func TestTagDefaultsMatchClient(t *testing.T) {
	got, ok := decl.Default(&Phase{}, "payload_kind")
	if !ok || !reflect.DeepEqual(got, payload.Random) {
		t.Errorf("payload_kind: tag default %v (%T, %v), want %v", got, got, ok, payload.Random)
	}
}

// TestPayloadDefaults: a payload before Defaults ran is its tag default.
func TestPayloadDefaults(t *testing.T) {
	p := &Phase{}
	if n, _ := p.Message(); n != 1024 {
		t.Errorf("payload %d before Defaults, want 1024", n)
	}
	scenarios.Defaults(p, scenarios.Context{Conns: 1})
	if n, _ := p.Message(); n != 1024 {
		t.Errorf("payload %d after Defaults, want 1024", n)
	}
}
