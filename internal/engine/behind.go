package engine

import (
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/scenarios"
)

// behindMetrics writes each side's CPU over spans, the stretches of a
// phase in which a kind's sending was behind its timetable
// (scenarios.Outcome.Behind), into m (metrics.BehindDefs), for
// scenarios.KeptUp to name the side that could not keep up: the server's
// when it is measured, the client's (this host's processes over the
// spans, each shard with its whole-phase average: shards keep no series)
// and the cores it can keep busy (usable; remote shards: theirs). Nothing is written without
// spans (a kind that keeps no timetable).
func behindMetrics(m metrics.Values, spans []scenarios.Span, sc serverCost, cc clientCost, usable int) {
	if len(spans) == 0 {
		return
	}
	if sc.sum != nil {
		m[metrics.CPUBehind] = over(sc.sum.CPU, spans)
	}
	cpu, shards, remote := 0.0, 0.0, 0
	for _, s := range cc.series {
		cpu += over(s, spans)
	}
	for _, c := range cc.shards {
		shards += c.CPUAvg
		remote += c.Usable
	}
	if cc.remote {
		// The client is its shards, on their hosts' cores.
		cpu, usable = shards, remote
	} else {
		cpu += shards
	}
	m[metrics.ClientCPUBehind] = cpu
	m[metrics.ClientCores] = int64(max(1, usable))
}

// over is a process's CPU over spans, percent of one core: the CPU time
// the series shows in them over the time of theirs it covers; 0 when it
// covers none.
func over(s procstat.Series, spans []scenarios.Span) float64 {
	var cpu, wall time.Duration
	for _, sp := range spans {
		c, w := s.Over(sp.From, sp.To)
		cpu += c
		wall += w
	}
	if wall <= 0 {
		return 0
	}
	return 100 * cpu.Seconds() / wall.Seconds()
}
