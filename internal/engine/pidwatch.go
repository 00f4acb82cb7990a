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
	done chan struct{}  // closed when the process exited
	why  string         // written before done is closed, read after
	stop chan struct{}  // closed by close
	wg   sync.WaitGroup // the watching goroutine
}

// watchPID starts watching pid, a process started at started (its
// procstat.Stat.StartTime); close stops the watch.
func watchPID(fs procstat.FS, pid int, started time.Duration) *watchedPID {
	w := &watchedPID{done: make(chan struct{}), stop: make(chan struct{})}
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
			now, err := fs.ReadStat(pid)
			switch {
			case err != nil:
				w.why = fmt.Sprintf("pid %d exited", pid)
			case now.Exited():
				w.why = fmt.Sprintf("pid %d exited (state %c)", pid, now.State)
			case now.StartTime != started:
				w.why = fmt.Sprintf("pid %d exited (the pid now names another process)", pid)
			default:
				continue
			}
			close(w.done)
			return
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

// ExitReason is why the process counts as exited ("" while it runs).
func (w *watchedPID) ExitReason() string {
	if exited, _ := w.Exited(); exited {
		return w.why
	}
	return ""
}

func (*watchedPID) Stopping() bool  { return false }
func (*watchedPID) Tail(int) string { return "" }
