package engine

import (
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/scenarios"
)

// behindMetrics writes each side's CPU and run-queue wait over spans, the
// stretches of a phase in which a kind's sending was behind its timetable
// (scenarios.Outcome.Behind), into m (metrics.BehindDefs), for
// scenarios.KeptUp to name the side that could not keep up: the server's
// when it is measured, the client's (this host's processes over the
// spans, each shard with its whole-phase average: shards keep no series)
// and the cores it can keep busy (usable; remote shards: theirs). A wait
// is written only where every process's was read. Nothing is written
// without spans (a kind that keeps no timetable).
func behindMetrics(m metrics.Values, spans []scenarios.Span, sc serverCost, cc clientCost, usable int) {
	if len(spans) == 0 {
		return
	}
	if sc.sum != nil {
		cpu, wait := over(sc.sum.CPU, spans)
		m[metrics.CPUBehind] = cpu
		if sc.sum.Waits {
			m[metrics.CPUWaitBehind] = wait
		}
	}
	var cpu, wait, shardCPU, shardWait float64
	waits, remote := true, 0
	for i, s := range cc.series {
		c, w := over(s, spans)
		cpu, wait = cpu+c, wait+w
		waits = waits && i < len(cc.waits) && cc.waits[i]
	}
	for _, c := range cc.shards {
		shardCPU, shardWait = shardCPU+c.CPUAvg, shardWait+c.WaitAvg
		remote += c.Usable
	}
	if cc.remote {
		// The client is its shards, on their hosts' cores.
		cpu, wait, usable, waits = shardCPU, shardWait, remote, true
	} else {
		cpu, wait = cpu+shardCPU, wait+shardWait
	}
	m[metrics.ClientCPUBehind] = cpu
	if waits {
		m[metrics.ClientCPUWaitBehind] = wait
	}
	m[metrics.ClientCores] = int64(max(1, usable))
}

// markBound marks the side that could not keep up with the timetable as
// bound (client_bound or server_bound), when the phase fell behind it:
// the Verdict column then names the side its note names. The window's
// averages alone, the drain and the seconds that kept up included, can
// stay under the mark for the side that set the pace (an nbio server at
// 88% over the window, 100% of its core while behind).
func markBound(m metrics.Values) {
	if m.Dur(metrics.Behind) <= 0 {
		return
	}
	switch client, server := scenarios.BoundBehind(m); {
	case client:
		m[metrics.ClientBound], m[metrics.ServerBound] = true, false
	case server && !m.Bool(metrics.ClientBound):
		m[metrics.ServerBound] = true
	}
}

// over is a process's CPU and run-queue wait over spans, percent of one
// core: the times the series shows in them over the time of theirs it
// covers; 0 when it covers none.
func over(s procstat.Series, spans []scenarios.Span) (cpu, wait float64) {
	var c, w, wall time.Duration
	for _, sp := range spans {
		ci, wi, walli := s.Over(sp.From, sp.To)
		c, w, wall = c+ci, w+wi, wall+walli
	}
	if wall <= 0 {
		return 0, 0
	}
	return 100 * c.Seconds() / wall.Seconds(), 100 * w.Seconds() / wall.Seconds()
}
