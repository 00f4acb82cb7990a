// Package engine runs a loaded plan: for each server it starts the server
// process, opens the client, runs every phase while sampling CPU and memory
// of both sides, stops the server, and collects one result.Result per
// (server, phase). It never prints: progress and notices go to the writers
// and callbacks the caller passes in.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/launch"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/shard"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/sysctl"
)

// Driver is a load-generating client the engine can close.
type Driver interface {
	scenarios.Driver
	Close() error
}

// Options configure a run.
type Options struct {
	Plan *plan.Plan
	// Exe is the wsplan binary started as `Exe serve ...` for built-in
	// frameworks; default os.Executable().
	Exe string
	// OutDir receives server logs; it is created if missing.
	OutDir string
	// Progress receives the live progress line ("\r"-rewritten); nil = none.
	Progress io.Writer
	// Notice receives one-line notices (server started, phase done); nil = none.
	Notice func(format string, args ...any)
	// NewDriver opens a client for one server; default: an in-process
	// client.Client.
	NewDriver func(client.Options) (Driver, error)
	// Proc is the /proc used for sampling; default /proc.
	Proc procstat.FS
	// Layout is the CPU split; zero = computed from the plan and the host.
	Layout Layout
	// Abort is called with each result as soon as it is measured; when it
	// returns a reason, the run stops there (assertions with `abort: true`).
	Abort func(r *result.Result, run *result.Run) string
}

// Layout is where servers and the client run.
type Layout struct {
	ServerCPUs []int
	ClientCPUs []int
}

// deathGrace is how long a failed phase waits for the server's exit to be
// reaped before deciding whether the server died.
const deathGrace = 500 * time.Millisecond

// ClientBoundThreshold is the share of the client's usable CPU above which a
// result is flagged client_bound (when the server was not busier still):
// the client, not the server, set the pace.
const ClientBoundThreshold = 0.9

// ClientNearThreshold is the share above which a result carries a warning
// that the client came close to measuring itself.
const ClientNearThreshold = 0.8

// clientBound decides whether the client set the pace: its CPU (share of
// the cores it can use) reached ClientBoundThreshold and was not clearly
// below the server's share of its cores (then the server was the
// bottleneck, both being near saturation).
func clientBound(clientShare, serverShare float64) bool {
	return clientShare >= ClientBoundThreshold && clientShare >= serverShare-0.05
}

