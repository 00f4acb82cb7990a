package search

import (
	"reflect"
	"testing"

	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/rate"
)

// TestStepKeysAsRate: a search's steps take rate's sending keys
// (rate.Send), declared once: every one of them has the default, bounds
// and doc in a search that it has in a rate phase (rate's own tests tie
// those to the core's constants).
func TestStepKeysAsRate(t *testing.T) {
	keys := decl.Fields(reflect.ValueOf(&rate.Send{}))
	if len(keys) == 0 {
		t.Fatal("rate.Send declares no keys")
	}
	ours := map[string]reflect.StructTag{}
	for _, f := range decl.Fields(reflect.ValueOf(&Phase{})) {
		ours[f.Key] = f.Struct.Tag
	}
	for _, f := range keys {
		tag, ok := ours[f.Key]
		if !ok {
			t.Errorf("%s: rate's key is not a search key", f.Key)
			continue
		}
		if tag != f.Struct.Tag {
			t.Errorf("%s: search declares %q, rate %q", f.Key, tag, f.Struct.Tag)
		}
		want, _ := decl.Default(&rate.Phase{}, f.Key)
		if got, _ := decl.Default(&Phase{}, f.Key); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: default %v in a search, %v in a rate phase", f.Key, got, want)
		}
	}
}

// TestMessageAsRate: a search's steps send the message a rate phase with
// the same keys sends, before Defaults ran and after.
func TestMessageAsRate(t *testing.T) {
	s, r := &Phase{}, &rate.Phase{}
	for _, when := range []string{"before Defaults", "after"} {
		sn, sf := s.Message()
		rn, rf := r.Message()
		if sn != rn || sf != rf || sn <= 0 {
			t.Errorf("%s: a search's message %d bytes (file %v), a rate phase's %d (%v)", when, sn, sf, rn, rf)
		}
		scenarios.Defaults(s, scenarios.Context{Conns: 1})
		scenarios.Defaults(r, scenarios.Context{Conns: 1})
	}
}
