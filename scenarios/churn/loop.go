package churn

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/client"
)

// What one loop runs of a churn phase: its share of the open connections
// in slots, the cycles' timetable (rate) or the connections' lifetimes
// (timers), a dialer of its own for the replacements, the close
// handshakes in progress, and the others' pings.

// churnLateAfter is how late a cycle may start before it counts as late.
const churnLateAfter = 10 * time.Millisecond

// churnDrain is how long the phase waits after its duration for the pongs
// still due (as long as a hold does).
const churnDrain = time.Second

// churnJob is one loop's share of a churn phase.
type churnJob struct {
	phase         int64
	p             Params // this part's: its Rate, its Seed
	first, stride int64  // replacement k is connection first + k×stride
	start         time.Time
	pr            *client.Progress
	// Pings: the loop's connection 0 is the phase's connection pingFirst
	// of pingTotal (their pings spread over the interval).
	pingFirst, pingTotal int
}

// churnSlot is one place of the churned set: its open connection, or a
// replacement being dialled, or nothing (given up, dropped).
type churnSlot struct {
	c        *client.Conn
	gone     *client.Conn // the connection the server dropped from the slot, until a reconnect brings it back
	gen      uint32       // bumped at every connection the slot gets (lifetime timers)
	pos      int32        // index in run.open while c is open
	dialling bool
	pings    int64 // pings due so far on the slot's timetable
	waiting  int32 // pings of the slot's connection without their pong
}

// churnClosing is a connection whose close handshake is in progress.
type churnClosing struct {
	c  *client.Conn
	at int64 // loop clock of our close frame
}

// run is a churn phase on one loop. conn.slot holds a connection's
// slot, or, with fClosing, its index in closing.
type run struct {
	client.BaseRun
	d       client.Dialer
	job     *churnJob
	rng     *rand.ChaCha8
	slots   []churnSlot
	open    []int32 // slots with an open connection: the ones a cycle picks from
	closing []churnClosing
	dialing map[int64]int32  // replacement number → slot, while dialled
	next    int64            // replacements dialled
	timers  client.TimerHeap // lifetimes
	cu      client.Cursor    // pings
	ping    client.Pacer

	start, end, stopAt int64 // loop clock
	period             float64
	k                  int64 // rate: cycles due so far
	lifetime           bool
	holding            bool
	pending            int64 // pings without their pong
	unflushed          int64
	published          client.LiveCounts // what the live metrics have of this loop's share
	part               Result
}

// start begins a churn phase on this loop.
func start(l *client.Loop, job *churnJob) {
	p := &job.p
	r := &run{BaseRun: client.NewBaseRun(job.phase), job: job, rng: l.Rand(), dialing: map[int64]int32{}, holding: true,
		lifetime: p.Lifetime > 0}
	if p.Seed != 0 {
		var seed [32]byte
		binary.LittleEndian.PutUint64(seed[:], p.Seed)
		r.rng = rand.NewChaCha8(seed)
	}
	r.d.Init(r, int64(p.Timeout), p.Retries, nil)
	r.part.CloseLatency, r.part.PingLatency = client.NewHist(), client.NewHist()
	l.SetRun(r)
	r.start = int64(job.start.Sub(l.Epoch()))
	r.end = r.start + int64(p.Duration)
	r.stopAt = r.end + max(int64(p.Timeout)*int64(p.Retries+1), int64(p.CloseTimeout), int64(churnDrain))
	if p.Rate > 0 {
		r.period = 1e9 / p.Rate
	}
	r.slots = make([]churnSlot, len(l.Open()))
	r.open = make([]int32, 0, len(l.Open()))
	for i, c := range l.Open() {
		r.put(int32(i), c)
	}
	r.part.Conns = int64(len(r.slots))
	if r.lifetime {
		now := l.Now()
		for i := range r.slots {
			r.arm(int32(i), now, true)
		}
	}
	if p.Ping > 0 {
		r.ping = client.Pacer{Duration: p.Duration.D(), Rate: 1 / p.Ping.D().Seconds()}
		r.cu = client.Cursor{Pacer: r.ping, First: job.pingFirst, Total: job.pingTotal, Conns: len(r.slots)}
	}
	l.SetTick(min(p.Timeout, p.CloseTimeout).D() / 10)
	r.Pump(l, l.Now())
}

