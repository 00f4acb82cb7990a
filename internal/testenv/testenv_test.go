package testenv

import (
	"flag"
	"fmt"
	"os"
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

// TestMain runs this package's tests through MainWaiting, so that
// TestMainWaiting can see what it set.
func TestMain(m *testing.M) { os.Exit(MainWaiting(m, 7)) }

// TestMainWaiting: without -parallel, MainWaiting lets 7 tests run at
// once; with it, the flag's value stands.
func TestMainWaiting(t *testing.T) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	got := flag.Lookup("test.parallel").Value.String()
	if given {
		t.Skipf("-parallel %s given: MainWaiting leaves it", got)
	}
	if got != "7" {
		t.Errorf("test.parallel = %s, want 7", got)
	}
}
