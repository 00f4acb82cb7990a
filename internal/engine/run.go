package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/launch"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/wstls"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/sysctl"
)

// Run executes the plan. It returns the results measured so far together
// with ctx.Err() when interrupted; other errors mean the run could not start.
func Run(ctx context.Context, o Options) (*result.Run, error) {
	if o.Plan == nil && len(o.Plans) > 0 {
		o.Plan = o.Plans[0]
	}
	p := o.Plan
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding the wsplan binary: %w", err)
		}
		o.Exe = exe
	}
	if o.Notice == nil {
		o.Notice = func(string, ...any) {}
	}
	if o.NewDriver == nil {
		o.NewDriver = func(co client.Options) (Driver, error) { return client.New(co) }
	}
	if o.Proc.Root == "" {
		o.Proc = procstat.FS{Root: "/proc"}
	}
	if o.Sys.Root == "" {
		o.Sys = sysctl.SysFS("")
	}
	if len(o.Layout.ServerCPUs) == 0 {
		l, err := ComputeLayout(p.Host.ServerCPUs, p.Host.ClientCPUs, sysctl.OnlineCPUs())
		if err != nil {
			return nil, err
		}
		o.Layout = l
	}
	if o.OutDir != "" {
		if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
			return nil, err
		}
	}
	run := &result.Run{
		Schema:  result.Schema,
		Plan:    planInfo(&o),
		Host:    HostFacts(o.Proc, o.Sys, p, o.Layout),
		Started: time.Now(),
	}

	// The client runs in this process: pin it and size the scheduler to it,
	// and put both back afterwards (Run may be called from tests).
	restore, err := pinSelf(o.Layout.ClientCPUs, loops(p, o.Layout))
	if err != nil {
		return nil, err
	}
	defer restore()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	e := &runner{o: o, plan: p, run: run, abort: cancel}
	defer func() {
		for _, f := range e.cleanup {
			f()
		}
	}()
	e.schedule(ctx)
	if cause := context.Cause(ctx); cause != nil && errors.Is(cause, errAborted) {
		run.Finished = time.Now()
		run.Aborted = strings.TrimPrefix(cause.Error(), errAborted.Error()+": ")
		return run, nil
	}
	run.Finished = time.Now()
	if ctx.Err() != nil {
		run.Interrupted = true
		return run, ctx.Err()
	}
	return run, nil
}

type runner struct {
	o       Options
	plan    *plan.Plan
	run     *result.Run
	mu      sync.Mutex
	abort   context.CancelCauseFunc
	ca      map[wstls.Key]wstls.RunCA // made by the first server with tls: true of each certificate key type
	cleanup []func()                  // run at the end of Run

	// The combination and repeat being run (repeat.go).
	vars   map[string]string
	repeat int
	logTag string
}

var errAborted = errors.New("aborted")

func (e *runner) add(r result.Result) {
	e.stamp(&r)
	// No secret of the plan leaves the engine in a result, in any of its
	// strings, whatever renders it (JSON escapes, HTML).
	e.plan.Secrets.RedactValue(&r)
	e.mu.Lock()
	e.run.Results = append(e.run.Results, r)
	e.mu.Unlock()
	if e.o.Abort != nil {
		if why := e.o.Abort(&r, e.run); why != "" {
			e.abort(fmt.Errorf("%w: %s", errAborted, why))
		}
	}
}

func (e *runner) framework(srv plan.Server) string {
	if srv.External() {
		return "url"
	}
	if len(srv.Command) > 0 {
		return "custom"
	}
	if srv.Framework != "" {
		return srv.Framework
	}
	return srv.Name
}

// stopReason says why ctx ended: an interrupt or an aborting assertion.
func stopReason(ctx context.Context) string {
	if cause := context.Cause(ctx); cause != nil && errors.Is(cause, errAborted) {
		return "not run: " + strings.TrimPrefix(cause.Error(), errAborted.Error()+": ")
	}
	return "interrupted"
}

