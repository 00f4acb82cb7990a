package rate

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/payload"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// TestTagDefaultsMatchClient: a default is declared once, in a tag of
// rate's keys; where the core keeps the same default as a constant (the
// paced kinds' slack, batch and late_after, which code with no key of its
// own reads) or a doc tag states one, the two agree.
func TestTagDefaultsMatchClient(t *testing.T) {
	for _, c := range []struct {
		key  string
		want any // the constant, in the field's type
	}{
		{"slack", units.Duration(client.DefaultSlack)},
		{"batch", units.Size(client.DefaultPacedBatch)},
		{"late_after", units.Duration(client.DefaultLateAfter)},
		{"reads", client.ReadsBatched},
		{"payload_kind", payload.Random},
	} {
		got, ok := decl.Default(&Phase{}, c.key)
		if !ok {
			t.Errorf("%s: no default tag", c.key)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: tag default %v (%T), the constant is %v (%T)", c.key, got, got, c.want, c.want)
		}
	}
	want := fmt.Sprintf("in [%d, %d]", MinDefaultInflight, MaxDefaultInflight)
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
