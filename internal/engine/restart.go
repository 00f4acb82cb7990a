package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wsplan/wsplan/internal/launch"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/result"
)

// restartable is the server of a run whose phases may restart it (a
// restart fault): the process of the moment behind the serverProc the
// phases watch. Its Done closes only when that process dies on its own;
// the stop of a restart is no death, and a restart that fails is one.
type restartable struct {
	mu         sync.Mutex
	cur        serverProc
	pid        int           // the current process's pid (resources), 0 = none
	started    time.Duration // its start time (procstat), for a url: server's pid watch
	restarting bool
	dead       bool
	why        string
	done       chan struct{}
	stop       chan struct{}
	wg         sync.WaitGroup
	n          int // restarts so far

	// restart stops cur and starts the next server, returning it and its
	// pid; the n-th restart (from 1).
	restart func(ctx context.Context, cur serverProc, n int) (next serverProc, pid int, started time.Duration, err error)
}

// newRestartable watches cur (pid, started) and restarts it with restart.
func newRestartable(cur serverProc, pid int, started time.Duration, restart func(context.Context, serverProc, int) (serverProc, int, time.Duration, error)) *restartable {
	r := &restartable{cur: cur, pid: pid, started: started, done: make(chan struct{}), stop: make(chan struct{}), restart: restart}
	r.watch(cur)
	return r
}

// watch closes r.done when p, still the current process, dies on its own.
func (r *restartable) watch(p serverProc) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		select {
		case <-p.Done():
		case <-r.stop:
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.cur == p && !r.restarting && !p.Stopping() {
			r.die(p.ExitReason())
		}
	}()
}

// die marks the server dead with why (under mu).
func (r *restartable) die(why string) {
	if !r.dead {
		r.dead, r.why = true, why
		close(r.done)
	}
}

// close stops the watching (not the server).
func (r *restartable) close() {
	close(r.stop)
	r.wg.Wait()
}

// current is the process of the moment.
func (r *restartable) current() serverProc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// curPID is the current process's pid (0 = none).
func (r *restartable) curPID() (int, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pid, r.started
}

func (r *restartable) Done() <-chan struct{} { return r.done }

// Exited reports the death of the server: its current process exited on
// its own (not in a restart), or a restart failed.
func (r *restartable) Exited() (bool, error) {
	r.mu.Lock()
	cur, restarting, dead := r.cur, r.restarting, r.dead
	r.mu.Unlock()
	if dead || restarting {
		return dead, nil
	}
	return cur.Exited()
}

func (r *restartable) ExitReason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead {
		return r.why
	}
	return r.cur.ExitReason()
}

// Stopping is true while a restart stops the server, and when wsplan
// stops it for good.
func (r *restartable) Stopping() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.restarting || !r.dead && r.cur.Stopping()
}

func (r *restartable) Tail(n int) string { return r.current().Tail(n) }

// do restarts the server; a failure kills it (the phase sees a death).
func (r *restartable) do(ctx context.Context) (time.Duration, error) {
	r.mu.Lock()
	if r.dead {
		r.mu.Unlock()
		return 0, errors.New("the server is gone")
	}
	r.restarting = true
	r.n++
	cur, n := r.cur, r.n
	r.mu.Unlock()
	t0 := time.Now()
	next, pid, started, err := r.restart(ctx, cur, n)
	took := time.Since(t0)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.restarting = false
	if err != nil {
		r.die("did not come back after a restart (" + err.Error() + ")")
		return took, err
	}
	r.cur, r.pid, r.started = next, pid, started
	r.watch(next)
	return took, nil
}

// faultRun is a phase's faults in progress.
type faultRun struct {
	wg       sync.WaitGroup
	stop     chan struct{}
	mu       sync.Mutex
	restarts int64
	longest  time.Duration
	notes    []string
}

