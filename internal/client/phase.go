package client

import (
	"context"
	"sync/atomic"
	"time"
)

// Running one phase of any kind: what a kind's Start sees (PhaseEnv),
// what it returns (PhasePlan), the progress it counts, and Client.Run,
// which posts the plan to the loops and merges their results.

// Progress is read by the live progress line while a phase runs.
type Progress struct {
	Done  atomic.Int64 // units finished (connections, echoes, messages)
	Total atomic.Int64 // units planned
	Live  *Live        // the live metrics' counts (nil: none)
}

// Begin starts counting a phase of total units on p; a nil p counts
// nothing. A kind's Start calls it once.
func (p *Progress) Begin(total int64) {
	if p != nil {
		p.Total.Store(total)
		p.Done.Store(0)
	}
}

// PhaseEnv is what a kind's Start sees of the client.
type PhaseEnv struct {
	Client   *Client
	ID       int64     // the phase's number
	Open     []int     // open connections per loop
	Start    time.Time // when the phase started
	Progress *Progress
	kind     string // the phase's kind, for Need's error
}

// OpenTotal is the number of connections open over every loop when the
// phase started.
func (ph *PhaseEnv) OpenTotal() int {
	total := 0
	for _, o := range ph.Open {
		total += o
	}
	return total
}

// PhasePlan is a phase prepared for the loops.
type PhasePlan struct {
	// Starts holds, per loop, what begins the phase there (on the loop's
	// goroutine: it sets l.ph); nil = nothing to do on that loop.
	Starts []func(l *Loop)
	// Deadline bounds the phase's wall time; 0 = none.
	Deadline time.Duration
	// Done, when set, completes the merged result (wall time, derived
	// counts, empty histograms for the JSON); Client.Run then settles its
	// stop reason (Ended).
	Done func(res Result, wall time.Duration)
}

// Run runs one phase of any kind over the open connections and returns
// its merged result. A phase cut short returns what was measured with its
// stop reason; cancellation also returns ctx.Err(), Close ErrClosed.
// pr.Live, when set, follows this client's connections from here on.
func (c *Client) Run(ctx context.Context, p Params, pr *Progress) (Result, error) {
	pr.Following().follow(c)
	if err := Ready(p); err != nil {
		return nil, err
	}
	c.phaseMu.Lock()
	defer c.phaseMu.Unlock()
	if c.closed.Load() {
		return nil, ErrClosed
	}
	open := make([]int, len(c.loops))
	for i, l := range c.loops {
		open[i] = int(l.counts.open.Load())
	}
	env := &PhaseEnv{Client: c, ID: c.phase + 1, Open: open, Start: time.Now(), Progress: pr, kind: KindName(p)}
	plan, err := p.Start(env)
	if err != nil {
		return nil, err
	}
	c.phase++
	var posted []*Loop
	for i, s := range plan.Starts {
		if s != nil && c.loops[i].post(command{kind: cmdRun, phase: c.phase, start: s}) {
			posted = append(posted, c.loops[i])
		}
	}
	results, why := c.collect(ctx, plan.Deadline, posted)
	var rc ReconnectStats
	for _, r := range results {
		rc.Merge(r.rc)
	}
	c.rcMu.Lock()
	c.rcLast = rc
	c.rcMu.Unlock()
	var res Result
	for _, r := range results {
		if r.part == nil {
			continue
		}
		if res == nil {
			res = r.part
		} else {
			res.Merge(r.part)
		}
	}
	if res == nil {
		res = NewResult(p)
	}
	if plan.Done != nil {
		plan.Done(res, time.Since(env.Start))
	}
	return res, stopErr(ctx, settle(res, why))
}

// RunAs runs p and returns its result as R (the zero R when none).
func RunAs[R any](c *Client, ctx context.Context, p Params, pr *Progress) (R, error) {
	res, err := c.Run(ctx, p, pr)
	var out R
	if r, ok := any(res).(*R); ok && r != nil {
		out = *r
	}
	return out, err
}
