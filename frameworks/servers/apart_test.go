package servers

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/frameworks"
)

// Some libraries keep process-wide state whose faults reach sockets that
// are not theirs. In production that cannot matter: `wsplan serve` runs
// one server per process. The tests here start every adapter in one
// process, beside raw test clients, so those adapters' tests run in a
// child process of their own (the test binary, re-run for that one
// subtest), and a stale event there reaches no other test's socket.
var apartFrameworks = map[string]string{
	// api_epoll.go: `if conn == nil { unix.Close(ev.Fd) }`. An event the
	// loop still holds for a connection closed from outside it is handled
	// after the fd number was reused, and closes whatever socket holds it
	// now: in CI, a hertz_std test client's (write: bad file descriptor),
	// long after the greatws tests had ended, since greatws's loops never
	// stop.
	"greatws": "greatws v0.2.2's event loops outlive their servers and close any fd number they hold a stale event for",
}

// apartEnv is set in the child process that runs one apart subtest.
const apartEnv = "WSPLAN_FRAMEWORKS_APART"

// apartWhy is why name's (a preset's or adapter's) tests run apart, "" when
// they run in the shared process.
func apartWhy(name string) string {
	fw := name
	if p, ok := frameworks.LookupPreset(name); ok {
		fw = p.Framework
	}
	return apartFrameworks[fw]
}

// runApart runs the calling test in a child process when name's library
// must run apart and this is the shared process, reports the child's
// verdict as the test's own (pass, skip with its reason, or fail with its
// output) and returns true: the caller returns at once. It returns false
// where the test is to run here.
func runApart(t *testing.T, name string) bool {
	t.Helper()
	if apartWhy(name) == "" || os.Getenv(apartEnv) != "" {
		return false
	}
	levels := strings.Split(t.Name(), "/")
	for i, l := range levels {
		levels[i] = "^" + regexp.QuoteMeta(l) + "$"
	}
	args := []string{"-test.run=" + strings.Join(levels, "/"), "-test.v", "-test.count=1", "-test.timeout=5m"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), apartEnv+"=1")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	verdict := apartVerdict(string(out), t.Name())
	switch {
	case err == nil && verdict == "PASS":
		t.Logf("passed in a process of its own (%s) in %v", apartWhy(name), time.Since(start).Round(time.Millisecond))
	case err == nil && verdict == "SKIP":
		t.Skipf("skipped in its own process:\n%s", out)
	default:
		t.Fatalf("in a process of its own: %s %v, %s:\n%s", os.Args[0], args, orVerdict(err, verdict), out)
	}
	return true
}

// apartVerdict is the child's "--- PASS"/"--- SKIP"/"--- FAIL" of test
// name, "" when its output has none (the test did not run).
func apartVerdict(out, name string) string {
	for _, v := range []string{"FAIL", "SKIP", "PASS"} {
		if strings.Contains(out, "--- "+v+": "+name+" (") {
			return v
		}
	}
	return ""
}

func orVerdict(err error, verdict string) string {
	switch {
	case err != nil:
		return err.Error()
	case verdict == "":
		return "the test did not run"
	}
	return verdict
}

// mustBeApart fails a test that starts a server of name in the shared
// process when name's library must run apart (the test forgot runApart).
func mustBeApart(t *testing.T, name string) {
	t.Helper()
	if why := apartWhy(name); why != "" && os.Getenv(apartEnv) == "" {
		t.Fatalf("%s starts in the shared test process: call runApart first (%s)", name, why)
	}
}

// TestApartVerdict: a child's result is read from its own line only.
func TestApartVerdict(t *testing.T) {
	out := "=== RUN   TestX/greatws\n    x_test.go:1: hello\n--- SKIP: TestX/greatws_event (0.00s)\n--- PASS: TestX/greatws (0.01s)\n"
	for name, want := range map[string]string{"TestX/greatws": "PASS", "TestX/greatws_event": "SKIP", "TestX/gws": "", "TestX": ""} {
		if got := apartVerdict(out, name); got != want {
			t.Errorf("apartVerdict(%s) = %q, want %q", name, got, want)
		}
	}
	if apartWhy("greatws_event") == "" || apartWhy("greatws") == "" || apartWhy("gws") != "" {
		t.Errorf("apartWhy: greatws_event %q, greatws %q, gws %q; want greatws's reason for both, none for gws",
			apartWhy("greatws_event"), apartWhy("greatws"), apartWhy("gws"))
	}
}
