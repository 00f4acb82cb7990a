package search

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/payload"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/rate"
)

// TestTagDefaultsMatchClient: the steps' keys (rate.Send) default in a
// search as in a rate phase, and the doc of max_inflight states the
// bounds rate applies.
func TestTagDefaultsMatchClient(t *testing.T) {
	for _, c := range []struct {
		key  string
		want any
	}{
		{"reads", client.ReadsBatched},
		{"payload_kind", payload.Random},
	} {
		got, ok := decl.Default(&Phase{}, c.key)
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: tag default %v (%T, %v), want %v (%T)", c.key, got, got, ok, c.want, c.want)
		}
	}
	want := fmt.Sprintf("in [%d, %d]", rate.MinDefaultInflight, rate.MaxDefaultInflight)
	for _, f := range decl.Fields(reflect.ValueOf(&Phase{})) {
		if d := f.Struct.Tag.Get("doc"); f.Key == "max_inflight" && !strings.Contains(d, want) {
			t.Errorf("max_inflight: doc %q does not say %q", d, want)
		}
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
