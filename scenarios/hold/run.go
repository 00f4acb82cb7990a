package hold

import (
	"encoding/binary"
	"time"

	"github.com/wsplan/wsplan/internal/client"
)

// job is one loop's share of a hold phase.
type job struct {
	phase int64
	ping  bool         // send pings on the pacer's timetable
	pacer client.Pacer // Rate = 1/ping interval
	first int          // phase index of this loop's connection 0
	total int          // phase denominator
	start time.Time
	drain int64 // ns
	clock bool  // publish elapsed whole seconds as progress (one loop does)
	pr    *client.Progress
}

// run is a hold phase running in a loop: the connections stay open,
// and with pings each sends one at every event of its timetable.
type run struct {
	client.BaseRun
	job     job
	cu      client.Cursor
	conns   []*client.Conn
	next    []int64 // pings due so far per connection
	waiting []int32 // pings without their pong per connection
	start   int64
	end     int64
	stopAt  int64
	holding bool
	pending int64 // pings without their pong, over live connections
	wake    int64
	part    Result
}

// start begins a hold phase in this loop.
func start(l *client.Loop, job *job) {
	h := &run{BaseRun: client.NewBaseRun(job.phase), job: *job}
	l.SetRun(h)
	h.start = int64(job.start.Sub(l.Epoch()))
	h.end = h.start + int64(job.pacer.Duration)
	h.stopAt = h.end + job.drain
	h.conns = append([]*client.Conn(nil), l.Open()...)
	h.next = make([]int64, len(h.conns))
	h.waiting = make([]int32, len(h.conns))
	for i, c := range h.conns {
		c.Slot = int64(i)
	}
	h.part.Conns = int64(len(h.conns))
	h.cu = client.Cursor{Pacer: job.pacer, First: job.first, Total: job.total, Conns: len(h.conns)}
	if len(h.conns) == 0 {
		h.job.ping = false // nothing to ping: just wait for the end
	}
	h.holding = true
	h.Pump(l, l.Now())
}

// WakeAt implements client.LoopRun.
func (h *run) WakeAt() int64 { return h.wake }

// Pump implements client.LoopRun: it sends the pings due, ends the hold at its
// end (after the drain for pongs) and sets the time of the next pump.
func (h *run) Pump(l *client.Loop, now int64) {
	el := time.Duration(now - h.start)
	if h.holding && h.job.ping {
		visited := 0
		for {
			at := h.cu.At()
			if at >= h.job.pacer.Duration || at > el {
				break
			}
			sendPing(l, h, h.cu.Index, el)
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

// sendPing sends connection j one ping if one is due.
func sendPing(l *client.Loop, h *run, j int, el time.Duration) {
	c := h.conns[j]
	if c.State() != client.StateOpen {
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
	l.SendControl(c, client.OpPing, seq[:])
}

// slot returns c's index in the hold, or -1.
func (h *run) slot(c *client.Conn) int {
	if i := c.Slot; i >= 0 && i < int64(len(h.conns)) && h.conns[i] == c {
		return int(i)
	}
	return -1
}

// OnPong implements client.LoopRun: it counts a pong from c that answers one of
// its pings (RFC 6455 5.5.3: the ping's payload, the 8-byte sequence of a
// ping sent). Another payload answers none: an unsolicited pong (a
// heartbeat the RFC allows) or a wrong one, whose ping stays unanswered.
func (h *run) OnPong(_ *client.Loop, c *client.Conn, p []byte) {
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

// Lost implements client.LoopRun: it counts a dropped connection; its pongs will
// not come.
func (h *run) Lost(_ *client.Loop, c *client.Conn, _ uint8, reason client.Reason) {
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
func (h *run) Adopt(_ *client.Loop, old, c *client.Conn) {
	if i := h.slot(old); i >= 0 {
		h.conns[i] = c
		c.Slot = int64(i)
	}
}

// Finish implements client.LoopRun: it ends the hold here and reports this
// loop's share.
func (h *run) Finish(l *client.Loop, stopped bool, now int64) {
	for _, c := range h.conns {
		if c.State() == client.StateOpen {
			h.part.Alive++
		}
		c.Slot = 0
	}
	if h.job.clock && h.job.pr != nil {
		h.job.pr.Done.Store(int64(min(time.Duration(now-h.start), h.job.pacer.Duration) / time.Second))
	}
	l.Finished(h.job.phase, &h.part, stopped)
}
