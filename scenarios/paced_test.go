package scenarios

import (
	"fmt"
	"testing"

	"github.com/wsplan/wsplan/internal/metrics"
)

// checkDeclaredSet checks that v, a kind's own metrics (before the engine
// adds its efficiency figures: the EER and CPUPer1MDefs), sets every
// metric the kind declares, each of its declared type.
func checkDeclaredSet(t *testing.T, kind string, v metrics.Values, byRun ...string) {
	t.Helper()
	k, ok := Lookup(kind)
	if !ok {
		t.Fatalf("no kind %s", kind)
	}
	engine := map[string]bool{}
	for _, n := range byRun { // set by Run where known (memory, a protocol's figures)
		engine[n] = true
	}
	for _, d := range metrics.BehindDefs { // the engine's, from its samples
		engine[d.Name] = true
	}
	if k.Efficiency != nil {
		engine[k.Efficiency.EER] = true
		for _, d := range CPUPer1MDefs("", "") {
			engine[d.Name] = true
		}
	}
	for _, d := range k.Metrics {
		x, ok := v[d.Name]
		if !ok && !engine[d.Name] {
			t.Errorf("%s: metric %s declared but not set", kind, d.Name)
		}
		if ok && fmt.Sprintf("%T", x) != fmt.Sprintf("%T", d.Kind.Zero()) {
			t.Errorf("%s: metric %s is a %T, its kind wants %T", kind, d.Name, x, d.Kind.Zero())
		}
	}
}
