package testenv

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that records a skip instead of ending the test.
type recorder struct {
	testing.TB
	skip string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) { r.skip = fmt.Sprintf(format, args...) }

// TestSlow: only WSPLAN_SLOW=1 lets a slow test run (and not -short); any
// other value skips it, naming what makes it slow and the variable.
func TestSlow(t *testing.T) {
	const why = "slow (70 s of churn): runs with WSPLAN_SLOW=1, as .ci/run sets"
	for _, tc := range []struct {
		env, skip string
	}{
		{"1", ""},
		{"", why},
		{"0", why},
		{"yes", why},
	} {
		t.Run(fmt.Sprintf("%s=%q", EnvSlow, tc.env), func(t *testing.T) {
			t.Setenv(EnvSlow, tc.env)
			if testing.Short() && tc.skip == "" {
				tc.skip = why // -short skips slow tests whatever the variable says
			}
			r := &recorder{TB: t}
			Slow(r, "70 s of churn")
			if r.skip != tc.skip {
				t.Errorf("skip %q, want %q", r.skip, tc.skip)
			}
			if SlowEnabled() != (tc.skip == "") {
				t.Errorf("SlowEnabled() = %v, want %v", SlowEnabled(), tc.skip == "")
			}
		})
	}
}
