package procstat

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Usage is what a process tree holds at one moment, summed over its
// processes: resident memory, open file descriptors and threads. It is
// what a soak follows over time: a server that keeps any of them for
// connections long closed leaks it.
type Usage struct {
	RSS     int64 // bytes
	FDs     int64 // open file descriptors (entries of /proc/<pid>/fd)
	Threads int64 // num_threads of /proc/<pid>/stat
	Procs   int   // processes summed
	// NoFDs counts processes whose fd directory could not be read (not
	// ours to read): their descriptors are not in FDs.
	NoFDs int
}

// CountFDs returns the number of open file descriptors of pid, the
// entries of /proc/<pid>/fd; pid 0 is the calling process. A process that
// is gone yields an error wrapping ErrExited.
func (fs FS) CountFDs(pid int) (int64, error) {
	f, err := os.Open(filepath.Join(fs.pidDir(pid), "fd"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return 0, fmt.Errorf("procstat: pid %d: %w (%w)", pid, ErrExited, err)
		}
		return 0, fmt.Errorf("procstat: %w", err)
	}
	defer f.Close()
	var n int64
	for {
		names, err := f.Readdirnames(1024)
		n += int64(len(names))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("procstat: pid %d fds: %w", pid, err)
		}
	}
}

// TreeUsage reads the Usage of pid's process tree (Tree): pid and every
// descendant. An error wraps ErrExited when pid itself is gone.
func (fs FS) TreeUsage(pid int) (Usage, error) {
	stats, err := fs.Tree(pid)
	if err != nil {
		return Usage{}, err
	}
	var u Usage
	for _, st := range stats {
		if st.Exited() {
			continue
		}
		u.Procs++
		u.RSS += st.RSS(fs.pageSize())
		u.Threads += st.NumThreads
		n, err := fs.CountFDs(st.PID)
		if err != nil {
			u.NoFDs++
			continue
		}
		u.FDs += n
	}
	return u, nil
}
