package launch

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// A zombie (state Z) has exited.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestStartPinnedAndStop(t *testing.T) {
	log := filepath.Join(t.TempDir(), "child.log")
	p, err := Start(Spec{Argv: []string{"sh", "-c", "echo hello; exec sleep 30"}, LogPath: log, CPUs: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.Tail(100), "hello") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	status, err := os.ReadFile("/proc/" + itoa(p.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "Cpus_allowed_list:\t0\n") {
		t.Errorf("child not pinned to CPU 0:\n%s", status)
	}
	pgid, err := syscall.Getpgid(p.Pid)
	if err != nil || pgid != p.Pid {
		t.Errorf("child pgid = %d, %v; want its own group %d", pgid, err, p.Pid)
	}
	if err := p.Stop(2 * time.Second); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if alive(p.Pid) {
		t.Errorf("pid %d still alive after Stop", p.Pid)
	}
	if got := p.ExitReason(); got != "killed by signal terminated" {
		t.Errorf("ExitReason = %q", got)
	}
	b, _ := os.ReadFile(log)
	if string(b) != "hello\n" {
		t.Errorf("log = %q, want hello", b)
	}
}

func TestStopEscalatesToSIGKILLForWholeGroup(t *testing.T) {
	// The shell ignores SIGTERM and has a grandchild in the same group.
	p, err := Start(Spec{Argv: []string{"sh", "-c", "trap '' TERM; sleep 30 & echo $!; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	var grand int
	deadline := time.Now().Add(5 * time.Second)
	for grand == 0 && time.Now().Before(deadline) {
		for _, c := range strings.TrimSpace(p.Tail(100)) {
			if c >= '0' && c <= '9' {
				grand = grand*10 + int(c-'0')
			}
		}
		if grand == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if grand == 0 {
		t.Fatal("no grandchild pid")
	}
	start := time.Now()
	err = p.Stop(300 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Stop = %v, want an error saying it was killed", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("Stop took %s", time.Since(start))
	}
	time.Sleep(50 * time.Millisecond)
	if alive(p.Pid) || alive(grand) {
		t.Errorf("left alive: child %v, grandchild %v", alive(p.Pid), alive(grand))
	}
}

func TestExitReasonAndEarlyExit(t *testing.T) {
	p, err := Start(Spec{Argv: []string{"sh", "-c", "echo boom >&2; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("no exit")
	}
	if got := p.ExitReason(); got != "exited with status 3" {
		t.Errorf("ExitReason = %q", got)
	}
	if got := p.Tail(10); got != "boom\n" {
		t.Errorf("Tail = %q", got)
	}
	if _, err := Start(Spec{Argv: []string{"/nonexistent/binary"}}); err == nil {
		t.Error("Start of a missing binary succeeded")
	}
}

func TestTailKeepsLastLines(t *testing.T) {
	tl := &tail{max: 10}
	tl.Write([]byte("line1\nline2\nline3\n"))
	if got := tl.last(8); got != "line3\n" {
		t.Errorf("last = %q", got)
	}
	if len(tl.buf) != 10 {
		t.Errorf("buffer grew to %d", len(tl.buf))
	}
}
