package testenv

import (
	"testing"
	"time"
)

// A loaded host does things late: a test waits for what it expects
// (WaitFor) instead of sleeping a fixed time, and tries a timing figure
// again (RetryTiming) instead of failing on one late send.

// WaitFor polls cond for up to 5 s, and fails the test when it never
// holds.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TimingTries is how many times RetryTiming tries: an attempt that
// counts its tries knows its last one by it.
const TimingTries = 3

// RetryTiming runs attempt up to TimingTries times while it reports a
// timing miss: a figure a loaded host can push out of bounds (sends that
// left late, bunching, wall time). Counts and sums are asserted by
// attempt itself, with t, on every try; only a timing miss on every try
// fails the test.
func RetryTiming(t *testing.T, attempt func() string) {
	t.Helper()
	var miss string
	for i := range TimingTries {
		if miss = attempt(); miss == "" {
			return
		}
		t.Logf("try %d: %s (timing depends on the host's load: trying again)", i+1, miss)
	}
	t.Error(miss)
}
