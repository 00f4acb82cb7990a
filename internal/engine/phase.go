package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/live"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// deathGrace is how long a failed phase waits for the server's exit to be
// reaped before deciding whether the server died.
const deathGrace = 500 * time.Millisecond

// exitPoll is how often exitWithin reads a server's state while it waits.
const exitPoll = 10 * time.Millisecond

// phase runs one phase with sampling; gone says why the server is gone
// ("server pid 123 exited", "the server appears to have died"), "" while
// it runs.
func (e *runner) phase(ctx context.Context, srv plan.Server, ph plan.Phase, proc serverProc, sres resources, drv Driver, watch *blindWatch, env *scenarios.Env) (res result.Result, gone string) {
	res = result.Result{Server: srv.Name, Framework: e.framework(srv), Phase: ph.Name, Kind: ph.Kind, Metrics: metrics.Values{},
		ServerResources: sres.how}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-proc.Done():
			cancel()
		case <-pctx.Done():
		}
	}()

	w := e.newWindow(sres, drv)
	pr := &client.Progress{}
	env.Progress = pr
	if e.o.Live != nil {
		pr.Live = &client.Live{}
		end := e.o.Live.Begin(live.Phase{Server: srv.Name, Phase: ph.Name, Kind: ph.Kind}, pr.Live, sres.livePID(), drv.Conns())
		defer func() { end(drv.Conns()) }()
	}
	env.Window = e.stepWindow(sres, drv)
	blind := watch != nil && watch.begin(proc, drv.Conns())
	_, unwatched := proc.(running)
	switch {
	case blind:
		env.ServerGone = watch.serverGone(proc)
	case !unwatched:
		env.ServerGone = func(wait time.Duration) string { return exitWithin(proc, wait) }
	}
	stopProgress := e.progress(ph.Name, srv.Name, pr)
	soak := e.soakStart(ph.Kind, sres, drv, pr)
	w.start()
	faults := e.startFaults(pctx, srv, ph, proc)
	out, err := ph.Spec.Run(pctx, env)
	sv, cv, si := w.stop()
	stopProgress()

	m := e.phaseResult(&res, ph.Kind, out, sv, cv, si, drv)
	faults(&res)
	failed, failure, faulted := e.judge(srv, ph, m, out, &res)

	death := ""
	switch {
	case serverDied(proc, err != nil || failed || faulted):
		death, gone = "server "+proc.ExitReason()+" during the phase", "server "+proc.ExitReason()
		res.ServerLog = proc.Tail(2048)
	case blind:
		if death = watch.died(ctx, drv.Conns(), err != nil || failed || faulted); death != "" {
			gone = "the server appears to have died"
		}
	}
	res.OK, res.Error = verdict(ctx, death, err, failed, failure)
	if soak != nil {
		e.soakEnd(pctx, soak, &res, res.OK)
	}
	e.o.Notice("%s: %s done (%s)", srv.Name, ph.Name, summary(res))
	return res, gone
}

// phaseResult fills res from what the phase's run and its window measured:
// the kind's metrics plus the window's (CPU, memory, softirqs, who was
// bound), the shards, timeline, histogram and warnings. It returns the
// metrics.
func (e *runner) phaseResult(res *result.Result, kind string, out scenarios.Outcome, sv serverCost, cv clientCost, si softirqs, drv Driver) metrics.Values {
	m := out.Metrics
	if m == nil {
		m = metrics.Values{}
	}
	var eff *scenarios.Efficiency
	if k, ok := scenarios.Lookup(kind); ok {
		eff = k.Efficiency
		res.Throughput = k.Throughput.Metric
	}
	warning := windowMetrics(m, sv, cv, si, e.o.Layout, e.usableClientCPU(), eff)
	behindMetrics(m, out.Behind, sv, cv, e.usableClientCPU())
	markBound(m)
	res.Metrics = m
	res.ClientShards = clientShards(cv, m, e.o.Layout)
	res.StartSkew = startSkew(drv)
	res.Timeline = out.Timeline
	res.Histogram = out.Histogram
	res.Info = out.Info
	res.Detail = out.Detail
	res.Steps, res.Stop = out.Steps, out.Stop
	res.Warnings = append(out.AllWarnings(m), serverWarnings(warning, sv.sum)...)
	if warning := e.reconnectMetrics(m, drv); warning != "" {
		res.Warnings = append(res.Warnings, warning)
	}
	return m
}

