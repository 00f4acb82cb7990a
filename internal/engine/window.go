package engine

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/shard"
	"github.com/wsplan/wsplan/scenarios"
)

// ClientBoundThreshold is the share of the client's usable CPU above which a
// result is flagged client_bound (when the server was not busier still):
// the client, not the server, set the pace.
const ClientBoundThreshold = 0.9

// ClientNearThreshold is the share above which a result carries a warning
// that the client came close to measuring itself.
const ClientNearThreshold = 0.8

// ServerBoundThreshold is the share of the CPUs wsplan pinned the server
// to above which a result is flagged server_bound (when the client was not
// bound): the server set the pace.
const ServerBoundThreshold = 0.9

// window samples CPU and memory of the server (when it can be read) and
// of every client process (this one and any shards) over exactly one phase.
type window struct {
	server *procstat.Sampler // nil: the server's resources are not measured
	// pinned is how many CPUs wsplan pinned the server to (a server it
	// started); 0 when it did not (pid:, metrics_url:).
	pinned  int
	clients []*procstat.Sampler
	// shards, when the client is a shard group, is where its shards'
	// own costs are read (each shard measures itself: shard.Cost);
	// remote when they run on other hosts.
	shards shardCoster
	mark   int
	remote bool

	// Loopback delivery (see softirqs): the softirq time of the server's
	// and the client's CPUs at the start; cpus nil = not attributed.
	proc           procstat.FS
	srvCPUs, cCPUs []int
	srv0, cli0     time.Duration
}

// softirqs is the softirq time each side's CPUs spent over a window. On
// loopback a write delivers its packet into the receiving socket, and wakes
// the reader, in the writer's softirq: the client's CPU time includes the
// server's receive path and wake-ups, and the other way round. With a
// network between them each side would pay for its own. wsplan moves it
// back (client_cpu_per_1m_net, server_cpu_per_1m_net) when it can tell the
// sides apart: the server and the client pinned to disjoint CPU sets of
// this host, the server's resources read on this host, no remote shards.
type softirqs struct {
	ok             bool
	server, client time.Duration
}

// newWindow prepares the samplers of one phase; start starts them.
func (e *runner) newWindow(res resources, drv Driver) *window {
	interval := e.plan.Defaults.Sample.D()
	w := &window{server: res.sampler(e.o.Proc, interval)}
	if res.how == result.ResourcesTree {
		w.pinned = len(e.o.Layout.ServerCPUs)
	}
	w.clients = append(w.clients, procstat.NewSampler(e.o.Proc, os.Getpid(), interval))
	if sc, ok := drv.(shardCoster); ok {
		w.shards = sc
		w.remote = len(e.plan.Client.Remote) > 0 || e.plan.Client.Kubernetes != nil
	}
	l := e.o.Layout
	if w.server != nil && (res.how == result.ResourcesTree || res.how == result.ResourcesPID) &&
		len(e.plan.Client.Remote) == 0 && e.plan.Client.Kubernetes == nil && disjoint(l.ServerCPUs, l.ClientCPUs) {
		w.proc, w.srvCPUs, w.cCPUs = e.o.Proc, l.ServerCPUs, l.ClientCPUs
	}
	return w
}