// Run executes the plan. It returns the results measured so far together
// with ctx.Err() when interrupted; other errors mean the run could not start.
func Run(ctx context.Context, o Options) (*result.Run, error) {
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
		Plan:    result.PlanInfo{Name: p.Name, File: p.File, Description: p.Description, Vars: p.Vars},
		Host:    HostFacts(o.Proc, p, o.Layout),
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
	for i, srv := range p.Servers {
		if ctx.Err() != nil {
			// Servers never started still get their rows, saying why.
			e.failRest(srv, 0, stopReason(ctx), "")
			continue
		}
		e.server(ctx, i, srv)
	}
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

func loops(p *plan.Plan, l Layout) int {
	if p.Client.Loops > 0 {
		return p.Client.Loops
	}
	return max(1, len(l.ClientCPUs))
}

// pinSelf pins every thread of this process to cpus and sets GOMAXPROCS to
// the event loops plus one for the engine; the returned func undoes both.
func pinSelf(cpus []int, loops int) (func(), error) {
	old := sysctl.OnlineCPUs() // this process's mask, from before pinning
	if err := sysctl.PinProcess(os.Getpid(), cpus); err != nil {
		return nil, fmt.Errorf("pinning the client to CPUs %v: %w", cpus, err)
	}
	prev := runtime.GOMAXPROCS(loops + 1)
	return func() {
		runtime.GOMAXPROCS(prev)
		// Best effort: the process ends soon after a run anyway.
		_ = sysctl.PinProcess(os.Getpid(), old)
	}, nil
}

// ComputeLayout splits the CPUs between servers and client: the plan's lists
// when given, else the first half of the online CPUs for servers and the rest
// for the client (on a 1-CPU host both share it).
func ComputeLayout(serverSpec, clientSpec string, online []int) (Layout, error) {
	var l Layout
	var err error
	if serverSpec != "" {
		if l.ServerCPUs, err = sysctl.ParseCPUList(serverSpec); err != nil {
			return l, fmt.Errorf("host.server_cpus: %w", err)
		}
	}
	if clientSpec != "" {
		if l.ClientCPUs, err = sysctl.ParseCPUList(clientSpec); err != nil {
			return l, fmt.Errorf("host.client_cpus: %w", err)
		}
	}
	half := max(1, len(online)/2)
	if len(l.ServerCPUs) == 0 {
		l.ServerCPUs = append([]int(nil), online[:half]...)
	}
	if len(l.ClientCPUs) == 0 {
		taken := map[int]bool{}
		for _, c := range l.ServerCPUs {
			taken[c] = true
		}
		for _, c := range online {
			if !taken[c] {
				l.ClientCPUs = append(l.ClientCPUs, c)
			}
		}
		if len(l.ClientCPUs) == 0 {
			l.ClientCPUs = append([]int(nil), online...)
		}
	}
	on := map[int]bool{}
	for _, c := range online {
		on[c] = true
	}
	for _, c := range append(append([]int(nil), l.ServerCPUs...), l.ClientCPUs...) {
		if !on[c] {
			return l, fmt.Errorf("CPU %d is not online here (online: %s)", c, sysctl.FormatCPUList(online))
		}
	}
	return l, nil
}

// HostFacts collects what the report prints about the machine.
func HostFacts(fs procstat.FS, p *plan.Plan, l Layout) result.Host {
	h := result.Host{Go: runtime.Version(), ServerCPUs: sysctl.FormatCPUList(l.ServerCPUs), ClientCPUs: sysctl.FormatCPUList(l.ClientCPUs)}
	if info, err := procstat.HostInfo(fs); err == nil {
		h.Kernel, h.CPUModel, h.Cores, h.MemTotal = info.Kernel, info.CPUModel, info.Cores, info.MemTotal
	}
	h.NoFileSoft, h.NoFileHard = sysctl.NoFile()
	h.Sysctl = map[string]string{}
	keys := append([]string(nil), ReportedSysctls...)
	for k := range p.Host.Sysctl {
		keys = append(keys, k)
	}
	sfs := sysctl.FS{Root: filepath.Join(fs.Root, "sys")}
	for _, k := range keys {
		if v, err := sfs.Get(k); err == nil {
			h.Sysctl[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return h
}

// ReportedSysctls are recorded with every run: they bound what a run can do.
var ReportedSysctls = []string{
	"net.ipv4.ip_local_port_range",
	"net.core.somaxconn",
	"net.ipv4.tcp_max_syn_backlog",
	"net.ipv4.tcp_tw_reuse",
	"fs.file-max",
	"fs.nr_open",
}

type runner struct {
	o     Options
	plan  *plan.Plan
	run   *result.Run
	mu    sync.Mutex
	abort context.CancelCauseFunc
}

var errAborted = errors.New("aborted")

// serverAddrs returns the listen addresses of the i-th server: each server
// gets its own port range so TIME_WAIT sockets of one never starve the next.
func serverAddrs(p *plan.Plan, i int, srv plan.Server) []string {
	if len(srv.Command) > 0 || len(srv.Addrs) > 0 {
		return srv.Addrs
	}
	base := p.Defaults.BasePort + i*p.Defaults.Ports
	out := make([]string, p.Defaults.Ports)
	for k := range out {
		out[k] = joinHostPort(p.Defaults.Host, base+k)
	}
	return out
}

func joinHostPort(h string, port int) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]:" + strconv.Itoa(port)
	}
	return h + ":" + strconv.Itoa(port)
}

func (e *runner) serverArgv(i int, srv plan.Server, addrs []string) []string {
	if len(srv.Command) > 0 {
		return srv.Command
	}
	fw := srv.Framework
	if fw == "" {
		fw = srv.Name
	}
	argv := []string{e.o.Exe, "serve", "--framework", fw, "--path", srv.Path,
		"--payload", strconv.Itoa(planPayload(e.plan)), "--addrs", strings.Join(addrs, ",")}
	keys := make([]string, 0, len(srv.Options))
	for k := range srv.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		argv = append(argv, "--opt", k+"="+srv.Options[k])
	}
	return argv
}

