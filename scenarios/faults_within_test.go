package scenarios

import (
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/metrics"
)

// TestJudgeWithin: a part (login_errors within errors) is judged by its
// whole unless the plan allows it or an assertion reads it; then its
// units leave the whole's count.
func TestJudgeWithin(t *testing.T) {
	faults := []Fault{
		{Metric: "errors", Of: "answers", What: "error answers"},
		{Metric: "login_errors", What: "error answers to login", Within: "errors"},
		{Metric: "pub_errors", What: "error answers to pub", Within: "errors"},
	}
	m := metrics.Values{"answers": int64(100), "errors": int64(7), "login_errors": int64(3), "pub_errors": int64(4)}
	reasons := map[string]string{"errors": "mqtt 0x87 not authorized ×7"}
	for _, tc := range []struct {
		name     string
		allow    Allow
		gated    string
		failures []string // substrings, in order; none = passes
		notes    int
	}{
		{"nothing allowed: the whole fails once", nil, "", []string{"7 of 100 error answers: mqtt 0x87 not authorized ×7"}, 0},
		{"the whole allowed covers its parts", Allow{"errors": {N: 7}}, "", nil, 1},
		{"the whole allowed, too few", Allow{"errors": {N: 6}}, "", []string{"7 of 100 error answers"}, 0},
		{"the whole allowed by percent", Allow{"errors": {Percent: 10}}, "", nil, 1},
		{"a part allowed leaves the rest to the whole", Allow{"login_errors": {N: 3}}, "", []string{"4 of 100 error answers", "(login_errors judged apart)"}, 1},
		{"a part over its allowance", Allow{"login_errors": {N: 2}, "pub_errors": {N: 4}}, "", []string{"3 error answers to login (allowed: up to 2)"}, 1},
		{"every part allowed", Allow{"login_errors": {N: 3}, "pub_errors": {N: 4}}, "", nil, 2},
		{"an assertion on a part", Allow{"pub_errors": {N: 4}}, "login_errors", nil, 2},
		{"an assertion on the whole", nil, "errors", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gated func(string) bool
			if tc.gated != "" {
				gated = func(metric string) bool { return metric == tc.gated }
			}
			v := Judge(faults, tc.allow, m, reasons, gated)
			if len(v.Failures) != min(len(tc.failures), 1) || len(v.Notes) != tc.notes {
				t.Fatalf("failures %q notes %q, want %d failure(s) and %d note(s)", v.Failures, v.Notes, min(len(tc.failures), 1), tc.notes)
			}
			for _, want := range tc.failures {
				if !strings.Contains(v.Failures[0], want) {
					t.Errorf("failure %q, want it to say %q", v.Failures[0], want)
				}
			}
		})
	}
}