// failRest records every phase from index k on as failed with reason.
func (e *runner) failRest(srv plan.Server, k int, reason, logTail string) {
	for _, ph := range e.plan.Phases[k:] {
		e.add(result.Result{Server: srv.Name, Framework: e.framework(srv), Phase: ph.Name, Kind: ph.Kind,
			OK: false, Error: reason, Metrics: metrics.Values{}, ServerLog: logTail})
	}
}

func (e *runner) server(ctx context.Context, i int, srv plan.Server) {
	if srv.External() {
		e.external(ctx, srv)
		return
	}
	addrs := serverAddrs(e.plan, i, srv)
	if err := portsFree(addrs); err != nil {
		e.failRest(srv, 0, err.Error(), "")
		return
	}
	argv := e.serverArgv(i, srv, addrs)
	if srv.ServeTLS && srv.BuiltIn() {
		args, err := e.presetTLS(&srv)
		if err != nil {
			e.failRest(srv, 0, err.Error(), "")
			return
		}
		argv = append(argv, args...)
	}
	hs, err := readyHandshakes(srv, addrs)
	if err != nil {
		e.failRest(srv, 0, "tls: "+err.Error(), "")
		return
	}
	spec := launch.Spec{
		Argv:    argv,
		LogPath: e.logPath(srv.Name),
		CPUs:    e.o.Layout.ServerCPUs,
		Secrets: e.plan.Secrets,
	}
	proc, err := launch.Start(spec)
	if err != nil {
		e.failRest(srv, 0, "server failed to start: "+err.Error(), "")
		return
	}
	grace := e.plan.Defaults.StopGrace.D()
	var watched serverProc = proc
	res := resources{how: result.ResourcesTree, pid: proc.Pid}
	if e.plan.HasFaults() {
		box := newRestartable(proc, proc.Pid, 0, e.restartStarted(srv, spec, hs))
		defer box.close()
		watched, res.box = box, box
	}
	stop := func() {
		if p, ok := current(watched).(*launch.Process); ok {
			if err := p.Stop(grace); err != nil {
				e.o.Notice("%s: %v", srv.Name, err)
			}
		}
	}
	defer stop()
	e.o.Notice("%s: started pid %d on %s (CPUs %s)", srv.Name, proc.Pid, strings.Join(addrs, ","), sysctl.FormatCPUList(e.o.Layout.ServerCPUs))
	if err := waitReady(ctx, proc, hs, e.plan.Defaults.ReadyTime.D()); err != nil {
		if ctx.Err() != nil {
			e.failRest(srv, 0, stopReason(ctx), "")
			return
		}
		e.failRest(srv, 0, "server not ready: "+err.Error(), proc.Tail(2048))
		return
	}
	drv, err := e.driver(srv, addrs)
	if err != nil {
		e.failRest(srv, 0, "client: "+err.Error(), "")
		return
	}
	// Stop the server before closing the client's sockets, so TIME_WAIT
	// lands on the server's listen ports, not on the client's ephemeral ones.
	defer func() {
		if err := drv.Close(); err != nil {
			e.o.Notice("%s: closing client: %v", srv.Name, err)
		}
	}()
	defer stop()
	// The whole process tree: a server started through a wrapper (sh -c,
	// npm, a supervisor) is measured as the server, not as the wrapper.
	e.phases(ctx, srv, addrs, watched, drv, res)
}

// memReader returns a func reading the RSS of the server (when it is
// measured) and of every client process (this one and any shards).
func (e *runner) memReader(res resources, drv Driver) func() scenarios.Mem {
	clients := []int{os.Getpid()}
	if ps, ok := drv.(pidser); ok {
		clients = append(clients, ps.Pids()...)
	}
	rss := func(pid int) int64 {
		n, err := e.o.Proc.RSS(pid)
		if err != nil {
			return 0 // gone: the phase reports the death
		}
		return n
	}
	return func() scenarios.Mem {
		var m scenarios.Mem
		var ok bool
		m.Server, ok = res.rss(e.o.Proc)
		m.NoServer = !ok
		for _, pid := range clients {
			m.Client += rss(pid)
		}
		return m
	}
}

// pidser is a Driver with processes of its own (shards) to sample.
type pidser interface{ Pids() []int }
