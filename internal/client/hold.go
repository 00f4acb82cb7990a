package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// DefaultHoldDrain is how long a hold with pings waits after its duration
// for the pongs still due.
const DefaultHoldDrain = time.Second

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

// holdPart is one loop's share of a HoldResult.
type holdPart struct {
	conns, alive, pings, pongs int64
	errors                     map[string]int64
}

// holdRun is a hold phase running in a loop: the connections stay open,
// and with pings each sends one at every event of its timetable.
type holdRun struct {
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
	part    holdPart
}

// holdStart begins a hold phase in this loop.
func (l *loop) holdStart(job *holdJob) {
	h := &holdRun{job: *job}
	l.hold = h
	h.start = int64(job.start.Sub(l.epoch))
	h.end = h.start + int64(job.pacer.Duration)
	h.stopAt = h.end + job.drain
	h.conns = append([]*conn(nil), l.open...)
	h.next = make([]int64, len(h.conns))
	h.waiting = make([]int32, len(h.conns))
	for i, c := range h.conns {
		c.sentAt = int64(i)
	}
	h.part.conns = int64(len(h.conns))
	h.cu = cursor{p: job.pacer, first: job.first, total: job.total, n: len(h.conns)}
	if len(h.conns) == 0 {
		h.job.ping = false // nothing to ping: just wait for the end
	}
	h.holding = true
	l.holdPump(l.now())
}

// holdPump sends the pings due, ends the hold at its end (after the drain
// for pongs) and sets the time of the next pump.
func (l *loop) holdPump(now int64) {
	h := l.hold
	el := time.Duration(now - h.start)
	if h.holding && h.job.ping {
		visited := 0
		for {
			at := h.cu.at()
			if at >= h.job.pacer.Duration || at > el {
				break
			}
			l.holdPing(h, h.cu.j, el)
			if l.hold != h {
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
		l.holdFinish(false, now)
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
	h.part.pings++
	h.waiting[j]++
	h.pending++
	if h.job.pr != nil && !h.job.clock {
		h.job.pr.Done.Add(1)
	}
	l.sendControl(c, opPing, seq[:])
}

// slot returns c's index in the hold, or -1.
func (h *holdRun) slot(c *conn) int {
	if i := c.sentAt; i >= 0 && i < int64(len(h.conns)) && h.conns[i] == c {
		return int(i)
	}
	return -1
}

// pong counts a pong from c.
func (h *holdRun) pong(l *loop, c *conn) {
	i := h.slot(c)
	if i < 0 {
		return
	}
	h.part.pongs++
	if h.waiting[i] > 0 {
		h.waiting[i]--
		h.pending--
	}
	if !h.holding && h.pending == 0 {
		h.wake = 0 // the next pump ends the phase
	}
}

// lost counts a dropped connection; its pongs will not come.
func (h *holdRun) lost(c *conn, reason string) {
	i := h.slot(c)
	if i < 0 {
		return
	}
	h.pending -= int64(h.waiting[i])
	h.waiting[i] = 0
	if h.part.errors == nil {
		h.part.errors = make(map[string]int64)
	}
	h.part.errors[reason]++
	if !h.holding && h.pending == 0 {
		h.wake = 0
	}
}

// holdFinish ends the hold here and reports this loop's share.
func (l *loop) holdFinish(stopped bool, now int64) {
	h := l.hold
	for _, c := range h.conns {
		if c.state == stOpen {
			h.part.alive++
		}
		c.sentAt = 0
	}
	if h.job.clock && h.job.pr != nil {
		h.job.pr.Done.Store(int64(min(time.Duration(now-h.start), h.job.pacer.Duration) / time.Second))
	}
	l.hold = nil
	l.results <- phaseResult{phase: h.job.phase, hold: &h.part, stopped: stopped}
}

// validate checks a hold phase's parameters.
func (p HoldParams) validate() error {
	var errs []error
	if p.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration must be > 0, got %v", p.Duration))
	}
	if p.Ping < 0 {
		errs = append(errs, fmt.Errorf("ping must be >= 0, got %v", p.Ping))
	}
	if len(errs) > 0 {
		return fmt.Errorf("client: hold: %w", errors.Join(errs...))
	}
	return nil
}

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
	if err := p.validate(); err != nil {
		return HoldResult{}, err
	}
	c.phaseMu.Lock()
	defer c.phaseMu.Unlock()
	if c.closed.Load() {
		return HoldResult{}, ErrClosed
	}
	open := make([]int, len(c.loops))
	total := 0
	for i, l := range c.loops {
		open[i] = int(l.nopen.Load())
		total += open[i]
	}
	pacer := Pacer{Duration: p.Duration, Rate: 1}
	if p.Ping > 0 {
		pacer.Rate = 1 / p.Ping.Seconds()
	}
	if pr != nil {
		pr.Done.Store(0)
		if p.Ping > 0 {
			var want int64
			for j := range total {
				want += pacer.Total(float64(j) / float64(total))
			}
			pr.Total.Store(want)
		} else {
			pr.Total.Store(int64(p.Duration / time.Second))
		}
	}
	c.phase++
	start := time.Now()
	var posted []*loop
	first := 0
	for i, l := range c.loops {
		job := &holdJob{
			phase: c.phase,
			ping:  p.Ping > 0,
			pacer: pacer,
			first: first,
			total: max(total, 1),
			start: start,
			clock: i == 0 && p.Ping == 0,
			pr:    pr,
		}
		if p.Ping > 0 {
			job.drain = int64(DefaultHoldDrain)
		}
		first += open[i]
		if l.post(command{kind: cmdHold, hold: job}) {
			posted = append(posted, l)
		}
	}
	results, why := c.collect(ctx, 0, posted)
	res := HoldResult{Used: time.Since(start), Errors: map[string]int64{}, Stopped: why}
	for _, r := range results {
		x := r.hold
		if x == nil {
			continue
		}
		res.Conns += x.conns
		res.Alive += x.alive
		res.Pings += x.pings
		res.Pongs += x.pongs
		for k, v := range x.errors {
			res.Errors[k] += v
		}
	}
	return res, stopErr(ctx, why)
}
