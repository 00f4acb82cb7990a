// Package testenv says which of the module's tests a `go test` run
// includes. Plain `go test ./...` (the README's command) runs every test of
// the product's behaviour and finishes in about five minutes from an
// empty build cache on two cores; the few tests that take long on their own — a
// minute of churn, a build of a package per kind, two capacity searches —
// run too when WSPLAN_SLOW=1 is set, as .ci/run does. `-short` skips them
// whatever the variable says. It also says how a test lives with a
// loaded host: it waits for what it expects (WaitFor) and tries a timing
// figure again (RetryTiming).
//
// It is a test-only package (internal/layering's TestOnly): only _test.go
// files import it, and it imports nothing of the module.
package testenv

import (
	"os"
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
