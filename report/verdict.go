package report

// A row's verdict and the notes under a table: what failed, which side was
// bound, each shard's figures, the server log line a failure quotes.

import (
	"fmt"
	"strings"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

// resultNotes are the lines under a phase's table for one of its rows:
// its warnings, its client shards' figures, why it failed.
func resultNotes(res *result.Result) []string {
	var notes []string
	for _, warn := range res.Warnings {
		notes = append(notes, fmt.Sprintf("- %s%s: %s", varsPrefix(res), res.Server, oneLine(warn)))
	}
	if len(res.ClientShards) > 0 {
		notes = append(notes, fmt.Sprintf("- %s%s: client shards: %s", varsPrefix(res), res.Server, shardFigures(res.ClientShards)))
	}
	if !res.OK {
		why := oneLine(res.Error)
		if why == "" {
			why = "no reason recorded"
		}
		if last := lastLogLine(res.ServerLog); last != "" {
			why += " (server log: " + last + ")"
		}
		notes = append(notes, fmt.Sprintf("- %s%s: failed: %s", varsPrefix(res), res.Server, why))
	}
	return notes
}

// failedAsserts counts the failed assertions on one (combination,
// server, phase).
func failedAsserts(run *result.Run, r *result.Result) int {
	n := 0
	for _, a := range run.Assertions {
		if a.Server == r.Server && a.Phase == r.Phase && !a.Pass && result.SameVars(a.Vars, r.Vars) {
			n++
		}
	}
	return n
}

// clientCPU is the client's CPU over the phase, with " (bound)" when it was
// saturated.
func clientCPU(r row) string {
	v := r.res.Metrics
	bound := v.Bool(metrics.ClientBound)
	if _, ok := v[metrics.ClientCPUAvg]; !ok {
		if bound {
			return "(bound)"
		}
		return "-"
	}
	s := fmt.Sprintf("%.1f%%", v.Float(metrics.ClientCPUAvg)) + spread(r.res, metrics.ClientCPUAvg)
	if r.base != nil {
		if _, ok := r.base[metrics.ClientCPUAvg]; ok {
			s += change(r.res, r.baseRes, metrics.ClientCPUAvg)
		}
	}
	if bound {
		s += " (bound)"
	}
	return s
}

// verdict sums a row up; a failure comes first, client-bound is added to
// it. A row without either that the server bound says so instead of "ok":
// the server set the pace (metrics.ServerBound).
func verdict(r row) string {
	var parts []string
	switch {
	case !r.res.OK:
		msg := short(r.res.Error)
		if msg == "" {
			msg = "failed"
		}
		parts = append(parts, "FAIL: "+msg)
	case r.asserts > 0:
		parts = append(parts, "FAIL ("+plural(r.asserts, "assert")+")")
	}
	if r.res.Metrics.Bool(metrics.ClientBound) {
		parts = append(parts, "client-bound")
	}
	switch {
	case len(parts) > 0:
		return strings.Join(parts, "; ")
	case r.res.Metrics.Bool(metrics.ServerBound):
		return "server-bound"
	}
	return "ok"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// maxLogLine bounds the server log line a failure note quotes.
const maxLogLine = 200

// lastLogLine returns the line of a server log tail a failure note
// quotes: a Go runtime's "panic: " or "fatal error: " line when there is
// one (the stack below it says less), else the last non-blank line (what
// a server that gave up says last is usually why), cut to maxLogLine
// bytes. The whole tail is in the JSON, JUnit and Markdown reports.
func lastLogLine(log string) string {
	line := ""
	for l := range strings.Lines(log) {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			line = l
			break
		}
		if l != "" {
			line = l
		}
	}
	if len(line) > maxLogLine {
		line = strings.ToValidUTF8(line[:maxLogLine], "") + "…"
	}
	return line
}

// shardFigures is each client shard's own CPU and memory over the phase,
// the saturated ones marked.
func shardFigures(shards []result.ClientShard) string {
	parts := make([]string, len(shards))
	for i, s := range shards {
		parts[i] = fmt.Sprintf("%s %s of %s, %.2f CPU-s, RSS %s", s.Name, Percent(s.CPUAvg), plural(s.Usable, "core"), s.CPUSeconds, MiB(s.MemMax))
		if s.WaitAvg >= 5 {
			parts[i] += fmt.Sprintf(", waited %s for a CPU", Percent(s.WaitAvg))
		}
		if s.Bound {
			parts[i] += " (client-bound)"
		}
	}
	return strings.Join(parts, "; ")
}