// judge applies the verdict rule (scenarios.Judge) to a phase's
// metrics: the kind's own failure first, then every fault over what the
// plan allows. Faults within their allowance, or left to an assertion,
// become the row's warnings. faulted reports whether any fault counted
// units, allowed or not: a server's death is never allowed, so the
// engine looks for one then too.
func (e *runner) judge(srv plan.Server, ph plan.Phase, m metrics.Values, out scenarios.Outcome, res *result.Result) (failed bool, failure string, faulted bool) {
	var gated func(string) bool
	if e.o.Gated != nil {
		gated = func(metric string) bool { return e.o.Gated(srv.Name, ph.Name, ph.Kind, metric) }
	}
	v := scenarios.Judge(scenarios.PhaseFaults(ph.Kind, ph.Spec), ph.Allow, m, out.Reasons, gated)
	res.Warnings = append(res.Warnings, v.Notes...)
	why := v.Failures
	if len(why) > 0 && len(ph.Faults) > 0 {
		why[len(why)-1] += fmt.Sprintf(" (the phase restarts the server at %s: allow what that may cost, e.g. allow: {dropped: 100%%})", ph.Faults[0].At)
	}
	if out.Failed {
		why = append([]string{out.Error}, why...)
	}
	return len(why) > 0, strings.Join(why, "; "), len(v.Failures)+len(v.Notes) > 0
}

// serverWarnings are a row's warnings about its measurement: the
// client-bound one (when not ""), a wrapper's idling, the server's
// resources that could not be read.
func serverWarnings(warning string, sv *procstat.Summary) []string {
	var out []string
	if warning != "" {
		out = append(out, warning)
	}
	if sv != nil {
		if wrapper := wrapperWarning(*sv); wrapper != "" {
			out = append(out, wrapper)
		}
		if sv.Err != nil && !errors.Is(sv.Err, procstat.ErrExited) {
			out = append(out, "server resources: "+sv.Err.Error())
		}
	}
	return out
}

// serverDied reports whether the server exited on its own during the
// phase. Every phase asks when it ends, whatever its result: a phase
// shorter than the pid watcher's poll, or one whose failures the server's
// death explains, must not pass for the server's answers. A killed
// server's sockets reset before its exit can be seen: when the phase went
// wrong, give the exit a moment to show, so the row names the real cause.
func serverDied(proc serverProc, wentWrong bool) bool {
	wait := time.Duration(0)
	if wentWrong {
		wait = deathGrace
	}
	return exitWithin(proc, wait) != ""
}

// exitWithin returns why the server's process exited, if it has or does
// within wait, reading it now (not only at its watcher's last poll); ""
// while it runs, or when wsplan itself is stopping it.
func exitWithin(proc serverProc, wait time.Duration) string {
	deadline := time.Now().Add(wait)
	for {
		if exited, _ := proc.Exited(); exited {
			if proc.Stopping() {
				return ""
			}
			return proc.ExitReason()
		}
		left := time.Until(deadline)
		if left <= 0 {
			return ""
		}
		select {
		case <-proc.Done():
		case <-time.After(min(left, exitPoll)):
		}
	}
}

// verdict decides a phase's row: the server's death first (why, ""
// when none), then an interrupt or abort, then the phase's own error or
// failure.
func verdict(ctx context.Context, death string, err error, failed bool, failure string) (ok bool, reason string) {
	switch {
	case death != "":
		return false, death
	case err != nil && ctx.Err() != nil:
		return false, stopReason(ctx)
	case err != nil:
		return false, err.Error()
	case failed:
		return false, failure
	case ctx.Err() != nil:
		return false, stopReason(ctx)
	}
	return true, ""
}
