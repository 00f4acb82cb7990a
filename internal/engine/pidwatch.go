package engine

import (
	"fmt"
	"sync"
	"time"

	"github.com/wsplan/wsplan/internal/procstat"
)

// pidPoll is how often a url: server's pid (pid:, pid_file:) is checked
// while a phase runs; every phase also checks it when it ends (Exited).
const pidPoll = 100 * time.Millisecond

// watchedPID stands for a url: server whose process wsplan can see on this
// host (pid:, pid_file:) but did not start: it is never signalled, but its
// exit mid-run is noticed as a started server's is (the phase in progress
// stops with "server pid N exited", the rest are skipped, what was measured
// is kept). A pid reused by another process counts as an exit: its start
// time is compared. The process is read on pidPoll and whenever Exited is
// asked, so a phase that ends between two polls still sees the exit.
type watchedPID struct {
	fs      procstat.FS
	pid     int
	started time.Duration

	mu   sync.Mutex
	done chan struct{} // closed when the process exited
	why  string        // set before done is closed

	stop     chan struct{} // closed by close
	stopOnce sync.Once
	wg       sync.WaitGroup // the watching goroutine
}

// watchPID starts watching pid, a process started at started (its
// procstat.Stat.StartTime); close stops the watch.
func watchPID(fs procstat.FS, pid int, started time.Duration) *watchedPID {
	w := &watchedPID{fs: fs, pid: pid, started: started, done: make(chan struct{}), stop: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(pidPoll)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-w.done:
				return
			case <-t.C:
				w.check()
			}
		}
	}()
	return w
}

// check reads the process now and, if it exited, records why and closes
// done (once).
func (w *watchedPID) check() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.why != "" {
		return true
	}
	now, err := w.fs.ReadStat(w.pid)
	switch {
	case err != nil:
		w.why = fmt.Sprintf("pid %d exited", w.pid)
	case now.Exited():
		w.why = fmt.Sprintf("pid %d exited (state %c)", w.pid, now.State)
	case now.StartTime != w.started:
		w.why = fmt.Sprintf("pid %d exited (the pid now names another process)", w.pid)
	default:
		return false
	}
	close(w.done)
	return true
}

// close stops the watch; later calls do nothing (a restart closes the
// watch of the process it replaced).
func (w *watchedPID) close() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.wg.Wait()
}

func (w *watchedPID) Done() <-chan struct{} { return w.done }

// Exited reads the process now (not only at the last poll).
func (w *watchedPID) Exited() (bool, error) { return w.check(), nil }

// ExitReason is why the process counts as exited ("" while it runs).
func (w *watchedPID) ExitReason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.why
}

func (*watchedPID) Stopping() bool  { return false }
func (*watchedPID) Tail(int) string { return "" }
