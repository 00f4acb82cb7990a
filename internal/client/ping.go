package client

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/wsplan/wsplan/internal/units"
)

func init() {
	Register(Kind{Name: "ping", NewParams: func() Params { return &PingParams{} }, NewResult: func() Result { return &PingResult{} }})
}

// PingParams configure a closed-loop ping phase: Concurrency connections
// each keep one ping in flight and send the next as soon as its pong
// comes, until Total pongs were measured. It measures the server's
// control-frame round trip, without a data message's decoding and
// copying. They are the phase's plan keys too (scenarios.Ping holds them
// inline), declared once in their tags; the scenario lowers Concurrency
// to the connections open.
type PingParams struct {
	Total       int64          `yaml:"total" json:"total" required:"true" min:"1" doc:"pongs to measure"`
	Concurrency int            `yaml:"concurrency" json:"concurrency" min:"1" doc:"pings in flight, each on its own connection; default: every open connection"`
	Timeout     units.Duration `yaml:"timeout" json:"timeout" default:"10s" min:"1ns" max:"120s" doc:"longest wait for one pong; a late pong fails and drops its connection"`
}

// PingResult is what a ping phase measured.
type PingResult struct {
	Total   int64         `json:"total"`   // pongs asked for
	Success int64         `json:"success"` // pongs received
	Failed  int64         `json:"failed"`  // pings whose connection was lost or timed out
	Used    time.Duration `json:"used"`
	Latency Hist          `json:"latency"` // ns, ping written to pong received
	Errors  Reasons       `json:"errors"`  // failure reason -> count
	Stopped StopReason    `json:"stopped"` // StopCanceled, StopClosed, StopNoConnections; "" = it ran to its end
}

// Kind implements Params.
func (p *PingParams) Kind() string { return "ping" }

// Validate implements Params.
func (p *PingParams) Validate() error { return CheckParams(p) }

// Split implements Params: concurrency in proportion to the parts' open
// connections, total in proportion to the concurrency.
func (p *PingParams) Split(weights []int) []Params {
	conc := Distribute(p.Concurrency, weights)
	tot := SplitInt64(p.Total, conc)
	out := make([]Params, len(weights))
	for i := range out {
		if conc[i] > 0 && tot[i] > 0 {
			q := *p
			q.Concurrency, q.Total = conc[i], tot[i]
			out[i] = &q
		}
	}
	return out
}

// Merge implements Result.
func (r *PingResult) Merge(other Result) {
	o := other.(*PingResult)
	r.Total += o.Total
	r.Success += o.Success
	r.Failed += o.Failed
	r.Used = max(r.Used, o.Used)
	r.Latency.Add(o.Latency)
	r.Errors.Merge(o.Errors)
	r.Stopped = MergeStop(r.Stopped, o.Stopped)
}

// Stop implements Result.
func (r *PingResult) Stop() StopReason { return r.Stopped }

// Ping runs a ping phase (see PingParams).
func (c *Client) Ping(ctx context.Context, p PingParams, pr *Progress) (PingResult, error) {
	return RunAs[PingResult](c, ctx, &p, pr)
}

// Start implements Params: each loop gets its share of the pings.
func (p *PingParams) Start(ph *PhaseEnv) (*PhasePlan, error) {
	total := 0
	for _, o := range ph.Open {
		total += o
	}
	if p.Concurrency > total {
		return nil, fmt.Errorf("client: ping: concurrency %d exceeds the %d open connections: open more in a connect phase or lower concurrency", p.Concurrency, total)
	}
	if ph.Progress != nil {
		ph.Progress.Total.Store(p.Total)
		ph.Progress.Done.Store(0)
	}
	plan := &PhasePlan{Starts: make([]func(*Loop), len(ph.Open))}
	for i, part := range p.Split(ph.Open) {
		if part == nil {
			continue
		}
		q := part.(*PingParams)
		id, pr := ph.ID, ph.Progress
		plan.Starts[i] = func(l *Loop) { l.pingStart(id, q.Concurrency, q.Total, int64(p.Timeout), pr) }
	}
	plan.Done = func(res Result, why StopReason, wall time.Duration) StopReason {
		r := res.(*PingResult)
		r.Total, r.Used = p.Total, wall
		if r.Latency.Histogram == nil {
			r.Latency = NewHist()
		}
		if why == "" {
			why = r.Stopped
		}
		r.Stopped = why
		return why
	}
	return plan, nil
}

// pingRun is a ping phase running in a loop. Its connections are the
// loop's first slots open ones; conn.slot holds a connection's index.
type pingRun struct {
	BaseRun
	conns     []*Conn
	sent      []int64 // loop clock of the ping in flight per connection; -1 = none
	seq       []uint64
	left      int64 // pings still to send here
	inflight  int
	live      int
	timeout   int64
	pr        *Progress
	unflushed int64
	published LiveCounts // what Live has of this loop
	liveLat   LiveHist   // latencies for Live
	part      PingResult
}

