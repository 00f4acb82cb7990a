package rate

import (
	"bytes"
	"math"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/pmdeflate"
)

// The event-loop side of the rate phase (params.go holds its contract:
// parameters, result, merge, split): what one loop runs — the timetable's
// cursor, the writes of due messages, the checks of their echoes.

// job is one loop's share of an open-loop rate phase.
type job struct {
	phase       int64
	slots       int // connections sending here: the loop's first slots open ones
	first       int // phase index of this loop's connection 0
	total       int // phase denominator
	pacer       client.Pacer
	start       time.Time // t = 0 of the timetable, the same for every loop
	drain       int64     // ns
	hdr         []byte    // frame header, mask key zeroed
	payload     []byte    // unmasked payload; each message replaces its first MarkerLen bytes with its marker
	verify      bool
	batch       int
	maxInflight int64 // per connection
	loopMax     int64 // messages in flight over the loop's connections
	lateAfter   int64 // ns
	slack       time.Duration
	reads       string
	pr          *client.Progress
}

// conn is a connection's state in a rate phase; conn.slot holds its
// index in run.conns while the phase runs.
type conn struct {
	c      *client.Conn
	next   int64 // messages sent: the number of the next one
	acked  int64 // echoes completed, intact or not: the number of the next one expected
	mark   [client.MarkerLen]byte
	bad    bool // the echo being received differs from the message sent
	capped bool // a message is due but MaxInflight messages are in flight
}

// run is an open-loop rate phase running in a loop. The cursor walks
// the timetable; at each event the connection concerned writes every
// message due by now (up to Batch bytes a write), unless its socket is
// not writable or MaxInflight messages are in flight: its due messages
// then wait, and leave as soon as a flush or an echo frees it, late but
// with their scheduled times. Nothing waits for replies.
type run struct {
	client.BaseRun
	wireIn0   int64 // the loop's received wire bytes at the start
	wakes0    int64 // the loop's wake-ups at the start
	gate      client.PacedWake
	job       job
	timetable client.Cursor
	conns     []conn
	flen      int   // frame length
	start     int64 // loop clock at t = 0
	end       int64 // start + Duration: sending stops
	stopAt    int64 // end + drain: the phase stops here at the latest
	sending   bool
	inflight  int64 // messages sent whose echo is still due, over live connections
	live      int
	left      int   // bytes this pump may still write
	wake      int64 // loop clock of the next pump
	due       int64 // loop clock of the next due event (wake without the slack)
	part      Result
	noConns   bool              // every connection was lost
	tl        client.Timeline   // per second: sends, echoes and their latencies
	published client.LiveCounts // what Live has of this loop
	unflushed int64

	// Permessage-deflate: each message is compressed on its own (they
	// all differ in their marker), with the loop's shared deflater.
	zc      pmdeflate.Compressor
	zbits   uint8  // client window bits zc was set up for; 0 = none yet
	zin     []byte // the message before compression
	zout    []byte // compressed
	wireOut int64  // data bytes written as framed (compressed or not)
}

// begin starts a rate phase on l.
func begin(l *client.Loop, j *job) {
	r := &run{BaseRun: client.NewBaseRun(j.phase), job: *j, part: Result{Latency: client.NewHist()}, wireIn0: l.WireIn()}
	l.SetRun(r)
	r.flen = len(j.hdr) + len(j.payload)
	// Room for a compressed frame too: deflate can grow a message that
	// does not compress by a few bytes per block.
	if need := max(j.batch, r.flen) + r.flen/64 + 64; cap(l.WriteBuf) < need {
		l.WriteBuf = make([]byte, need)
	}
	r.gate = client.NewPacedWake(j.slack)
	r.wakes0 = l.Wakes()
	r.start = int64(j.start.Sub(l.Epoch()))
	r.tl = client.NewTimeline(r.start)
	r.tl.Live = r.job.pr.Following()
	r.end = r.start + int64(j.pacer.Duration)
	r.stopAt = r.end + j.drain
	n := min(j.slots, len(l.Open()))
	r.conns = make([]conn, n)
	for i := range r.conns {
		c := l.Open()[i]
		r.conns[i].c = c
		c.Slot = int64(i)
	}
	r.live = n
	r.part.Conns = n
	r.part.Reads = r.gate.Begin(l, l.Open()[:n], j.reads)
	r.timetable = client.Cursor{Pacer: j.pacer, First: j.first, Total: j.total, Conns: n}
	r.sending = true
	l.SetTick(client.MaxTick)
	r.Pump(l, l.Now())
}

