// Package scenariotest holds what the plan-side tests of the phase kinds'
// packages share. Only _test.go files import it (internal/layering's
// TestSupport rule).
package scenariotest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/scenarios"
)

// Judged is a phase's row as the engine decides it from an outcome: the
// kind's own failure, then its faults over the allowances (nil = none),
// as one message, and the notes of faults within their allowance.
func Judged(kind string, ph scenarios.Phase, out scenarios.Outcome, allow scenarios.Allow) (failed bool, msg string, notes []string) {
	v := scenarios.Judge(scenarios.PhaseFaults(kind, ph), allow, out.Metrics, out.Reasons, nil)
	why := v.Failures
	if out.Failed {
		why = append([]string{out.Error}, why...)
	}
	return len(why) > 0, strings.Join(why, "; "), v.Notes
}

// Near reports whether d is want as a latency histogram reads it back:
// at least want and at most 0.1% above (3 significant figures).
func Near(d, want time.Duration) bool {
	return d >= want && d <= want+want/1000
}

// metric the kind declares, each of its declared type.
func CheckDeclaredSet(t *testing.T, kind string, v metrics.Values, byRun ...string) {
	t.Helper()
	k, ok := scenarios.Lookup(kind)
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
		for _, d := range scenarios.CPUPer1MDefs("", "") {
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