// pingStart begins a ping phase in this loop.
func (l *Loop) pingStart(id int64, slots int, total, timeout int64, pr *Progress) {
	n := min(slots, len(l.Open()))
	r := &pingRun{BaseRun: BaseRun{id}, conns: append([]*Conn(nil), l.Open()[:n]...), sent: make([]int64, n), seq: make([]uint64, n),
		left: total, live: n, timeout: timeout, pr: pr, part: PingResult{Latency: NewHist()}}
	l.SetRun(r)
	l.SetTick(time.Duration(timeout / 10))
	now := l.Now()
	r.liveLat.Start(pr.Following(), now)
	for i, c := range r.conns {
		c.Slot = int64(i)
		r.sent[i] = -1
	}
	for i := range r.conns {
		if l.Run() != r {
			return
		}
		r.send(l, i, now)
	}
	r.maybeDone(l)
}

// send writes connection i's next ping if one is left.
func (r *pingRun) send(l *Loop, i int, now int64) {
	if r.left == 0 || r.conns[i].State() != StateOpen {
		return
	}
	r.left--
	r.inflight++
	r.seq[i]++
	r.sent[i] = now
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], r.seq[i])
	l.SendControl(r.conns[i], OpPing, b[:])
}

// slot returns c's index in the run, or -1.
func (r *pingRun) slot(c *Conn) int {
	if i := c.Slot; i >= 0 && i < int64(len(r.conns)) && r.conns[i] == c {
		return int(i)
	}
	return -1
}

// OnPong implements LoopRun: the pong of connection i's ping in flight
// (a pong carrying another payload is not: it is ignored).
func (r *pingRun) OnPong(l *Loop, c *Conn, payload []byte) {
	i := r.slot(c)
	if i < 0 || r.sent[i] < 0 || len(payload) != 8 || binary.BigEndian.Uint64(payload) != r.seq[i] {
		return
	}
	now := l.Now()
	Record(r.part.Latency.Histogram, now-r.sent[i])
	r.liveLat.Add(now - r.sent[i])
	r.part.Success++
	r.sent[i] = -1
	r.inflight--
	r.progress()
	r.send(l, i, now)
	r.maybeDone(l)
}

// Lost implements LoopRun: a lost connection fails its ping in flight.
func (r *pingRun) Lost(l *Loop, c *Conn, _ uint8, reason Reason) {
	i := r.slot(c)
	if i < 0 {
		return
	}
	r.live--
	if r.sent[i] >= 0 {
		r.sent[i] = -1
		r.inflight--
		r.part.Failed++
		r.part.Errors.Add(reason)
		r.progress()
	}
	r.maybeDone(l)
}

// Adopt implements adopter: a dropped connection came back while pings
// are left; it takes its place and sends the next.
func (r *pingRun) Adopt(l *Loop, old, c *Conn) {
	i := r.slot(old)
	if i < 0 || l.Run() != r {
		return
	}
	r.conns[i] = c
	c.Slot = int64(i)
	r.sent[i] = -1
	r.live++
	r.send(l, i, l.Now())
}

// Tick implements LoopRun: it fails pings older than the timeout
// (dropping their connections) and publishes progress.
func (r *pingRun) Tick(l *Loop, now int64) {
	for i, c := range r.conns {
		if l.Run() != r {
			return
		}
		if r.sent[i] >= 0 && now-r.sent[i] > r.timeout {
			l.Drop(c, ReasonTimeout)
		}
	}
	if r.pr != nil && r.unflushed > 0 {
		r.pr.Done.Add(r.unflushed)
		r.unflushed = 0
		r.pr.Following().Publish(&r.published, r.liveCounts())
	}
	r.liveLat.Tick(r.pr.Following(), now)
}

func (r *pingRun) progress() {
	if r.unflushed++; r.unflushed >= ProgressBatch && r.pr != nil {
		r.pr.Done.Add(r.unflushed)
		r.unflushed = 0
		r.pr.Following().Publish(&r.published, r.liveCounts())
	}
}

// maybeDone ends the phase here once nothing is in flight.
func (r *pingRun) maybeDone(l *Loop) {
	if l.Run() != r || r.inflight > 0 {
		return
	}
	if r.left > 0 && r.live > 0 {
		return // cannot happen: an open connection without a ping in flight sends one
	}
	r.Finish(l, false, 0)
}

// Finish implements LoopRun. Pongs of pings still in flight are ignored
// when they come.
func (r *pingRun) Finish(l *Loop, stopped bool, _ int64) {
	for _, c := range r.conns {
		c.Slot = 0
	}
	if r.left > 0 && !stopped {
		r.part.Stopped = StopNoConnections
	}
	if r.pr != nil && r.unflushed > 0 {
		r.pr.Done.Add(r.unflushed)
		r.pr.Following().Publish(&r.published, r.liveCounts())
	}
	r.liveLat.Flush(r.pr.Following())
	l.Finished(r.ID(), &r.part, stopped)
}

// liveCounts are this loop's totals so far, for Live.
func (r *pingRun) liveCounts() LiveCounts {
	return LiveCounts{Sent: r.part.Success + r.part.Failed, Recv: r.part.Success, Failed: r.part.Failed}
}