// WakeAt implements LoopRun.
func (r *run) WakeAt() int64 { return r.wake }

// DueAt implements the loop's optional DueAt: the next due message.
func (r *run) DueAt() int64 { return r.due }

// Pump implements LoopRun: it sends what the timetable has due by now,
// closes the sending window at its end, ends the phase when nothing is
// left to wait for, and sets the time of the next pump.
func (r *run) Pump(l *client.Loop, now int64) {
	more := false
	r.gate.Pumped(now)
	if r.sending {
		el := time.Duration(now - r.start)
		visited := 0
		r.left = max(client.PumpBytes, r.job.batch)
		for r.live > 0 {
			at := r.timetable.At()
			if at >= r.job.pacer.Duration || at > el {
				break
			}
			r.send(l, r.timetable.Index, now)
			if l.Run() != r {
				return
			}
			if r.left <= 0 {
				// Read before writing more; this connection is visited
				// again at the next pump, right after.
				more = true
				break
			}
			r.timetable.Advance()
			// A whole round visited in one pump: every connection is up to
			// date with now, so the events still behind are done too.
			if visited++; visited >= len(r.conns) {
				r.timetable.Seek(el)
				visited = 0
			}
		}
		if now >= r.end || r.live == 0 && !l.Reconnecting() {
			r.closeWindow(now)
		}
	}
	if !r.sending && (r.inflight == 0 || now >= r.stopAt) {
		r.Finish(l, false, now)
		return
	}
	if r.sending {
		r.wake, r.due = r.end, r.end
		if at := r.timetable.At(); at < r.job.pacer.Duration {
			r.due = min(r.due, r.start+int64(at))
			r.wake = min(r.wake, r.gate.Wake(r.due))
		}
		if more {
			r.wake, r.due = now, now
		}
	} else {
		r.wake, r.due = r.stopAt, r.stopAt
	}
}

// closeWindow ends the sending part of the phase: what was due and not
// sent by now stays unsent.
func (r *run) closeWindow(now int64) {
	r.sending = false
	el := time.Duration(now - r.start)
	for j := range r.conns {
		r.part.Scheduled += r.job.pacer.Due(el, r.timetable.Phase(j))
	}
	if r.live == 0 {
		r.noConns = true
	}
}

// send writes connection j's due messages, in batches of up to
// job.batch bytes, until none is due, the socket stops taking them,
// MaxInflight are in flight on the connection or loopMax on the loop, or
// the pump's write budget is spent.
func (r *run) send(l *client.Loop, j int, now int64) {
	rc := &r.conns[j]
	c := rc.c
	if c.State() != client.StateOpen || c.Flags&client.FlagWantOut != 0 {
		return // closed, or blocked until flush empties its output
	}
	phase := r.timetable.Phase(j)
	due := r.job.pacer.Due(time.Duration(now-r.start), phase)
	if rc.next >= due {
		return
	}
	_, sec := r.tl.Second(now)
	buf := l.WriteBuf[:0]
	for rc.next < due && r.inflight < r.job.loopMax && r.left > 0 {
		if rc.next-rc.acked >= r.job.maxInflight {
			rc.capped = true
			break
		}
		if len(buf) > 0 && len(buf)+r.flen > r.job.batch {
			if !l.WriteOrQueue(c, buf) {
				buf = buf[:0]
				break
			}
			buf = l.WriteBuf[:0]
		}
		at := int64(r.job.pacer.At(rc.next, phase))
		if c.Sec != nil && c.Sec.Deflate {
			var ok bool
			if buf, ok = r.appendZFrame(l, c, buf, uint64(rc.next), at); !ok {
				break // the socket refused the batch before it
			}
		} else {
			buf = r.appendFrame(l, buf, uint64(rc.next), at)
			r.wireOut += int64(len(r.job.payload))
		}
		r.left -= r.flen
		rc.next++
		r.inflight++
		r.part.Sent++
		sec.Sent++
		if now-(r.start+at) > r.job.lateAfter {
			r.part.Late++
			sec.Late++
		}
		r.gate.Sent(now, r.start+at)
		r.unflushed++
	}
	if len(buf) > 0 {
		l.WriteOrQueue(c, buf)
	}
	if r.unflushed >= client.ProgressBatch && r.job.pr != nil {
		r.job.pr.Done.Add(r.unflushed)
		r.unflushed = 0
		r.job.pr.Following().Publish(&r.published, r.liveCounts())
	}
}

