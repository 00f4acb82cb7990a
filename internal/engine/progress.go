package engine

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// summary is the one-line notice of a finished phase: the kind's
// throughput, its own figures (Kind.Summary) and p99.
func summary(r result.Result) string {
	if !r.OK {
		return "FAILED: " + r.Error
	}
	k, _ := scenarios.Lookup(r.Kind)
	parts := []string{}
	if v, ok := r.Metrics[k.Throughput.Metric].(float64); ok {
		parts = append(parts, fmt.Sprintf("%.0f/s", v))
	}
	if k.Summary != nil {
		parts = append(parts, k.Summary(r.Metrics))
	}
	if v, ok := r.Metrics[metrics.P99].(time.Duration); ok {
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
				fmt.Fprint(w, "\r\033[K"+progressLine(phase, server, n, pr.Total.Load(), rate, now.Sub(start)))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// progressLine is the live line of a phase: done/total, the current rate,
// the elapsed time and, when the phase has a known end (a total) and has
// made progress, the time left at its average pace so far.
func progressLine(phase, server string, done, total int64, rate float64, elapsed time.Duration) string {
	s := fmt.Sprintf("%s %s: %d/%d  %.0f/s  %s", phase, server, done, total, rate, elapsed.Truncate(100*time.Millisecond))
	if total > 0 && done > 0 && done < total {
		left := time.Duration(float64(elapsed) * float64(total-done) / float64(done))
		s += "  ETA " + left.Round(time.Second).String()
	}
	return s
}