// disjoint reports whether a and b are both non-empty and share no CPU.
func disjoint(a, b []int) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	for _, x := range a {
		if slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// softirq reads both sides' softirq time; ok false if either read failed.
func (w *window) softirq() (srv, cli time.Duration, ok bool) {
	srv, err1 := w.proc.ReadSoftirq(w.srvCPUs)
	cli, err2 := w.proc.ReadSoftirq(w.cCPUs)
	return srv, cli, err1 == nil && err2 == nil
}

func (w *window) start() {
	if w.srvCPUs != nil {
		var ok bool
		if w.srv0, w.cli0, ok = w.softirq(); !ok {
			w.srvCPUs = nil
		}
	}
	if w.server != nil {
		w.server.Start()
	}
	for _, s := range w.clients {
		s.Start()
	}
	if w.shards != nil {
		w.mark = w.shards.CostMark()
	}
}

// shardCoster is a Driver whose client processes (shards) measure their
// own cost over every phase they run (shard.Group).
type shardCoster interface {
	CostMark() int
	CostsSince(mark int) []shard.Cost
}

// clientCost is the client's CPU and memory over a window: sum over every
// client process (this one and each shard), and each shard's own figures;
// remote when the shards run on other hosts (their cores are not this
// host's client CPUs).
type clientCost struct {
	sum    procstat.Summary
	shards []shard.Cost
	remote bool
	// series are the CPU readings of each client process of this host
	// (procstat.Summary.CPU), waits whether each holds its run-queue
	// wait; shards keep none.
	series []procstat.Series
	waits  []bool
}

// serverCost is the server's CPU and memory over a window: sum is nil when
// they are not measured; pinned is how many CPUs wsplan pinned it to (0:
// not known, a server wsplan did not start).
type serverCost struct {
	sum    *procstat.Summary
	pinned int
}

// stop ends the window and returns the server's summary and the client's,
// summed over its processes (CPU average and seconds, peak memory) with
// each shard's own figures.
func (w *window) stop() (sc serverCost, cc clientCost, si softirqs) {
	if w.srvCPUs != nil {
		if srv, cli, ok := w.softirq(); ok {
			si = softirqs{ok: true, server: srv - w.srv0, client: cli - w.cli0}
		}
	}
	sc.pinned = w.pinned
	if w.server != nil {
		sv := w.server.Stop()
		sc.sum = &sv
	}
	for _, s := range w.clients {
		x := s.Stop()
		cc.sum.CPUAvg += x.CPUAvg
		cc.sum.CPUSeconds += x.CPUSeconds
		cc.sum.MemMax += x.MemMax
		cc.series, cc.waits = append(cc.series, x.CPU), append(cc.waits, x.Waits)
	}
	if w.shards != nil {
		cc.shards, cc.remote = w.shards.CostsSince(w.mark), w.remote
		for _, c := range cc.shards {
			cc.sum.CPUAvg += c.CPUAvg
			cc.sum.CPUSeconds += c.CPUSeconds
			cc.sum.MemMax += c.MemMax
		}
	}
	return sc, cc, si
}

// WrapperIdleShare is the share of a server tree's CPU time below which
// the started process itself counts as idle while its descendants work: a
// wrapper (sh -c, npm, a supervisor) around the real server.
const WrapperIdleShare = 0.05

// wrapperWarning returns a warning when the server's root process idled
// while its descendants did the work, else "".
func wrapperWarning(sv procstat.Summary) string {
	if sv.Procs < 2 || sv.CPUSeconds < 0.05 || sv.RootCPUSeconds > WrapperIdleShare*sv.CPUSeconds {
		return ""
	}
	return fmt.Sprintf("the server's started process used %.2f of the %.2f CPU-seconds of its %d processes: it is a wrapper; the figures are the whole process tree's", sv.RootCPUSeconds, sv.CPUSeconds, sv.Procs)
}

// windowMetrics writes the metrics every phase reports (metrics.Common),
// and the kind's efficiency figures when eff is set, into m. sc.sum is nil
// when the server's resources are not measured: then its metrics
// (metrics.ServerResource) are left out. usable is how many cores the
// client can keep busy on this host. The client is bound when its
// processes on this host saturate their usable cores, or when any shard
// saturates its own (a remote shard's cores are its host's), counting the
// time it waited for a CPU (a shard on a busy CPU wanted what it did not
// get); the server is bound when it was not and the server's processes
// used ServerBoundThreshold of the CPUs wsplan pinned them to. It returns
// a warning when the client was bound or close to it, naming the shards
// that were, else "".
func windowMetrics(m metrics.Values, sc serverCost, cc clientCost, si softirqs, l Layout, usable int, eff *scenarios.Efficiency) (warning string) {
	var sv procstat.Summary
	if sc.sum != nil {
		sv = *sc.sum
		m[metrics.CPUMin], m[metrics.CPUAvg], m[metrics.CPUMax] = sv.CPUMin, sv.CPUAvg, sv.CPUMax
		m[metrics.MemMin], m[metrics.MemAvg], m[metrics.MemMax] = sv.MemMin, sv.MemAvg, sv.MemMax
		m[metrics.ServerCPUSecs] = sv.CPUSeconds
		m[metrics.ServerProcs] = int64(sv.Procs)
	}
	cv := cc.sum
	m[metrics.ClientCPUAvg] = cv.CPUAvg
	m[metrics.ClientCPUSecs] = cv.CPUSeconds
	m[metrics.ClientMemMax] = cv.MemMax
	m[metrics.ClientCPUs] = int64(len(l.ClientCPUs))
	serverShare := sv.CPUAvg / (100 * float64(max(1, len(l.ServerCPUs))))
	bound, near := clientLoad(cc, usable, serverShare)
	m[metrics.ClientBound] = len(bound) > 0
	m[metrics.ServerCPUs] = int64(sc.pinned)
	m[metrics.ServerBound] = len(bound) == 0 && serverBound(sc)
	if eff != nil {
		efficiency(m, *eff, sc.sum, cv, si)
	}
	switch {
	case len(bound) > 0:
		return fmt.Sprintf("client-bound: %s, server %.0f%%; this row measures the client", strings.Join(bound, ", "), sv.CPUAvg)
	case len(near) > 0:
		return fmt.Sprintf("%s (server %.0f%%): close to measuring itself", strings.Join(near, ", "), sv.CPUAvg)
	}
	return ""
}

// clientLoad says which client processes were bound (clientBound) and
// which close to it (ClientNearThreshold): this host's processes against
// their usable cores, each shard against its own.
func clientLoad(cc clientCost, usable int, serverShare float64) (bound, near []string) {
	cv := cc.sum
	if !cc.remote {
		share := cv.CPUAvg / (100 * float64(usable))
		if clientBound(share, serverShare) {
			bound = append(bound, fmt.Sprintf("client CPU %.0f%% of %d usable core(s)", cv.CPUAvg, usable))
		} else if share >= ClientNearThreshold {
			near = append(near, fmt.Sprintf("client CPU %.0f%% of %d usable core(s)", cv.CPUAvg, usable))
		}
	}
	for _, c := range cc.shards {
		share := c.Demand()
		what := fmt.Sprintf("%s CPU %.0f%% of %d usable core(s)", c.Shard, c.CPUAvg, c.Usable)
		if c.WaitAvg >= 5 {
			what = fmt.Sprintf("%s CPU %.0f%% (+%.0f%% waiting for a CPU) of %d usable core(s)", c.Shard, c.CPUAvg, c.WaitAvg, c.Usable)
		}
		switch {
		case clientBound(share, serverShare):
			bound = append(bound, what)
		case share >= ClientNearThreshold && cc.remote:
			near = append(near, what)
		}
	}
	return bound, near
}

// serverBound reports whether the server's processes used
// ServerBoundThreshold of the CPUs wsplan pinned them to; false when it
// is not measured or its cores are not known.
func serverBound(sc serverCost) bool {
	return sc.sum != nil && sc.pinned > 0 && sc.sum.CPUAvg >= ServerBoundThreshold*100*float64(sc.pinned)
}

// clientShards are the shards' own figures as a result carries them,
// each flagged when it alone saturated its cores.
func clientShards(cc clientCost, m metrics.Values, l Layout) []result.ClientShard {
	serverShare := m.Float(metrics.CPUAvg) / (100 * float64(max(1, len(l.ServerCPUs))))
	var out []result.ClientShard
	for _, c := range cc.shards {
		out = append(out, result.ClientShard{Name: c.Shard, CPUAvg: c.CPUAvg, WaitAvg: c.WaitAvg, CPUSeconds: c.CPUSeconds, MemMax: c.MemMax,
			Usable: c.Usable, Bound: clientBound(c.Demand(), serverShare)})
	}
	return out
}

// clientBound decides whether the client set the pace: its CPU (share of
// the cores it can use) reached ClientBoundThreshold and was not clearly
// below the server's share of its cores (then the server was the
// bottleneck, both being near saturation).
func clientBound(clientShare, serverShare float64) bool {
	return clientShare >= ClientBoundThreshold && clientShare >= serverShare-0.05
}

// efficiency fills a kind's EER and the CPU each side spent per unit
// measured (eff.Figures: per million messages, per handshake …): the
// figures that show whether the client could measure this server at all.
//
// server is nil when the server's resources are not measured: only the
// client's figure is written then.
//
// With si (softirqs), the same figures with loopback delivery moved to
// its receiver: the softirq time of the client's CPUs is the server's,
// the server CPUs' the client's (each side never below 0).
func efficiency(m metrics.Values, eff scenarios.Efficiency, server *procstat.Summary, client procstat.Summary, si softirqs) {
	rate, ok := m[eff.Rate].(float64)
	if !ok {
		return // the phase failed before it measured anything
	}
	if server != nil && eff.EER != "" {
		m[eff.EER] = float64(0)
		if server.CPUAvg > 0 {
			m[eff.EER] = rate / server.CPUAvg
		}
	}
	n := m.Int(eff.Count)
	if n <= 0 {
		return
	}
	f := eff.Figures()
	per := func(seconds float64) float64 { return seconds / float64(n) * f.Scale }
	m[f.Client] = per(client.CPUSeconds)
	if server == nil {
		return
	}
	m[f.Server] = per(server.CPUSeconds)
	if si.ok && f.ClientNet != "" {
		moved := si.client.Seconds() - si.server.Seconds()
		m[f.ClientNet] = per(max(0, client.CPUSeconds-moved))
		m[f.ServerNet] = per(max(0, server.CPUSeconds+moved))
	}
}
