package ping

import (
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
	Total   int64          `json:"total"`   // pongs asked for
	Success int64          `json:"success"` // pongs received
	Failed  int64          `json:"failed"`  // pings whose connection was lost or timed out
	Used    time.Duration  `json:"used"`
	Latency client.Hist    `json:"latency"` // ns, ping written to pong received
	Errors  client.Reasons `json:"errors"`  // failure reason -> count
	// Stopped: StopCanceled, StopClosed, StopNoConnections; "" = it ran to its end.
	client.Ended
}

// Validate implements client.Params.
func (p *Params) Validate() error { return client.CheckParams(p) }

// Split implements client.Params: concurrency in proportion to the
// parts' open connections, total in proportion to the concurrency.
func (p *Params) Split(weights []int) []client.Params {
	conc := client.Distribute(p.Concurrency, weights)
	tot := client.SplitInt64(p.Total, conc)
	return client.Parts(p, len(weights), func(i int, q *Params) bool {
		q.Concurrency, q.Total = conc[i], tot[i]
		return conc[i] > 0 && tot[i] > 0
	})
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

// Start implements client.Params: each loop gets its share of the pings.
func (p *Params) Start(ph *client.PhaseEnv) (*client.PhasePlan, error) {
	if err := ph.Need("concurrency", p.Concurrency); err != nil {
		return nil, err
	}
	ph.Progress.Begin(p.Total)
	return &client.PhasePlan{
		Starts: client.StartParts(ph, p, func(l *client.Loop, q *Params) {
			start(l, ph.ID, q.Concurrency, q.Total, int64(p.Timeout), ph.Progress)
		}),
		Done: func(res client.Result, wall time.Duration) {
			r := res.(*Result)
			r.Total, r.Used = p.Total, wall
			client.EnsureHists(&r.Latency)
		},
	}, nil
}
