package ping

import (
	"fmt"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
)

// Params configure a closed-loop ping phase: Concurrency connections
// each keep one ping in flight and send the next as soon as its pong
// comes, until Total pongs were measured. It measures the server's
// control-frame round trip, without a data message's decoding and
// copying. They are the phase's plan keys too (Phase holds them inline),
// declared once in their tags; the phase lowers Concurrency to the
// connections open.
type Params struct {
	Total       int64          `yaml:"total" json:"total" required:"true" min:"1" doc:"pongs to measure"`
	Concurrency int            `yaml:"concurrency" json:"concurrency" min:"1" doc:"pings in flight, each on its own connection; default: every open connection"`
	Timeout     units.Duration `yaml:"timeout" json:"timeout" default:"10s" min:"1ns" max:"120s" doc:"longest wait for one pong; a late pong fails and drops its connection"`
}

// Result is what a ping phase measured.
type Result struct {
	Total   int64             `json:"total"`   // pongs asked for
	Success int64             `json:"success"` // pongs received
	Failed  int64             `json:"failed"`  // pings whose connection was lost or timed out
	Used    time.Duration     `json:"used"`
	Latency client.Hist       `json:"latency"` // ns, ping written to pong received
	Errors  client.Reasons    `json:"errors"`  // failure reason -> count
	Stopped client.StopReason `json:"stopped"` // StopCanceled, StopClosed, StopNoConnections; "" = it ran to its end
}

// The client's contract, checked at compile time.
var (
	_ client.Params = (*Params)(nil)
	_ client.Result = (*Result)(nil)
)

// Kind implements client.Params.
func (p *Params) Kind() string { return Name }

// Validate implements client.Params.
func (p *Params) Validate() error { return client.CheckParams(p) }

// Split implements client.Params: concurrency in proportion to the
// parts' open connections, total in proportion to the concurrency.
func (p *Params) Split(weights []int) []client.Params {
	conc := client.Distribute(p.Concurrency, weights)
	tot := client.SplitInt64(p.Total, conc)
	out := make([]client.Params, len(weights))
	for i := range out {
		if conc[i] > 0 && tot[i] > 0 {
			q := *p
			q.Concurrency, q.Total = conc[i], tot[i]
			out[i] = &q
		}
	}
	return out
}

// Merge implements client.Result.
func (r *Result) Merge(other client.Result) {
	o := other.(*Result)
	r.Total += o.Total
	r.Success += o.Success
	r.Failed += o.Failed
	r.Used = max(r.Used, o.Used)
	r.Latency.Add(o.Latency)
	r.Errors.Merge(o.Errors)
	r.Stopped = client.MergeStop(r.Stopped, o.Stopped)
}

// Stop implements client.Result.
func (r *Result) Stop() client.StopReason { return r.Stopped }

// Start implements client.Params: each loop gets its share of the pings.
func (p *Params) Start(ph *client.PhaseEnv) (*client.PhasePlan, error) {
	if total := ph.OpenTotal(); p.Concurrency > total {
		return nil, fmt.Errorf("client: ping: concurrency %d exceeds the %d open connections: open more in a connect phase or lower concurrency", p.Concurrency, total)
	}
	ph.Progress.Begin(p.Total)
	plan := &client.PhasePlan{Starts: make([]func(*client.Loop), len(ph.Open))}
	for i, part := range p.Split(ph.Open) {
		if part == nil {
			continue
		}
		q := part.(*Params)
		id, pr := ph.ID, ph.Progress
		plan.Starts[i] = func(l *client.Loop) { start(l, id, q.Concurrency, q.Total, int64(p.Timeout), pr) }
	}
	plan.Done = func(res client.Result, why client.StopReason, wall time.Duration) client.StopReason {
		r := res.(*Result)
		r.Total, r.Used = p.Total, wall
		if r.Latency.Histogram == nil {
			r.Latency = client.NewHist()
		}
		if why == "" {
			why = r.Stopped
		}
		r.Stopped = why
		return why
	}
	return plan, nil
}
