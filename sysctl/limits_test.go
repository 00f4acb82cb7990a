package sysctl

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// childSoftNoFile returns the soft RLIMIT_NOFILE a child process sees.
func childSoftNoFile(t *testing.T) uint64 {
	t.Helper()
	out, err := exec.Command("sh", "-c", "ulimit -Sn").Output()
	if err != nil {
		t.Skipf("no sh to read a child's limit: %v", err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("ulimit -Sn printed %q", out)
	}
	return n
}

// childEnv marks the child process inChild starts; its value is the test
// the child runs.
const childEnv = "WSPLAN_SYSCTL_TEST_CHILD"

// inChild reruns the calling test alone in a child process of this test
// binary, so the limits it sets never change the test process (as root,
// SetNoFile can raise the hard limit, which no Cleanup can be trusted to
// undo for the tests that follow). It returns true in the child, where the
// test's body runs, and false in the parent, which only reports the
// child's outcome.
func inChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("in a child process: %v\n%s", err, out)
	case bytes.Contains(out, []byte("--- SKIP")):
		t.Skipf("in a child process:\n%s", out)
	}
	t.Logf("in a child process:\n%s", out)
	return false
}

func TestRaiseNoFile(t *testing.T) {
	if !inChild(t) {
		return
	}
	soft0, hard0 := NoFile()
	if hard0 == 0 {
		t.Fatal("NoFile: cannot read RLIMIT_NOFILE")
	}
	t.Cleanup(func() {
		// Leave the test binary as it started.
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: soft0, Max: hard0}); err != nil {
			t.Error(err)
		}
	})
	if hard0 < 200 {
		t.Skipf("hard limit %d too low to test with", hard0)
	}

	low := uint64(100)
	soft, hard, err := SetNoFile(low)
	if err != nil || soft != low || hard != hard0 {
		t.Fatalf("SetNoFile(%d) = %d, %d, %v; want %d, %d", low, soft, hard, err, low, hard0)
	}
	if got := childSoftNoFile(t); got != low {
		t.Errorf("child soft limit after SetNoFile = %d, want %d", got, low)
	}

	soft, hard, err = RaiseNoFile()
	if err != nil || soft != hard0 || hard != hard0 {
		t.Fatalf("RaiseNoFile = %d, %d, %v; want %d, %d", soft, hard, err, hard0, hard0)
	}
	if s, h := NoFile(); s != hard0 || h != hard0 {
		t.Errorf("NoFile after RaiseNoFile = %d, %d", s, h)
	}
	if got := childSoftNoFile(t); got != hard0 {
		t.Errorf("child soft limit after RaiseNoFile = %d, want the hard limit %d", got, hard0)
	}
}

// Raising the hard limit needs CAP_SYS_RESOURCE; without it the error says
// what to do instead.
func TestSetNoFileAboveHard(t *testing.T) {
	if !inChild(t) {
		return
	}
	soft0, hard0 := NoFile()
	t.Cleanup(func() {
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: soft0, Max: hard0}); err != nil {
			t.Error(err)
		}
	})
	_, _, err := SetNoFile(hard0 + 1)
	if err == nil {
		t.Skip("this process may raise its hard limit (CAP_SYS_RESOURCE); nothing to test")
	}
	if !errors.Is(err, unix.EPERM) {
		t.Fatalf("err = %v, want EPERM", err)
	}
	want := "raising RLIMIT_NOFILE to " + strconv.FormatUint(hard0+1, 10) + " above the hard limit " + strconv.FormatUint(hard0, 10) +
		": operation not permitted (needs root/CAP_SYS_RESOURCE and fs.nr_open ≥ " + strconv.FormatUint(hard0+1, 10) +
		"; or raise it before starting: ulimit -Hn / limits.conf)"
	if err.Error() != want {
		t.Errorf("err:\n got %s\nwant %s", err, want)
	}
	if s, h := NoFile(); s != soft0 || h != hard0 {
		t.Errorf("a failed SetNoFile changed the limits to %d, %d", s, h)
	}
}
