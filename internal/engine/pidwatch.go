package engine

import (
	"fmt"
	"sync"
	"time"

	"github.com/wsplan/wsplan/internal/procstat"
)

// pidPoll is how often a url: server's pid (pid:, pid_file:) is checked.
const pidPoll = 100 * time.Millisecond

// watchedPID stands for a url: server whose process wsplan can see on this
// host (pid:, pid_file:) but did not start: it is never signalled, but its
// exit mid-run is noticed as a started server's is (the phase in progress
// stops with "server pid N exited", the rest are skipped, what was measured
// is kept). A pid reused by another process counts as an exit: its start
// time is compared.
type watchedPID struct {
	pid   int
	done  chan struct{}
	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	why   string
	start time.Duration
}

// watchPID starts watching pid, whose /proc/<pid>/stat is st; close stops
// the watch.
func watchPID(fs procstat.FS, pid int, st procstat.Stat) *watchedPID {
	w := &watchedPID{pid: pid, done: make(chan struct{}), stop: make(chan struct{}), start: st.StartTime}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(pidPoll)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			st, err := fs.ReadStat(pid)
			why := ""
			switch {
			case err != nil:
				why = fmt.Sprintf("pid %d exited", pid)
			case st.Exited():
				why = fmt.Sprintf("pid %d exited (state %c)", pid, st.State)
			case st.StartTime != w.start:
				why = fmt.Sprintf("pid %d exited (the pid now names another process)", pid)
			}
			if why != "" {
				w.mu.Lock()
				w.why = why
				w.mu.Unlock()
				close(w.done)
				return
			}
		}
	}()
	return w
}

// close stops the watch.
func (w *watchedPID) close() {
	close(w.stop)
	w.wg.Wait()
}

func (w *watchedPID) Done() <-chan struct{} { return w.done }

func (w *watchedPID) Exited() (bool, error) {
	select {
	case <-w.done:
		return true, nil
	default:
		return false, nil
	}
}

func (w *watchedPID) ExitReason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.why
}

func (*watchedPID) Stopping() bool  { return false }
func (*watchedPID) Tail(int) string { return "" }