// put gives slot s the open connection c.
func (r *run) put(s int32, c *client.Conn) {
	sl := &r.slots[s]
	sl.c, sl.gone, sl.dialling, sl.waiting = c, nil, false, 0
	sl.gen++
	sl.pos = int32(len(r.open))
	r.open = append(r.open, s)
	c.Slot = int64(s)
}

// take removes slot s's connection from the open set and returns it.
func (r *run) take(s int32) *client.Conn {
	sl := &r.slots[s]
	c := sl.c
	last := r.open[len(r.open)-1]
	r.open[sl.pos] = last
	r.slots[last].pos = sl.pos
	r.open = r.open[:len(r.open)-1]
	r.pending -= int64(sl.waiting)
	r.part.PingsCut += int64(sl.waiting)
	sl.c, sl.waiting = nil, 0
	return c
}

// slotOf returns c's slot, or -1 when c is not one of the set's open
// connections.
func (r *run) slotOf(c *client.Conn) int32 {
	if c.Flags&client.FlagClosing != 0 {
		return -1
	}
	if s := c.Slot; s >= 0 && s < int64(len(r.slots)) && r.slots[s].c == c {
		return int32(s)
	}
	return -1
}

// arm sets slot s's lifetime timer; first draws an open connection's
// remaining life, which for a fixed or uniform lifetime is spread so
// that the set does not close all at once.
func (r *run) arm(s int32, now int64, first bool) {
	mean := float64(r.job.p.Lifetime)
	u := float64(r.rng.Uint64()>>11) / (1 << 53)
	var d float64
	switch {
	case r.job.p.LifetimeDist == LifetimeFixed && !first:
		d = mean
	case r.job.p.LifetimeDist == LifetimeFixed:
		d = u * mean
	case r.job.p.LifetimeDist == LifetimeUniform:
		d = u * 2 * mean
	default:
		d = -mean * math.Log1p(-u)
	}
	r.timers.Push(client.Timer{At: now + int64(d), ID: s, Gen: r.slots[s].gen})
}

// WakeAt implements client.LoopRun: the next cycle, lifetime, ping or end.
func (r *run) WakeAt() int64 {
	w := r.stopAt
	if !r.holding {
		return w
	}
	w = min(w, r.end)
	if r.lifetime {
		if t := r.timers.Next(); t >= 0 {
			w = min(w, t)
		}
	} else {
		w = min(w, r.cycleAt(r.k))
	}
	if r.job.p.Ping > 0 && r.cu.Conns > 0 && r.cu.At() < r.ping.Duration {
		w = min(w, r.start+int64(r.cu.At()))
	}
	return w
}

// cycleAt is the loop clock cycle k is due (rate).
func (r *run) cycleAt(k int64) int64 {
	return r.start + int64((float64(k)+0.5)*r.period)
}

// Pump implements client.LoopRun: the cycles and pings due, the phase's end.
func (r *run) Pump(l *client.Loop, now int64) {
	if r.holding {
		r.cycles(l, now)
		if l.Run() != r {
			return
		}
		r.pings(l, now)
		if l.Run() != r {
			return
		}
		if now >= r.end {
			r.holding = false
		}
	}
	if !r.holding && (now >= r.stopAt || len(r.d.Inflight) == 0 && len(r.closing) == 0 && r.pending == 0) {
		r.Finish(l, false, now)
	}
}