// appendFrame appends message seq, scheduled at `at` ns after the start,
// as a masked frame with a fresh key. buf has room for it.
func (r *run) appendFrame(l *client.Loop, buf []byte, seq uint64, at int64) []byte {
	key := uint32(l.Rand().Uint64())
	n := len(buf)
	buf = buf[:n+r.flen]
	hl := copy(buf[n:], r.job.hdr)
	f := buf[n:]
	f[hl-4] = byte(key)
	f[hl-3] = byte(key >> 8)
	f[hl-2] = byte(key >> 16)
	f[hl-1] = byte(key >> 24)
	var m [client.MarkerLen]byte
	client.PutMarker(m[:], seq, at)
	client.MaskCopy(f[hl:], m[:], key, 0)
	client.MaskCopy(f[hl+client.MarkerLen:], r.job.payload[client.MarkerLen:], key, client.MarkerLen)
	r.part.BytesSent += int64(len(r.job.payload))
	return buf
}

// appendZFrame appends message seq compressed (RSV1 set), masked with a
// fresh key. A compressed frame that does not fit behind buf's batch is
// preceded by writing the batch (ok false: the socket refused it).
func (r *run) appendZFrame(l *client.Loop, c *client.Conn, buf []byte, seq uint64, at int64) ([]byte, bool) {
	if bits := c.Sec.WindowBits; bits != r.zbits {
		r.zc.Init(&l.Deflater, pmdeflate.Params{ClientNoContextTakeover: true, ClientMaxWindowBits: int(bits)})
		r.zbits = bits
	}
	r.zin = append(r.zin[:0], r.job.payload...)
	client.PutMarker(r.zin[:client.MarkerLen], seq, at)
	r.zout = r.zc.Compress(r.zout[:0], r.zin)
	need := client.MaxHeader + len(r.zout)
	if len(buf) > 0 && len(buf)+need > cap(buf) {
		if !l.WriteOrQueue(c, buf) {
			return buf[:0], false
		}
		buf = l.WriteBuf[:0]
	}
	if cap(buf) < need { // a message that grew under compression
		l.WriteBuf = make([]byte, 0, need)
		buf = l.WriteBuf[:0]
	}
	key := uint32(l.Rand().Uint64())
	n := len(buf)
	buf = client.AppendClientHeader(buf, client.OpBinary, len(r.zout), key)
	buf[n] |= client.Rsv1
	h := len(buf)
	buf = buf[:h+len(r.zout)]
	client.MaskCopy(buf[h:], r.zout, key, 0)
	r.part.BytesSent += int64(len(r.job.payload))
	r.wireOut += int64(len(r.zout))
	return buf, true
}

// slot returns c's state in the phase, or nil if c does not take part.
func (r *run) slot(c *client.Conn) *conn {
	if i := c.Slot; i >= 0 && i < int64(len(r.conns)) && r.conns[i].c == c {
		return &r.conns[i]
	}
	return nil
}