// planPayload is the payload of the plan's first phase that sends
// messages (a buffer-size hint for servers), or scenarios.DefaultPayload.
func planPayload(p *plan.Plan) int {
	specs := make([]scenarios.Phase, len(p.Phases))
	for i, ph := range p.Phases {
		specs[i] = ph.Spec
	}
	return scenarios.PlanPayload(specs)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func (e *runner) logPath(name string) string {
	if e.o.OutDir == "" {
		return ""
	}
	return filepath.Join(e.o.OutDir, "server-"+unsafeName.ReplaceAllString(name, "_")+".log")
}

func (e *runner) add(r result.Result) {
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
	if len(srv.Command) > 0 {
		return "custom"
	}
	if srv.Framework != "" {
		return srv.Framework
	}
	return srv.Name
}

// efficiency fills a kind's EER and the CPU seconds each side spent per
// million messages: the figures that show whether the client could measure
// this server at all.
func efficiency(m metrics.Values, eff scenarios.Efficiency, server, client procstat.Summary) {
	rate, ok := m[eff.Rate].(float64)
	if !ok {
		return // the phase failed before it measured anything
	}
	m[eff.EER] = float64(0)
	if server.CPUAvg > 0 {
		m[eff.EER] = rate / server.CPUAvg
	}
	if n := m.Int(eff.Count); n > 0 {
		m["client_cpu_per_1m"] = client.CPUSeconds / float64(n) * 1e6
		m["server_cpu_per_1m"] = server.CPUSeconds / float64(n) * 1e6
	}
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
	addrs := serverAddrs(e.plan, i, srv)
	if err := portsFree(addrs); err != nil {
		e.failRest(srv, 0, err.Error(), "")
		return
	}
	proc, err := launch.Start(launch.Spec{
		Argv:    e.serverArgv(i, srv, addrs),
		LogPath: e.logPath(srv.Name),
		CPUs:    e.o.Layout.ServerCPUs,
	})
	if err != nil {
		e.failRest(srv, 0, "server failed to start: "+err.Error(), "")
		return
	}
	grace := e.plan.Defaults.StopGrace.D()
	defer func() {
		if err := proc.Stop(grace); err != nil {
			e.o.Notice("%s: %v", srv.Name, err)
		}
	}()
	e.o.Notice("%s: started pid %d on %s (CPUs %s)", srv.Name, proc.Pid, strings.Join(addrs, ","), sysctl.FormatCPUList(e.o.Layout.ServerCPUs))
	if err := WaitReady(ctx, proc, addrs, srv.Path, e.plan.Defaults.ReadyTime.D()); err != nil {
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
	defer func() {
		if err := proc.Stop(grace); err != nil {
			e.o.Notice("%s: %v", srv.Name, err)
		}
	}()

	mem := e.memReader(proc.Pid, drv)
	base := mem()
	for k, ph := range e.plan.Phases {
		if ctx.Err() != nil {
			e.failRest(srv, k, stopReason(ctx), "")
			return
		}
		r, died := e.phase(ctx, srv, ph, proc, drv, &scenarios.Env{Driver: drv, Mem: mem, Base: base})
		e.add(r)
		if died {
			e.failRest(srv, k+1, "skipped: server "+proc.ExitReason(), proc.Tail(2048))
			return
		}
	}
}

// driver opens the load-generating client for one server: in this process,
// or as shard processes when the plan asks for them.
func (e *runner) driver(srv plan.Server, addrs []string) (Driver, error) {
	co := client.Options{
		Targets:     addrs,
		Path:        srv.Path,
		SourceAddrs: e.plan.Client.SourceAddrs,
		Loops:       loops(e.plan, e.o.Layout),
		NoDelay:     e.plan.Defaults.NoDelay == nil || *e.plan.Defaults.NoDelay,
	}
	n := e.shards()
	if n == 0 {
		return e.o.NewDriver(co)
	}
	co.SourceAddrs = nil
	co.Loops = max(1, e.plan.Client.Loops)
	sources := make([][]string, n)
	for i := range sources {
		sources[i] = shardSources(e.plan.Client.SourceAddrs, i, n)
	}
	g, err := shard.Start(shard.Spec{
		Exe: e.o.Exe, N: n, Client: co, Sources: sources, CPUs: e.o.Layout.ClientCPUs,
		LogDir: e.o.OutDir, Name: unsafeName.ReplaceAllString(srv.Name, "_"), Grace: e.plan.Defaults.StopGrace.D(),
	})
	if err != nil {
		return nil, err
	}
	e.o.Notice("%s: %d client shards, pids %v", srv.Name, n, g.Pids())
	return g, nil
}

func (e *runner) shards() int {
	_, hard := sysctl.NoFile()
	return Shards(e.plan, hard)
}

// usableClientCPU is how many cores the client can keep busy: its event
// loops (over every shard) bounded by the CPUs it is pinned to.
func (e *runner) usableClientCPU() int {
	if n := e.shards(); n > 0 {
		return min(n*max(1, e.plan.Client.Loops), len(e.o.Layout.ClientCPUs))
	}
	return min(loops(e.plan, e.o.Layout), len(e.o.Layout.ClientCPUs))
}

// memReader returns a func reading the RSS of the server and of every
// client process (this one and any shards).
func (e *runner) memReader(server int, drv Driver) func() scenarios.Mem {
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
		m := scenarios.Mem{Server: rss(server)}
		for _, pid := range clients {
			m.Client += rss(pid)
		}
		return m
	}
}

// pidser is a Driver with processes of its own (shards) to sample.
type pidser interface{ Pids() []int }

// phase runs one phase with sampling; died reports that the server exited.
func (e *runner) phase(ctx context.Context, srv plan.Server, ph plan.Phase, proc *launch.Process, drv Driver, env *scenarios.Env) (result.Result, bool) {
	res := result.Result{Server: srv.Name, Framework: e.framework(srv), Phase: ph.Name, Kind: ph.Kind, Metrics: metrics.Values{}}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-proc.Done():
			cancel()
		case <-pctx.Done():
		}
	}()

	interval := e.plan.Defaults.Sample.D()
	ssrv := procstat.NewSampler(e.o.Proc, proc.Pid, interval)
	clientPids := []int{os.Getpid()}
	if ps, ok := drv.(pidser); ok {
		clientPids = append(clientPids, ps.Pids()...)
	}
	var scli []*procstat.Sampler
	for _, pid := range clientPids {
		scli = append(scli, procstat.NewSampler(e.o.Proc, pid, interval))
	}
	pr := &client.Progress{}
	env.Progress = pr
	stopProgress := e.progress(ph.Name, srv.Name, pr)
	ssrv.Start()
	for _, s := range scli {
		s.Start()
	}
	out, err := ph.Spec.Run(pctx, env)
	sv := ssrv.Stop()
	var cv procstat.Summary
	for _, s := range scli {
		x := s.Stop()
		cv.CPUAvg += x.CPUAvg
		cv.CPUSeconds += x.CPUSeconds
		cv.MemMax += x.MemMax
	}
	stopProgress()

	m := out.Metrics
	if m == nil {
		m = metrics.Values{}
	}
	m["cpu_min"], m["cpu_avg"], m["cpu_max"] = sv.CPUMin, sv.CPUAvg, sv.CPUMax
	m["mem_min"], m["mem_avg"], m["mem_max"] = sv.MemMin, sv.MemAvg, sv.MemMax
	m["server_cpu_s"] = sv.CPUSeconds
	m["client_cpu_avg"] = cv.CPUAvg
	m["client_cpu_s"] = cv.CPUSeconds
	m["client_mem_max"] = cv.MemMax
	usable := e.usableClientCPU()
	m["client_cpus"] = int64(len(e.o.Layout.ClientCPUs))
	clientShare := cv.CPUAvg / (100 * float64(usable))
	serverShare := sv.CPUAvg / (100 * float64(max(1, len(e.o.Layout.ServerCPUs))))
	bound := clientBound(clientShare, serverShare)
	m["client_bound"] = bound
	if k, ok := scenarios.Lookup(ph.Kind); ok && k.Efficiency != nil {
		efficiency(m, *k.Efficiency, sv, cv)
	}
	res.Metrics = m
	res.Timeline = out.Timeline
	res.Warnings = out.Warnings
	switch {
	case bound:
		res.Warnings = append(res.Warnings, fmt.Sprintf("client-bound: client CPU %.0f%% of %d usable core(s), server %.0f%%; this row measures the client", cv.CPUAvg, usable, sv.CPUAvg))
	case clientShare >= ClientNearThreshold:
		res.Warnings = append(res.Warnings, fmt.Sprintf("client CPU %.0f%% of %d usable core(s) (server %.0f%%): close to measuring itself", cv.CPUAvg, usable, sv.CPUAvg))
	}

	// A killed server's sockets reset before its exit is reaped: when the
	// phase went wrong, give the exit a moment to show, so the row names
	// the real cause.
	if err != nil || out.Failed {
		select {
		case <-proc.Done():
		case <-time.After(deathGrace):
		}
	}
	died := false
	if exited, _ := proc.Exited(); exited && !proc.Stopping() {
		died = true
	}
	switch {
	case died:
		res.OK = false
		res.Error = "server " + proc.ExitReason() + " during the phase"
		res.ServerLog = proc.Tail(2048)
	case err != nil && ctx.Err() != nil:
		res.OK = false
		res.Error = stopReason(ctx)
	case err != nil:
		res.OK = false
		res.Error = err.Error()
	case out.Failed:
		res.OK = false
		res.Error = out.Error
	default:
		res.OK = true
	}
	if ctx.Err() != nil && res.OK {
		res.OK = false
		res.Error = stopReason(ctx)
	}
	e.o.Notice("%s: %s done (%s)", srv.Name, ph.Name, summary(res))
	return res, died
}

