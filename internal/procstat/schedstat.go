package procstat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ParseSchedstat parses a /proc/<pid>/task/<tid>/schedstat line: the time
// the task ran on a CPU, the time it waited on a run queue (runnable, not
// running), and its number of timeslices.
func ParseSchedstat(b []byte) (run, wait time.Duration, err error) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, 0, fmt.Errorf("procstat: schedstat: want 3 fields, got %q", truncate(string(b), 80))
	}
	r, err1 := strconv.ParseInt(string(f[0]), 10, 64)
	w, err2 := strconv.ParseInt(string(f[1]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("procstat: schedstat: bad numbers in %q", truncate(string(b), 80))
	}
	return time.Duration(r), time.Duration(w), nil
}

// MaxWaitThreads bounds the threads RunQueueWait reads: a file each, at
// every sample, in the measuring process. A process with more (a
// thread-per-connection server) has no run-queue wait figure.
const MaxWaitThreads = 512

// RunQueueWait is the time every live thread of the process pid (0: the
// calling process) spent runnable but waiting for a CPU: with the CPU
// time, how much CPU the process wanted. A process that wanted a whole
// core but got half of it (a busy CPU) waited the other half. A process
// of more than MaxWaitThreads threads is an error.
func (fs FS) RunQueueWait(pid int) (time.Duration, error) {
	dir := filepath.Join(fs.pidDir(pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	if len(tasks) > MaxWaitThreads {
		return 0, fmt.Errorf("procstat: pid %d has %d threads, more than the %d whose run-queue wait is read", pid, len(tasks), MaxWaitThreads)
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // the thread exited
		}
		_, w, err := ParseSchedstat(b)
		if err != nil {
			return 0, err
		}
		sum += w
	}
	return sum, nil
}
