package procstat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// writeFDs gives a fake process n open file descriptors.
func writeFDs(t *testing.T, root string, pid, n int) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid), "fd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTreeUsage: RSS, fds and threads summed over the tree; a zombie
// child counts for nothing; a process without a readable fd directory is
// counted in NoFDs.
func TestTreeUsage(t *testing.T) {
	root := t.TempDir()
	writeStat(t, root, 100, 1, 'S', 0, 0, 0, 0, 10)
	writeStat(t, root, 101, 100, 'R', 0, 0, 0, 0, 5)
	writeStat(t, root, 102, 100, 'Z', 0, 0, 0, 0, 0)
	writeStat(t, root, 103, 1, 'R', 0, 0, 0, 0, 7) // not in the tree
	writeStat(t, root, 104, 101, 'S', 0, 0, 0, 0, 1)
	writeFDs(t, root, 100, 1500)
	writeFDs(t, root, 101, 3)
	writeFDs(t, root, 103, 9)
	fs := FS{Root: root, PageSize: 4096}
	u, err := fs.TreeUsage(100)
	if err != nil {
		t.Fatal(err)
	}
	want := Usage{RSS: 16 * 4096, FDs: 1503, Threads: 3, Procs: 3, NoFDs: 1}
	if u != want {
		t.Errorf("TreeUsage = %+v, want %+v", u, want)
	}
	if _, err := fs.TreeUsage(555); !errors.Is(err, ErrExited) {
		t.Errorf("TreeUsage of a missing pid: %v, want ErrExited", err)
	}
	if _, err := fs.CountFDs(555); !errors.Is(err, ErrExited) {
		t.Errorf("CountFDs of a missing pid: %v, want ErrExited", err)
	}
}

// TestCountFDsSelf reads this process's own descriptors: opening a file
// adds one.
func TestCountFDsSelf(t *testing.T) {
	fs := FS{}
	before, err := fs.CountFDs(0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	after, err := fs.CountFDs(0)
	if err != nil {
		t.Fatal(err)
	}
	if after != before+1 {
		t.Errorf("fds %d after opening one, %d before", after, before)
	}
}
