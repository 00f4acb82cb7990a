package client

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/wsplan/wsplan/internal/units"
)

func init() {
	Register(Kind{Name: "hold", NewParams: func() Params { return &HoldParams{} }, NewResult: func() Result { return &HoldResult{} }})
}

// DefaultHoldDrain is how long a hold with pings waits after its duration
// for the pongs still due.
const DefaultHoldDrain = time.Second

// HoldParams configure a hold phase (Client.Hold); they are its plan keys
// too (scenarios.Hold holds them inline), declared once in their tags.
// With Ping > 0 every open connection sends a ping every Ping, the
// connections' pings spread evenly over the interval; a connection that
// falls behind sends one ping, not the ones it missed.
type HoldParams struct {
	Duration units.Duration `yaml:"duration" json:"duration" required:"true" min:"1ns" doc:"how long to hold every connection open"`
	Ping     units.Duration `yaml:"ping" json:"ping" default:"0s" min:"0s" hint:"0 = no pings" doc:"ping interval per connection; 0 = idle, no pings"`
}

// HoldResult is what a hold phase measured.
type HoldResult struct {
	Conns   int64         `json:"conns"` // open at the start
	Alive   int64         `json:"alive"` // open at the end
	Pings   int64         `json:"pings"` // pings sent
	Pongs   int64         `json:"pongs"` // pongs received (during the hold and up to DefaultHoldDrain after it)
	Used    time.Duration `json:"used"`
	Errors  Reasons       `json:"errors"`  // why connections dropped -> count
	Stopped StopReason    `json:"stopped"` // StopCanceled, StopClosed; "" = it ran to its end
}

// Kind implements Params.
func (p *HoldParams) Kind() string { return "hold" }

// Validate implements Params.
func (p *HoldParams) Validate() error { return checkParams(p) }

// Split implements Params: every part holds all of its connections, and
// spreads its own connections' pings over the interval.
func (p *HoldParams) Split(weights []int) []Params {
	out := make([]Params, len(weights))
	for i := range out {
		q := *p
		out[i] = &q
	}
	return out
}

// Merge implements Result.
func (r *HoldResult) Merge(other Result) {
	o := other.(*HoldResult)
	r.Conns += o.Conns
	r.Alive += o.Alive
	r.Pings += o.Pings
	r.Pongs += o.Pongs
	r.Used = max(r.Used, o.Used)
	r.Errors.merge(o.Errors)
	r.Stopped = MergeStop(r.Stopped, o.Stopped)
}

// Stop implements Result.
func (r *HoldResult) Stop() StopReason { return r.Stopped }

// Hold keeps every open connection open for p.Duration and reports how
// many stayed open. With p.Ping > 0 every connection sends a ping every
// p.Ping (the connections' pings spread evenly over the interval), and the
// pongs are counted, waiting up to DefaultHoldDrain after p.Duration for
// the ones still due.
//
// Progress counts pings sent, or elapsed whole seconds without pings. A
// phase cut short (ctx canceled, Close) returns what was measured with
// Stopped saying why; cancellation also returns ctx.Err(), Close ErrClosed.
func (c *Client) Hold(ctx context.Context, p HoldParams, pr *Progress) (HoldResult, error) {
	return runAs[HoldResult](c, ctx, &p, pr)
}

// start implements Params.
func (p *HoldParams) start(ph *phaseEnv) (*phasePlan, error) {
	total := 0
	for _, o := range ph.open {
		total += o
	}
	pacer := Pacer{Duration: p.Duration.D(), Rate: 1}
	if p.Ping > 0 {
		pacer.Rate = 1 / p.Ping.D().Seconds()
	}
	if pr := ph.pr; pr != nil {
		pr.Done.Store(0)
		if p.Ping > 0 {
			var want int64
			for j := range total {
				want += pacer.Total(float64(j) / float64(total))
			}
			pr.Total.Store(want)
		} else {
			pr.Total.Store(int64(p.Duration.D() / time.Second))
		}
	}
	plan := &phasePlan{starts: make([]func(*loop), len(ph.open))}
	first := 0
	for i := range ph.open {
		job := &holdJob{
			phase: ph.id,
			ping:  p.Ping > 0,
			pacer: pacer,
			first: first,
			total: max(total, 1),
			start: ph.start,
			clock: i == 0 && p.Ping == 0,
			pr:    ph.pr,
		}
		if p.Ping > 0 {
			job.drain = int64(DefaultHoldDrain)
		}
		first += ph.open[i]
		plan.starts[i] = func(l *loop) { l.holdStart(job) }
	}
	plan.done = func(res Result, why StopReason, wall time.Duration) StopReason {
		r := res.(*HoldResult)
		r.Used = wall
		r.Stopped = why
		return why
	}
	return plan, nil
}

// holdJob is one loop's share of a hold phase.
type holdJob struct {
	phase int64
	ping  bool  // send pings on the pacer's timetable
	pacer Pacer // Rate = 1/ping interval
	first int   // phase index of this loop's connection 0
	total int   // phase denominator
	start time.Time
	drain int64 // ns
	clock bool  // publish elapsed whole seconds as progress (one loop does)
	pr    *Progress
}

// holdRun is a hold phase running in a loop: the connections stay open,
// and with pings each sends one at every event of its timetable.
type holdRun struct {
	baseRun
	job     holdJob
	cu      cursor
	conns   []*conn
	next    []int64 // pings due so far per connection
	waiting []int32 // pings without their pong per connection
	start   int64
	end     int64
	stopAt  int64
	holding bool
	pending int64 // pings without their pong, over live connections
	wake    int64
	part    HoldResult
}