func summary(r result.Result) string {
	if !r.OK {
		return "FAILED: " + r.Error
	}
	parts := []string{}
	if v, ok := r.Metrics["tps"].(float64); ok {
		parts = append(parts, fmt.Sprintf("%.0f/s", v))
	}
	if v, ok := r.Metrics["achieved_rate"].(float64); ok {
		parts = append(parts, fmt.Sprintf("%.0f/s sent, %d lost, %d late", v, r.Metrics.Int("lost"), r.Metrics.Int("late")))
	}
	if v, ok := r.Metrics["p99"].(time.Duration); ok {
		parts = append(parts, "p99 "+v.String())
	}
	return strings.Join(parts, ", ")
}

// progress starts the live line; the returned func stops and clears it.
func (e *runner) progress(phase, server string, pr *client.Progress) func() {
	w := e.o.Progress
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		var lastN int64
		last := start
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case now := <-t.C:
				n := pr.Done.Load()
				rate := float64(n-lastN) / now.Sub(last).Seconds()
				lastN, last = n, now
				fmt.Fprintf(w, "\r\033[K%s %s: %d/%d  %.0f/s  %s", phase, server, n, pr.Total.Load(), rate, now.Sub(start).Truncate(100*time.Millisecond))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// WaitReady polls until every address accepts a WebSocket upgrade, the
// process exits, ctx ends, or timeout passes.
func WaitReady(ctx context.Context, proc *launch.Process, addrs []string, path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for _, a := range addrs {
		for {
			if exited, _ := proc.Exited(); exited {
				return fmt.Errorf("server %s before accepting connections", proc.ExitReason())
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if last = probe(a, path); last == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not accept a WebSocket upgrade within %s: %w", a, timeout, last)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

var errNotUpgraded = errors.New("no 101 response")
