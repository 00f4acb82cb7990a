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
func (p *HoldParams) Validate() error { return CheckParams(p) }

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
	r.Errors.Merge(o.Errors)
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
	return RunAs[HoldResult](c, ctx, &p, pr)
}

// Start implements Params.
func (p *HoldParams) Start(ph *PhaseEnv) (*PhasePlan, error) {
	total := ph.OpenTotal()
	pacer := Pacer{Duration: p.Duration.D(), Rate: 1}
	if p.Ping > 0 {
		pacer.Rate = 1 / p.Ping.D().Seconds()
	}
	if pr := ph.Progress; pr != nil {
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
	plan := &PhasePlan{Starts: make([]func(*Loop), len(ph.Open))}
	first := 0
	for i := range ph.Open {
		job := &holdJob{
			phase: ph.ID,
			ping:  p.Ping > 0,
			pacer: pacer,
			first: first,
			total: max(total, 1),
			start: ph.Start,
			clock: i == 0 && p.Ping == 0,
			pr:    ph.Progress,
		}
		if p.Ping > 0 {
			job.drain = int64(DefaultHoldDrain)
		}
		first += ph.Open[i]
		plan.Starts[i] = func(l *Loop) { l.holdStart(job) }
	}
	plan.Done = func(res Result, why StopReason, wall time.Duration) StopReason {
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
	BaseRun
	job     holdJob
	cu      Cursor
	conns   []*Conn
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
func (l *Loop) holdStart(job *holdJob) {
	h := &holdRun{BaseRun: BaseRun{job.phase}, job: *job}
	l.SetRun(h)
	h.start = int64(job.start.Sub(l.Epoch()))
	h.end = h.start + int64(job.pacer.Duration)
	h.stopAt = h.end + job.drain
	h.conns = append([]*Conn(nil), l.Open()...)
	h.next = make([]int64, len(h.conns))
	h.waiting = make([]int32, len(h.conns))
	for i, c := range h.conns {
		c.Slot = int64(i)
	}
	h.part.Conns = int64(len(h.conns))
	h.cu = Cursor{Pacer: job.pacer, First: job.first, Total: job.total, Conns: len(h.conns)}
	if len(h.conns) == 0 {
		h.job.ping = false // nothing to ping: just wait for the end
	}
	h.holding = true
	h.Pump(l, l.Now())
}

// WakeAt implements LoopRun.
func (h *holdRun) WakeAt() int64 { return h.wake }

// Pump implements LoopRun: it sends the pings due, ends the hold at its
// end (after the drain for pongs) and sets the time of the next pump.
func (h *holdRun) Pump(l *Loop, now int64) {
	el := time.Duration(now - h.start)
	if h.holding && h.job.ping {
		visited := 0
		for {
			at := h.cu.At()
			if at >= h.job.pacer.Duration || at > el {
				break
			}
			l.holdPing(h, h.cu.Index, el)
			if l.Run() != h {
				return
			}
			h.cu.Advance()
			if visited++; visited >= len(h.conns) {
				h.cu.Seek(el)
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
		h.Finish(l, false, now)
		return
	}
	switch {
	case !h.holding:
		h.wake = h.stopAt
	case h.job.ping && h.cu.At() < h.job.pacer.Duration:
		h.wake = min(h.end, h.start+int64(h.cu.At()))
	default:
		h.wake = h.end
	}
	if h.job.clock {
		h.wake = min(h.wake, now+int64(time.Second)) // progress
	}
}

// holdPing sends connection j one ping if one is due.
func (l *Loop) holdPing(h *holdRun, j int, el time.Duration) {
	c := h.conns[j]
	if c.State() != StateOpen {
		return
	}
	due := h.job.pacer.Due(el, h.cu.Phase(j))
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
	l.SendControl(c, OpPing, seq[:])
}

// slot returns c's index in the hold, or -1.
func (h *holdRun) slot(c *Conn) int {
	if i := c.Slot; i >= 0 && i < int64(len(h.conns)) && h.conns[i] == c {
		return int(i)
	}
	return -1
}

// OnPong implements LoopRun: it counts a pong from c that answers one of
// its pings (RFC 6455 5.5.3: the ping's payload, the 8-byte sequence of a
// ping sent). Another payload answers none: an unsolicited pong (a
// heartbeat the RFC allows) or a wrong one, whose ping stays unanswered.
func (h *holdRun) OnPong(_ *Loop, c *Conn, p []byte) {
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

// Lost implements LoopRun: it counts a dropped connection; its pongs will
// not come.
func (h *holdRun) Lost(_ *Loop, c *Conn, _ uint8, reason Reason) {
	i := h.slot(c)
	if i < 0 {
		return
	}
	h.pending -= int64(h.waiting[i])
	h.waiting[i] = 0
	h.part.Errors.Add(reason)
	if !h.holding && h.pending == 0 {
		h.wake = 0
	}
}

// Adopt implements adopter: a dropped connection came back; it takes its
// place on the ping timetable (one ping when the next is due, no catch-up).
func (h *holdRun) Adopt(_ *Loop, old, c *Conn) {
	if i := h.slot(old); i >= 0 {
		h.conns[i] = c
		c.Slot = int64(i)
	}
}

// Finish implements LoopRun: it ends the hold here and reports this
// loop's share.
func (h *holdRun) Finish(l *Loop, stopped bool, now int64) {
	for _, c := range h.conns {
		if c.State() == StateOpen {
			h.part.Alive++
		}
		c.Slot = 0
	}
	if h.job.clock && h.job.pr != nil {
		h.job.pr.Done.Store(int64(min(time.Duration(now-h.start), h.job.pacer.Duration) / time.Second))
	}
	l.Finished(h.job.phase, &h.part, stopped)
}
