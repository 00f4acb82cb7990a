package engine

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/launch"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// deathGrace is how long a failed phase waits for the server's exit to be
// reaped before deciding whether the server died.
const deathGrace = 500 * time.Millisecond

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
