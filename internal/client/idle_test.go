package client

import (
	"context"
	"time"
)

// idleParams are a phase of no kind that the core's tests run to keep
// their connections open for a while (protocol keepalives, reconnects,
// the live counts): the kinds are packages of their own, which these
// tests cannot import. With Ping, every connection sends one ping at the
// start, and the pongs are counted. With UntilNone, it ends as soon as no
// connection is open (a test waiting for a server to drop them all),
// Duration being the longest wait.
type idleParams struct {
	Duration  time.Duration
	Ping      bool
	UntilNone bool
}

// idleResult is what an idle phase saw.
type idleResult struct {
	Conns, Alive, Pongs int64
	Errors              Reasons
	Ended
}

func (p *idleParams) Validate() error { return nil }

func (p *idleParams) Split(weights []int) []Params {
	out := make([]Params, len(weights))
	for i := range out {
		q := *p
		out[i] = &q
	}
	return out
}

func (r *idleResult) Merge(other Result) {
	o := other.(*idleResult)
	r.Conns += o.Conns
	r.Alive += o.Alive
	r.Pongs += o.Pongs
	r.Errors.Merge(o.Errors)
	r.Stopped = MergeStop(r.Stopped, o.Stopped)
}

func (p *idleParams) Start(ph *PhaseEnv) (*PhasePlan, error) {
	plan := &PhasePlan{Starts: make([]func(*Loop), len(ph.Open))}
	for i := range ph.Open {
		id := ph.ID
		plan.Starts[i] = func(l *Loop) {
			r := &idleRun{BaseRun: NewBaseRun(id), conns: append([]*Conn(nil), l.Open()...), until: l.Now() + int64(p.Duration), untilNone: p.UntilNone}
			r.part.Conns = int64(len(r.conns))
			l.SetRun(r)
			l.SetTick(min(p.Duration/10, 50*time.Millisecond))
			if p.Ping {
				for _, c := range r.conns {
					l.SendControl(c, OpPing, []byte("idle"))
				}
			}
		}
	}
	return plan, nil
}

// idleRun holds a loop's open connections until its time is up.
type idleRun struct {
	BaseRun
	conns     []*Conn
	until     int64
	untilNone bool
	part      idleResult
}

func (r *idleRun) OnPong(_ *Loop, _ *Conn, payload []byte) {
	if string(payload) == "idle" {
		r.part.Pongs++
	}
}

// Adopt takes a reconnected connection in its dropped one's place (a run
// that adopts gets the pool's reconnects while it runs).
func (r *idleRun) Adopt(_ *Loop, old, c *Conn) {
	for i, o := range r.conns {
		if o == old {
			r.conns[i] = c
		}
	}
}

func (r *idleRun) Lost(_ *Loop, _ *Conn, _ uint8, reason Reason) { r.part.Errors.Add(reason) }

func (r *idleRun) Tick(l *Loop, now int64) {
	if now >= r.until || (r.untilNone && r.none()) {
		r.Finish(l, false, now)
	}
}

// none reports whether none of r's connections is open.
func (r *idleRun) none() bool {
	for _, c := range r.conns {
		if c.State() == StateOpen {
			return false
		}
	}
	return true
}

func (r *idleRun) Finish(l *Loop, stopped bool, _ int64) {
	for _, c := range r.conns {
		if c.State() == StateOpen {
			r.part.Alive++
		}
	}
	l.Finished(r.ID(), &r.part, stopped)
}

// idle keeps c's open connections open for d (see idleParams).
func idle(ctx context.Context, c *Client, d time.Duration, ping bool, pr *Progress) (idleResult, error) {
	res, err := c.Run(ctx, &idleParams{Duration: d, Ping: ping}, pr)
	var out idleResult
	if r, ok := res.(*idleResult); ok && r != nil {
		out = *r
	}
	return out, err
}

// idleUntilDropped keeps c's open connections open until none is left
// (their server dropped them) or for at most d.
func idleUntilDropped(ctx context.Context, c *Client, d time.Duration) (idleResult, error) {
	res, err := c.Run(ctx, &idleParams{Duration: d, UntilNone: true}, nil)
	var out idleResult
	if r, ok := res.(*idleResult); ok && r != nil {
		out = *r
	}
	return out, err
}