// Resume implements LoopRun: it sends c's overdue messages once its output
// has drained (within what is left of the last pump's write budget; else
// its next visit does).
func (r *run) Resume(l *client.Loop, c *client.Conn) {
	if rc := r.slot(c); rc != nil && r.sending {
		r.send(l, int(c.Slot), l.Now())
	}
}

// OnData implements LoopRun: it checks a chunk of an echo and completes it
// at its end: the marker
// must name the next message expected on the connection and its scheduled
// time, and (with verify) the rest must match the payload.
func (r *run) OnData(l *client.Loop, c *client.Conn, ev *client.Event, now int64) {
	rc := r.slot(c)
	if rc == nil {
		return
	}
	d := ev.Data
	pos := ev.Total - int64(len(d))
	r.part.BytesRecv += int64(len(d))
	if pos < client.MarkerLen {
		k := copy(rc.mark[pos:], d)
		d = d[k:]
		pos += int64(k)
	}
	p := r.job.payload
	if ev.Total > int64(len(p)) {
		rc.bad = true
	} else if r.job.verify && len(d) > 0 && !bytes.Equal(d, p[pos:ev.Total]) {
		rc.bad = true
	}
	if !ev.End {
		return
	}
	var reason client.Reason
	var at int64
	switch {
	case rc.acked >= rc.next:
		reason = client.ReasonUnexpected
	case ev.Total != int64(len(p)):
		reason = client.ReasonWrongLength
	case ev.Op != client.OpBinary:
		reason = client.ReasonWrongOpcode
	case rc.bad:
		reason = client.ReasonPayloadMismatch
	default:
		reason, at = r.checkMarker(rc, int(c.Slot))
	}
	rc.bad = false
	rc.mark = [client.MarkerLen]byte{}
	if rc.acked < rc.next && reason != reasonStale {
		rc.acked++
		r.inflight--
	}
	switch reason {
	case "":
		r.part.Recv++
		r.tl.Echo(now, max(0, now-(r.start+at)), r.part.Latency.Histogram)
	case reasonStale:
		r.part.Failed++
		r.part.Errors.Add(client.ReasonMarkerMismatch)
	default:
		r.part.Failed++
		r.part.Errors.Add(reason)
	}
	if rc.capped && r.sending {
		rc.capped = false
		r.send(l, int(c.Slot), l.Now()) // now may be the echo's arrival, before this read
		if l.Run() != r {
			return
		}
	}
	if !r.sending && r.inflight == 0 {
		r.Finish(l, false, now)
	}
}

// reasonStale marks an echo of a message the connection already gave up
// as lost (checkMarker): it came out of order, and takes no place of the
// echoes still due.
const reasonStale client.Reason = "stale echo"

// checkMarker checks the marker of an intact echo on connection j: it
// must name the next message due and its scheduled time (reason "").
// A connection's echoes come in order (one TCP stream), so a marker
// naming a later message sent, with that message's time, means the
// server skipped those before it: they are lost (they count as sent and
// never echoed), and this echo is intact. One naming a message already
// skipped is stale (reasonStale); any other marker is a mismatch.
func (r *run) checkMarker(rc *conn, j int) (client.Reason, int64) {
	seq, at := client.ReadMarker(rc.mark[:])
	phase := r.timetable.Phase(j)
	switch {
	case seq == uint64(rc.acked) && at == int64(r.job.pacer.At(rc.acked, phase)):
		return "", at
	case seq > uint64(rc.acked) && seq < uint64(rc.next) && at == int64(r.job.pacer.At(int64(seq), phase)):
		skip := int64(seq) - rc.acked
		rc.acked += skip
		r.inflight -= skip
		return "", at
	case seq < uint64(rc.acked) && at == int64(r.job.pacer.At(int64(seq), phase)):
		return reasonStale, at
	}
	return client.ReasonMarkerMismatch, at
}