// holdStart begins a hold phase in this loop.
func (l *loop) holdStart(job *holdJob) {
	h := &holdRun{baseRun: baseRun{job.phase}, job: *job}
	l.ph = h
	h.start = int64(job.start.Sub(l.epoch))
	h.end = h.start + int64(job.pacer.Duration)
	h.stopAt = h.end + job.drain
	h.conns = append([]*conn(nil), l.open...)
	h.next = make([]int64, len(h.conns))
	h.waiting = make([]int32, len(h.conns))
	for i, c := range h.conns {
		c.slot = int64(i)
	}
	h.part.Conns = int64(len(h.conns))
	h.cu = cursor{p: job.pacer, first: job.first, total: job.total, n: len(h.conns)}
	if len(h.conns) == 0 {
		h.job.ping = false // nothing to ping: just wait for the end
	}
	h.holding = true
	h.pump(l, l.now())
}

// wakeAt implements loopRun.
func (h *holdRun) wakeAt() int64 { return h.wake }

// pump implements loopRun: it sends the pings due, ends the hold at its
// end (after the drain for pongs) and sets the time of the next pump.
func (h *holdRun) pump(l *loop, now int64) {
	el := time.Duration(now - h.start)
	if h.holding && h.job.ping {
		visited := 0
		for {
			at := h.cu.at()
			if at >= h.job.pacer.Duration || at > el {
				break
			}
			l.holdPing(h, h.cu.j, el)
			if l.ph != h {
				return
			}
			h.cu.advance()
			if visited++; visited >= len(h.conns) {
				h.cu.seek(el)
				visited = 0
			}
		}
	}
	if h.job.clock && h.job.pr != nil {
		h.job.pr.Done.Store(int64(min(el, h.job.pacer.Duration) / time.Second))
	}
	if now >= h.end {
		h.holding = false
	}
	if !h.holding && (h.pending == 0 || now >= h.stopAt) {
		h.finish(l, false, now)
		return
	}
	switch {
	case !h.holding:
		h.wake = h.stopAt
	case h.job.ping && h.cu.at() < h.job.pacer.Duration:
		h.wake = min(h.end, h.start+int64(h.cu.at()))
	default:
		h.wake = h.end
	}
	if h.job.clock {
		h.wake = min(h.wake, now+int64(time.Second)) // progress
	}
}

// holdPing sends connection j one ping if one is due.
func (l *loop) holdPing(h *holdRun, j int, el time.Duration) {
	c := h.conns[j]
	if c.state != stOpen {
		return
	}
	due := h.job.pacer.Due(el, h.cu.phase(j))
	if h.next[j] >= due {
		return
	}
	h.next[j] = due
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], uint64(due-1))
	h.part.Pings++
	h.waiting[j]++
	h.pending++
	if h.job.pr != nil && !h.job.clock {
		h.job.pr.Done.Add(1)
	}
	l.sendControl(c, opPing, seq[:])
}

// slot returns c's index in the hold, or -1.
func (h *holdRun) slot(c *conn) int {
	if i := c.slot; i >= 0 && i < int64(len(h.conns)) && h.conns[i] == c {
		return int(i)
	}
	return -1
}

// onPong implements loopRun: it counts a pong from c that answers one of
// its pings (RFC 6455 5.5.3: the ping's payload, the 8-byte sequence of a
// ping sent). Another payload answers none: an unsolicited pong (a
// heartbeat the RFC allows) or a wrong one, whose ping stays unanswered.
func (h *holdRun) onPong(_ *loop, c *conn, p []byte) {
	i := h.slot(c)
	if i < 0 || len(p) != 8 || binary.BigEndian.Uint64(p) >= uint64(h.next[i]) {
		return
	}
	h.part.Pongs++
	if h.waiting[i] > 0 {
		h.waiting[i]--
		h.pending--
	}
	if !h.holding && h.pending == 0 {
		h.wake = 0 // the next pump ends the phase
	}
}

// lost implements loopRun: it counts a dropped connection; its pongs will
// not come.
func (h *holdRun) lost(_ *loop, c *conn, _ uint8, reason Reason) {
	i := h.slot(c)
	if i < 0 {
		return
	}
	h.pending -= int64(h.waiting[i])
	h.waiting[i] = 0
	h.part.Errors.add(reason)
	if !h.holding && h.pending == 0 {
		h.wake = 0
	}
}

// adopt implements adopter: a dropped connection came back; it takes its
// place on the ping timetable (one ping when the next is due, no catch-up).
func (h *holdRun) adopt(_ *loop, old, c *conn) {
	if i := h.slot(old); i >= 0 {
		h.conns[i] = c
		c.slot = int64(i)
	}
}

// finish implements loopRun: it ends the hold here and reports this
// loop's share.
func (h *holdRun) finish(l *loop, stopped bool, now int64) {
	for _, c := range h.conns {
		if c.state == stOpen {
			h.part.Alive++
		}
		c.slot = 0
	}
	if h.job.clock && h.job.pr != nil {
		h.job.pr.Done.Store(int64(min(time.Duration(now-h.start), h.job.pacer.Duration) / time.Second))
	}
	l.finished(h.job.phase, &h.part, stopped)
}
