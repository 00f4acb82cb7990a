package procstat

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// writeStat writes a minimal /proc/<pid>/stat: utime, stime, cutime and
// cstime in ticks, rss in pages.
func writeStat(t *testing.T, root string, pid, ppid int, state byte, utime, stime, cutime, cstime, rss int64) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("%d (p%d) %c %d %d %d 0 -1 0 0 0 0 0 %d %d %d %d 20 0 1 0 100 1000 %d 0\n",
		pid, pid, state, ppid, pid, pid, utime, stime, cutime, cstime, rss)
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTree(t *testing.T) {
	root := t.TempDir()
	writeStat(t, root, 100, 1, 'S', 0, 0, 0, 0, 1)
	writeStat(t, root, 101, 100, 'R', 0, 0, 0, 0, 1)
	writeStat(t, root, 102, 101, 'R', 0, 0, 0, 0, 1)
	writeStat(t, root, 103, 1, 'R', 0, 0, 0, 0, 1) // not a descendant
	writeStat(t, root, 104, 100, 'Z', 0, 0, 0, 0, 0)
	if err := os.MkdirAll(filepath.Join(root, "self"), 0o755); err != nil { // not a pid
		t.Fatal(err)
	}
	fs := FS{Root: root, PageSize: 4096}
	got, err := fs.Tree(100)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, s := range got {
		pids = append(pids, s.PID)
	}
	if fmt.Sprint(pids) != "[100 101 104 102]" {
		t.Errorf("Tree(100) = %v, want [100 101 104 102]", pids)
	}
	if _, err := fs.Tree(104); !errors.Is(err, ErrExited) {
		t.Errorf("Tree of a zombie: err = %v, want ErrExited", err)
	}
	if _, err := fs.Tree(555); !errors.Is(err, ErrExited) {
		t.Errorf("Tree of a missing pid: err = %v, want ErrExited", err)
	}
}

// TestTreeSamplerSums: a wrapper that idles while its child works is
// measured as the whole tree; a child reaped inside the tree keeps counting
// through its parent's cutime/cstime.
func TestTreeSamplerSums(t *testing.T) {
	root := t.TempDir()
	fs := FS{Root: root, PageSize: 4096}
	writeStat(t, root, 10, 1, 'S', 5, 5, 0, 0, 100)      // the wrapper: 0.1 s before
	writeStat(t, root, 11, 10, 'R', 100, 50, 0, 0, 1000) // the server
	writeStat(t, root, 12, 11, 'R', 10, 0, 0, 0, 10)     // a helper of the server
	tree := NewTreeSampler(fs, 10, time.Hour)
	single := NewSampler(fs, 10, time.Hour)
	tree.Start()
	single.Start()
	// Later: the wrapper did nothing; the server spent 2 s more; its
	// helper spent 0.2 s more and exited, reaped by the server.
	writeStat(t, root, 10, 1, 'S', 5, 5, 0, 0, 100)
	writeStat(t, root, 11, 10, 'R', 250, 100, 30, 0, 2000)
	if err := os.RemoveAll(filepath.Join(root, "12")); err != nil {
		t.Fatal(err)
	}
	ts, ss := tree.Stop(), single.Stop()
	if ts.Err != nil || ss.Err != nil {
		t.Fatal(ts.Err, ss.Err)
	}
	if math.Abs(ts.CPUSeconds-2.2) > 1e-9 {
		t.Errorf("tree CPU = %v s, want 2.2", ts.CPUSeconds)
	}
	if ts.RootCPUSeconds != 0 || ss.CPUSeconds != 0 {
		t.Errorf("wrapper CPU = %v (tree root), %v (single), want 0", ts.RootCPUSeconds, ss.CPUSeconds)
	}
	if ts.Procs != 3 || ss.Procs != 1 {
		t.Errorf("procs = %d (tree), %d (single), want 3, 1", ts.Procs, ss.Procs)
	}
	if want := int64(2100 * 4096); ts.MemMax != want {
		t.Errorf("tree MemMax = %d, want %d (the whole tree's RSS at its largest)", ts.MemMax, want)
	}
}

// TestTreeSamplerLive measures a real shell wrapper around a busy child:
// the shell is idle, the tree is not.
func TestTreeSamplerLive(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sh -c 'i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done' ; true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	defer func() {
		// The whole group, the busy child with it; errors mean it is gone.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	time.Sleep(50 * time.Millisecond) // let the child start
	tree := NewTreeSampler(FS{}, cmd.Process.Pid, 50*time.Millisecond)
	tree.Start()
	time.Sleep(400 * time.Millisecond)
	s := tree.Stop()
	if s.Err != nil {
		t.Skipf("the busy child finished too early on this host: %v", s.Err)
	}
	if s.Procs < 2 {
		t.Errorf("procs = %d, want >= 2 (the shell and its child)", s.Procs)
	}
	// On a loaded host the busy child may get little of its core: ask
	// only that the tree did work the wrapper did not.
	if s.CPUSeconds < 0.02 || s.RootCPUSeconds > s.CPUSeconds/4 {
		t.Errorf("tree CPU %.3f s, wrapper alone %.3f s: want the tree busy (>= 0.02 s of 0.4 s) and the wrapper idle",
			s.CPUSeconds, s.RootCPUSeconds)
	}
	if !s.PreciseCPU {
		t.Errorf("live tree sampling should read the CPU clocks")
	}
}