// cycles runs the cycles due by now.
func (r *run) cycles(l *client.Loop, now int64) {
	late := int64(churnLateAfter)
	if r.lifetime {
		for l.Run() == r {
			at := r.timers.Next()
			if at < 0 || at > now || at >= r.end {
				return
			}
			t := r.timers.Pop()
			if sl := &r.slots[t.ID]; sl.gen != t.Gen || sl.c == nil {
				continue // an old lifetime of the slot
			}
			if now-at > late {
				r.part.Late++
			}
			r.cycle(l, t.ID, now)
		}
		return
	}
	for l.Run() == r {
		at := r.cycleAt(r.k)
		if at > now || at >= r.end {
			return
		}
		r.k++
		if now-at > late {
			r.part.Late++
		}
		if len(r.open) == 0 {
			r.part.Skipped++
			continue
		}
		r.cycle(l, r.open[r.rng.Uint64()%uint64(len(r.open))], now)
	}
}

// cycle closes slot s's connection and dials its replacement.
func (r *run) cycle(l *client.Loop, s int32, now int64) {
	c := r.take(s)
	r.part.Cycles++
	r.progress(1)
	r.close(l, c, now)
	if l.Run() != r {
		return
	}
	idx := r.job.first + r.next*r.job.stride
	r.next++
	r.slots[s].dialling = true
	r.dialing[idx] = s
	l.Dial(&r.d, idx, 0)
}