// Lost implements LoopRun: it takes a dropped connection out of the
// phase; its messages in flight will never be echoed (they count as lost).
func (r *run) Lost(_ *client.Loop, c *client.Conn, _ uint8, reason client.Reason) {
	rc := r.slot(c)
	if rc == nil {
		return
	}
	r.inflight -= rc.next - rc.acked
	rc.acked = rc.next
	r.live--
	r.part.Errors.Add(reason)
	if r.live == 0 || (!r.sending && r.inflight == 0) {
		r.wake, r.due = 0, 0 // the next pump ends the phase
	}
}

// Adopt implements the loop's optional Adopt: a dropped connection came back; it takes its
// place in the timetable from now on. Its messages due while it was down
// are not sent (they stay unsent), those in flight at the drop were lost:
// the next message it sends is the one due next.
func (r *run) Adopt(l *client.Loop, old, c *client.Conn) {
	rc := r.slot(old)
	if rc == nil || !r.sending {
		return
	}
	j := int(old.Slot)
	rc.c = c
	c.Slot = int64(j)
	if due := r.job.pacer.Due(time.Duration(l.Now()-r.start), r.timetable.Phase(j)); due > rc.next {
		rc.next = due
	}
	rc.acked, rc.bad, rc.capped, rc.mark = rc.next, false, false, [client.MarkerLen]byte{}
	r.live++
	if r.gate.Batched {
		client.StampReads(c, true) // refused: this connection's reads end at the read
	}
}

// Tick implements LoopRun: it publishes progress.
func (r *run) Tick(*client.Loop, int64) {
	if r.job.pr != nil && r.unflushed > 0 {
		r.job.pr.Done.Add(r.unflushed)
		r.unflushed = 0
	}
	r.job.pr.Following().Publish(&r.published, r.liveCounts())
}

// Finish implements LoopRun: it ends the rate phase here and reports this
// loop's share. Echoes still due are discarded when they come (conn.skip).
func (r *run) Finish(l *client.Loop, stopped bool, now int64) {
	if r.sending {
		r.closeWindow(now)
	}
	r.tl.Roll(r.part.Latency.Histogram)
	for i := range r.conns {
		rc := &r.conns[i]
		c := rc.c
		if c.State() == client.StateOpen && c.Slot == int64(i) {
			if out := rc.next - rc.acked; out > 0 {
				c.Skip = uint16(min(int64(c.Skip)+out, math.MaxUint16))
			}
		}
		c.Slot = 0
	}
	elapsed := max(0, time.Duration(now-r.start))
	r.tl.Second(now) // the timeline reaches the end
	r.part.Seconds = r.tl.Seconds
	r.part.Used = min(elapsed, r.job.pacer.Duration)
	r.part.Drain = elapsed - r.part.Used
	r.part.Unsent = r.part.Scheduled - r.part.Sent
	if r.noConns {
		r.part.Stopped = client.StopNoConnections
	}
	if r.job.pr != nil && r.unflushed > 0 {
		r.job.pr.Done.Add(r.unflushed)
	}
	r.job.pr.Following().Publish(&r.published, r.finalCounts())
	r.gate.End(l)
	r.part.Slack = time.Duration(r.gate.Slack)
	r.part.SendLate = client.Hist{Histogram: r.gate.Late}
	r.part.Wakeups = l.Wakes() - r.wakes0
	r.part.BytesPayload = r.part.BytesSent + r.part.BytesRecv
	r.part.BytesWire = r.wireOut + l.WireIn() - r.wireIn0
	l.Finished(r.job.phase, &r.part, stopped)
}

// finalCounts are this loop's totals at the end, with the echoes lost.
func (r *run) finalCounts() client.LiveCounts {
	c := r.liveCounts()
	c.Lost = r.part.Lost()
	return c
}

// liveCounts are this loop's totals so far, for Live.
func (r *run) liveCounts() client.LiveCounts {
	return client.LiveCounts{Sent: r.part.Sent, Recv: r.part.Recv, Failed: r.part.Failed, Late: r.part.Late, Unsent: r.part.Unsent}
}
