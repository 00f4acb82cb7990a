// Package scenariotest holds what the plan-side tests of the phase kinds'
// packages share. Only _test.go files import it (internal/layering's
// TestSupport rule).
package scenariotest

import (
	"strings"

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
