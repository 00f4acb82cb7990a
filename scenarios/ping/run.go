package ping

import (
	"encoding/binary"
	"time"

	"github.com/wsplan/wsplan/internal/client"
)

// run is a ping phase running in a loop. Its connections are the
// loop's first slots open ones; Conn.Slot holds a connection's index.
type run struct {
	client.BaseRun
	conns     []*client.Conn
	sent      []int64 // loop clock of the ping in flight per connection; -1 = none
	seq       []uint64
	left      int64 // pings still to send here
	inflight  int
	live      int
	timeout   int64
	pr        *client.Progress
	unflushed int64
	published client.LiveCounts // what Live has of this loop
	liveLat   client.LiveHist   // latencies for Live
	part      Result
}

// start begins a ping phase on loop l.
func start(l *client.Loop, id int64, slots int, total, timeout int64, pr *client.Progress) {
	n := min(slots, len(l.Open()))
	r := &run{BaseRun: client.NewBaseRun(id), conns: append([]*client.Conn(nil), l.Open()[:n]...), sent: make([]int64, n), seq: make([]uint64, n),
		left: total, live: n, timeout: timeout, pr: pr, part: Result{Latency: client.NewHist()}}
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
func (r *run) send(l *client.Loop, i int, now int64) {
	if r.left == 0 || r.conns[i].State() != client.StateOpen {
		return
	}
	r.left--
	r.inflight++
	r.seq[i]++
	r.sent[i] = now
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], r.seq[i])
	l.SendControl(r.conns[i], client.OpPing, b[:])
}

// slot returns c's index in the run, or -1.
func (r *run) slot(c *client.Conn) int {
	if i := c.Slot; i >= 0 && i < int64(len(r.conns)) && r.conns[i] == c {
		return int(i)
	}
	return -1
}

// OnPong implements client.LoopRun: the pong of connection i's ping in flight
// (a pong carrying another payload is not: it is ignored).
func (r *run) OnPong(l *client.Loop, c *client.Conn, payload []byte) {
	i := r.slot(c)
	if i < 0 || r.sent[i] < 0 || len(payload) != 8 || binary.BigEndian.Uint64(payload) != r.seq[i] {
		return
	}
	now := l.Now()
	client.Record(r.part.Latency.Histogram, now-r.sent[i])
	r.liveLat.Add(now - r.sent[i])
	r.part.Success++
	r.sent[i] = -1
	r.inflight--
	r.progress()
	r.send(l, i, now)
	r.maybeDone(l)
}

// Lost implements client.LoopRun: a lost connection fails its ping in flight.
func (r *run) Lost(l *client.Loop, c *client.Conn, _ uint8, reason client.Reason) {
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

// Adopt implements the client's adopter: a dropped connection came back while pings
// are left; it takes its place and sends the next.
func (r *run) Adopt(l *client.Loop, old, c *client.Conn) {
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

// Tick implements client.LoopRun: it fails pings older than the timeout
// (dropping their connections) and publishes progress.
func (r *run) Tick(l *client.Loop, now int64) {
	for i, c := range r.conns {
		if l.Run() != r {
			return
		}
		if r.sent[i] >= 0 && now-r.sent[i] > r.timeout {
			l.Drop(c, client.ReasonTimeout)
		}
	}
	if r.pr != nil && r.unflushed > 0 {
		r.pr.Done.Add(r.unflushed)
		r.unflushed = 0
		r.pr.Following().Publish(&r.published, r.liveCounts())
	}
	r.liveLat.Tick(r.pr.Following(), now)
}

func (r *run) progress() {
	if r.unflushed++; r.unflushed >= client.ProgressBatch && r.pr != nil {
		r.pr.Done.Add(r.unflushed)
		r.unflushed = 0
		r.pr.Following().Publish(&r.published, r.liveCounts())
	}
}

// maybeDone ends the phase here once nothing is in flight.
func (r *run) maybeDone(l *client.Loop) {
	if l.Run() != r || r.inflight > 0 {
		return
	}
	if r.left > 0 && r.live > 0 {
		return // cannot happen: an open connection without a ping in flight sends one
	}
	r.Finish(l, false, 0)
}

// Finish implements client.LoopRun. Pongs of pings still in flight are ignored
// when they come.
func (r *run) Finish(l *client.Loop, stopped bool, _ int64) {
	for _, c := range r.conns {
		c.Slot = 0
	}
	if r.left > 0 && !stopped {
		r.part.Stopped = client.StopNoConnections
	}
	if r.pr != nil && r.unflushed > 0 {
		r.pr.Done.Add(r.unflushed)
		r.pr.Following().Publish(&r.published, r.liveCounts())
	}
	r.liveLat.Flush(r.pr.Following())
	l.Finished(r.ID(), &r.part, stopped)
}

// liveCounts are this loop's totals so far, for Live.
func (r *run) liveCounts() client.LiveCounts {
	return client.LiveCounts{Sent: r.part.Success + r.part.Failed, Recv: r.part.Success, Failed: r.part.Failed}
}