// startFaults runs ph's faults at their times after now against proc (a
// restartable server); the func it returns stops those not yet due, waits
// for the one in progress and writes what they did into res.
func (e *runner) startFaults(ctx context.Context, srv plan.Server, ph plan.Phase, proc serverProc) func(res *result.Result) {
	if len(ph.Faults) == 0 {
		return func(*result.Result) {}
	}
	f := &faultRun{stop: make(chan struct{})}
	rb, ok := proc.(*restartable)
	start := time.Now()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for _, ft := range ph.Faults {
			select {
			case <-time.After(time.Until(start.Add(ft.At.D()))):
			case <-f.stop:
				return
			case <-ctx.Done():
				return
			}
			if !ok {
				f.note(fmt.Sprintf("restart at %s: this server cannot be restarted", ft.At))
				return
			}
			e.o.Notice("%s: %s: restarting the server (fault at %s)", srv.Name, ph.Name, ft.At)
			took, err := rb.do(ctx)
			f.mu.Lock()
			f.restarts++
			f.longest = max(f.longest, took)
			f.mu.Unlock()
			if err != nil {
				f.note(fmt.Sprintf("restart at %s failed after %s: %v", ft.At, took.Round(time.Millisecond), err))
				return
			}
			pid, _ := rb.curPID()
			e.o.Notice("%s: %s: server back after %s (pid %d)", srv.Name, ph.Name, took.Round(time.Millisecond), pid)
			f.note(fmt.Sprintf("the server restarted at %s (back after %s, pid %d): its CPU and memory in this row are the first process's", ft.At, took.Round(time.Millisecond), pid))
		}
	}()
	return func(res *result.Result) {
		close(f.stop)
		f.wg.Wait()
		f.mu.Lock()
		defer f.mu.Unlock()
		res.Metrics[metrics.Restarts] = f.restarts
		if f.restarts > 0 {
			res.Metrics[metrics.RestartTime] = f.longest
		}
		res.Warnings = append(res.Warnings, f.notes...)
		if e.plan.Client.ReconnectPolicy() == nil {
			res.Warnings = append(res.Warnings, "client.reconnect has no policy: the connections the restart dropped stayed closed")
		}
	}
}

func (f *faultRun) note(s string) {
	f.mu.Lock()
	f.notes = append(f.notes, s)
	f.mu.Unlock()
}

// restartStarted restarts a server wsplan started: SIGTERM, the stop
// grace, SIGKILL, then the same command on the same addresses, ready when
// it upgrades on every one.
func (e *runner) restartStarted(srv plan.Server, spec launch.Spec, hs []handshake) func(context.Context, serverProc, int) (serverProc, int, time.Duration, error) {
	return func(ctx context.Context, cur serverProc, n int) (serverProc, int, time.Duration, error) {
		if p, ok := cur.(*launch.Process); ok {
			if err := p.Stop(e.plan.Defaults.StopGrace.D()); err != nil {
				e.o.Notice("%s: %v", srv.Name, err)
			}
		}
		s := spec
		s.LogPath = e.logPath(fmt.Sprintf("%s-restart%d", srv.Name, n))
		p, err := launch.Start(s)
		if err != nil {
			return nil, 0, 0, err
		}
		if err := waitReady(ctx, p, hs, e.plan.Defaults.ReadyTime.D()); err != nil {
			_ = p.Stop(e.plan.Defaults.StopGrace.D()) // it failed already; this only reaps it
			return nil, 0, 0, err
		}
		return p, p.Pid, 0, nil
	}
}

// restartExternal restarts a url: server with its restart_command: wsplan
// waits for the command to end (successfully, within the ready timeout),
// then for an upgrade on every URL, then reads its pid_file again.
func (e *runner) restartExternal(srv plan.Server, hs []handshake) func(context.Context, serverProc, int) (serverProc, int, time.Duration, error) {
	return func(ctx context.Context, cur serverProc, n int) (serverProc, int, time.Duration, error) {
		timeout := e.plan.Defaults.ReadyTime.D()
		cmd, err := launch.Start(launch.Spec{Argv: srv.RestartCommand, LogPath: e.logPath(fmt.Sprintf("%s-restart%d", srv.Name, n)), Secrets: e.plan.Secrets})
		if err != nil {
			return nil, 0, 0, fmt.Errorf("restart_command: %w", err)
		}
		select {
		case <-cmd.Done():
		case <-time.After(timeout):
			_ = cmd.Stop(e.plan.Defaults.StopGrace.D()) // its own error is the timeout's
			return nil, 0, 0, fmt.Errorf("restart_command did not end within %s", timeout)
		case <-ctx.Done():
			_ = cmd.Stop(e.plan.Defaults.StopGrace.D()) // interrupted
			return nil, 0, 0, ctx.Err()
		}
		if _, err := cmd.Exited(); err != nil {
			return nil, 0, 0, fmt.Errorf("restart_command: %w (its output: %s)", err, lastLine(cmd.Tail(512)))
		}
		if w, ok := cur.(*watchedPID); ok {
			w.close()
		}
		if err := waitReady(ctx, running{}, hs, timeout); err != nil {
			return nil, 0, 0, err
		}
		res, err := e.externalResources(ctx, srv)
		if err != nil {
			return nil, 0, 0, err
		}
		if res.how == result.ResourcesPID {
			return watchPID(e.o.Proc, res.pid, res.started), res.pid, res.started, nil
		}
		return running{}, 0, 0, nil
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	end := len(s)
	for end > 0 && (s[end-1] == '\n' || s[end-1] == '\r') {
		end--
	}
	start := end
	for start > 0 && s[start-1] != '\n' {
		start--
	}
	return s[start:end]
}
