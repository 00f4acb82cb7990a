// Package testenv says which of the module's tests a `go test` run
// includes. Plain `go test ./...` (the README's command) is the quick
// check: unit tests, the CLI's scripts and a slice of the fault matrix,
// under four minutes from an empty build cache on two cores, most of it
// building. A test that runs wsplan end to end through processes, or waits
// out seconds of timeouts, calls Slow: it runs too when WSPLAN_SLOW=1 is
// set, as .ci/run does; `-short` skips it whatever the variable says.
// MainWaiting lets a package whose tests mostly wait run more of them at
// once. It also says how a test lives with a loaded host: it waits for
// what it expects (WaitFor) and tries a timing figure again (RetryTiming).
//
// It is a test-only package (internal/layering's TestOnly): only _test.go
// files import it, and it imports nothing of the module.
package testenv

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// EnvSlow is the variable that lets slow tests run: WSPLAN_SLOW=1.
const EnvSlow = "WSPLAN_SLOW"

// SlowEnabled reports whether slow tests run: WSPLAN_SLOW=1 and not
// -short.
func SlowEnabled() bool {
	return os.Getenv(EnvSlow) == "1" && !testing.Short()
}

// Slow skips the calling test unless slow tests run (SlowEnabled). took
// says what makes it slow, e.g. "70 s of churn"; the skip message names
// it and the variable.
func Slow(t testing.TB, took string) {
	t.Helper()
	if !SlowEnabled() {
		t.Skipf("slow (%s): runs with %s=1, as .ci/run sets", took, EnvSlow)
	}
}

// MainWaiting is the TestMain of a package whose parallel tests mostly
// wait (a fault server's silences, a conformance case's timeouts) rather
// than compute: it runs up to n of them at once instead of GOMAXPROCS,
// unless `-parallel` is given, and returns m.Run's code. On two cores the
// default would leave the CPU idle while a `go test ./...` slot waits.
func MainWaiting(m *testing.M, n int) int {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err)
		}
	}
	return m.Run()
}