// close ends c as the phase's close says.
func (r *run) close(l *client.Loop, c *client.Conn, now int64) {
	how := r.job.p.Close
	if how == CloseMixed {
		how = CloseClean
		if r.rng.Uint64()&1 == 0 {
			how = CloseReset
		}
	}
	if how == CloseReset {
		// The close itself sends the reset; an error here leaves a FIN.
		_ = unix.SetsockoptLinger(int(c.FD()), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
		l.CloseFD(c)
		r.part.Resets++
		return
	}
	c.Flags |= client.FlagClosing
	c.Slot = int64(len(r.closing))
	r.closing = append(r.closing, churnClosing{c: c, at: now})
	l.SendControl(c, client.OpClose, []byte{client.CloseNormal >> 8, client.CloseNormal & 0xff})
}

// closed takes closing entry c off the list.
func (r *run) closed(c *client.Conn) (at int64, ok bool) {
	i := c.Slot
	if i < 0 || i >= int64(len(r.closing)) || r.closing[i].c != c {
		return 0, false
	}
	at = r.closing[i].at
	last := len(r.closing) - 1
	r.closing[i] = r.closing[last]
	r.closing[i].c.Slot = i
	r.closing[last] = churnClosing{}
	r.closing = r.closing[:last]
	return at, true
}

// pings sends the pings due by now (as a hold does).
func (r *run) pings(l *client.Loop, now int64) {
	if r.job.p.Ping <= 0 || r.cu.Conns == 0 {
		return
	}
	el := time.Duration(now - r.start)
	visited := 0
	for l.Run() == r {
		at := r.cu.At()
		if at >= r.ping.Duration || at > el {
			return
		}
		j := r.cu.Index
		if sl := &r.slots[j]; sl.c != nil {
			if due := r.ping.Due(el, r.cu.Phase(j)); sl.pings < due {
				sl.pings = due
				sl.waiting++
				r.pending++
				r.part.Pings++
				var stamp [8]byte
				binary.LittleEndian.PutUint64(stamp[:], uint64(l.Now()))
				l.SendControl(sl.c, client.OpPing, stamp[:])
			}
		}
		r.cu.Advance()
		if visited++; visited >= r.cu.Conns {
			r.cu.Seek(el)
			visited = 0
		}
	}
}

// OnPong implements client.LoopRun: a pong of one of the set's connections.
func (r *run) OnPong(l *client.Loop, c *client.Conn, payload []byte) {
	s := r.slotOf(c)
	if s < 0 {
		return
	}
	r.part.Pongs++
	if sl := &r.slots[s]; sl.waiting > 0 {
		sl.waiting--
		r.pending--
	}
	if len(payload) == 8 {
		if sent := int64(binary.LittleEndian.Uint64(payload)); sent > 0 && sent <= l.Now() {
			client.Record(r.part.PingLatency.Histogram, l.Now()-sent)
		}
	}
}

// Dialed implements the client's dialHooks: a replacement is open.
func (r *run) Dialed(l *client.Loop, c *client.Conn, idx int64, now int64) {
	s, ok := r.dialing[idx]
	if !ok {
		l.CloseConn(c, client.CloseNormal) // cannot happen
		return
	}
	delete(r.dialing, idx)
	r.put(s, c)
	if r.lifetime {
		r.arm(s, now, false)
	}
}

// GaveUp implements the client's dialHooks: the slot stays empty (the dialer counted
// the failure and its reasons).
func (r *run) GaveUp(_ *client.Loop, idx int64, _ client.Reason) {
	if s, ok := r.dialing[idx]; ok {
		delete(r.dialing, idx)
		r.slots[s].dialling = false
	}
}

// Lost implements client.LoopRun: the end of a close handshake, or a connection
// of the set dropped.
func (r *run) Lost(l *client.Loop, c *client.Conn, flags uint8, reason client.Reason) {
	if flags&client.FlagClosing != 0 {
		at, ok := r.closed(c)
		switch {
		case !ok:
		case len(reason) >= len(client.ReasonServerClose) && reason[:len(client.ReasonServerClose)] == client.ReasonServerClose:
			r.part.Clean++
			client.Record(r.part.CloseLatency.Histogram, l.Now()-at)
		case reason == client.ReasonEOF:
			r.part.CloseEOF++
		default:
			r.part.CloseErrors.Add(reason)
		}
		return
	}
	s := r.slotOf(c) // c.flags were cleared with the socket
	if s < 0 {
		return
	}
	r.take(s)
	r.slots[s].gone = c
	r.part.Dropped++
	r.part.Errors.Add(reason)
}

// Adopt implements the client's adopter: a connection the server dropped came back
// (the reconnector's); it takes its slot again.
func (r *run) Adopt(l *client.Loop, old, c *client.Conn) {
	s := old.Slot
	if s < 0 || s >= int64(len(r.slots)) || r.slots[s].gone != old || r.slots[s].c != nil || r.slots[s].dialling {
		return
	}
	r.slots[s].gone = nil
	r.put(int32(s), c)
	if r.lifetime {
		r.arm(int32(s), l.Now(), false)
	}
}

// Tick implements client.LoopRun: handshake and close deadlines, progress.
func (r *run) Tick(l *client.Loop, now int64) {
	r.d.Tick(l, now)
	if l.Run() != r {
		return
	}
	limit := int64(r.job.p.CloseTimeout)
	for i := len(r.closing) - 1; i >= 0; i-- {
		if i >= len(r.closing) {
			continue
		}
		if cc := r.closing[i]; now-cc.at >= limit {
			r.closed(cc.c)
			r.part.CloseTimeouts++
			l.CloseFD(cc.c)
		}
	}
	r.flush()
	if !r.holding && len(r.d.Inflight) == 0 && len(r.closing) == 0 {
		r.Pump(l, now)
	}
}

// progress publishes cycles in batches.
func (r *run) progress(n int64) {
	r.unflushed += n
	if r.job.pr != nil && r.unflushed >= client.ProgressBatch {
		r.flush()
	}
}

// flush publishes the cycles not yet published, and the live counts:
// pings and pongs (the replacements are the loop's: loopCounts).
func (r *run) flush() {
	if r.job.pr == nil {
		return
	}
	if r.unflushed > 0 {
		r.job.pr.Done.Add(r.unflushed)
		r.unflushed = 0
	}
	r.job.pr.Following().Publish(&r.published, client.LiveCounts{Sent: r.part.Pings, Recv: r.part.Pongs})
}

// Finish implements client.LoopRun: attempts in flight are abandoned and close
// handshakes still waiting are cut; the set's open connections stay open
// for the next phases.
func (r *run) Finish(l *client.Loop, stopped bool, _ int64) {
	l.SetRun(nil)
	r.d.Abandon(l)
	for _, cc := range r.closing {
		l.CloseFD(cc.c)
	}
	r.closing = nil
	for _, s := range r.open {
		r.slots[s].c.Slot = 0
	}
	r.part.Alive = int64(len(r.open))
	r.part.Connect = *r.d.Result()
	r.flush()
	l.Finished(r.job.phase, &r.part, stopped)
}
