package echo

import (
	"bytes"
	"sync/atomic"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/pmdeflate"
)

// job is one loop's share of a closed-loop echo phase.
type job struct {
	phase   int64
	slots   int    // connections with a message in flight
	hdr     []byte // frame header, mask key zeroed
	payload []byte // unmasked payload; echoes must match it
	op      byte
	verify  bool
	timeout int64 // per message, ns
	pool    *tokenPool
	batch   int64 // tokens taken from the pool at a time
	pr      *client.Progress
	start   time.Time // t = 0 of the timeline, the same for every loop
}

// tokenPool holds the messages still to send in a phase, shared by its
// loops. Loops take them in batches, so the pool costs no atomic operation
// per message; warm-up tokens are taken first.
type tokenPool struct {
	warm, meas atomic.Int64
}

// take removes up to n tokens from a and returns how many it got.
func take(a *atomic.Int64, n int64) int64 {
	for {
		r := a.Load()
		if r <= 0 {
			return 0
		}
		k := min(r, n)
		if a.CompareAndSwap(r, r-k) {
			return k
		}
	}
}

// run is a closed-loop echo phase running in a loop. A connection
// takes part while it holds a message in flight (fInflight): when its echo
// completes (or fails) it sends the next message, if a token is left.
// Connections that were idle at the start replace ones that are lost.
type run struct {
	client.BaseRun
	job       job
	inflight  int
	warmLeft  int64 // tokens taken from the pool, not yet used
	measLeft  int64
	idle      []*client.Conn // open connections not in use, to replace lost ones
	part      Result
	unflushed int64
	published client.LiveCounts // what Live has of this loop
	starting  bool              // echoStart is sending the first messages
	tl        client.Timeline

	// z holds the phase's frame compressed on its own, per negotiated
	// client window bits (index), made on first use by a connection that
	// negotiated permessage-deflate.
	z                   [pmdeflate.MaxWindowBits + 1]*zframe
	wireOut, payloadOut int64 // data bytes sent: as framed, as payload
	wireIn0, payloadIn0 int64 // the loop's received counts at the start
}

// zframe is a pre-computed compressed frame: its header (RSV1 set, mask
// key zeroed) and payload.
type zframe struct {
	hdr, payload []byte
}

// zframe returns the phase's frame compressed for client window bits.
func (e *run) zframe(l *client.Loop, bits uint8) *zframe {
	if z := e.z[bits]; z != nil {
		return z
	}
	var c pmdeflate.Compressor
	c.Init(&l.Deflater, pmdeflate.Params{ClientNoContextTakeover: true, ClientMaxWindowBits: int(bits)})
	pl := c.Compress(nil, e.job.payload)
	hdr := client.AppendClientHeader(nil, e.job.op, len(pl), 0)
	hdr[0] |= client.Rsv1
	z := &zframe{hdr: hdr, payload: pl}
	if need := len(hdr) + len(pl); cap(l.WriteBuf) < need {
		l.WriteBuf = make([]byte, need)
	}
	e.z[bits] = z
	return z
}

// begin begins an echo phase in this loop.
func begin(l *client.Loop, job *job) {
	e := &run{BaseRun: client.NewBaseRun(job.phase), job: *job, part: Result{Latency: client.NewHist()}, wireIn0: l.WireIn(), payloadIn0: l.PayloadIn(),
		tl: client.NewTimeline(int64(job.start.Sub(l.Epoch())))}
	e.tl.Live = job.pr.Following()
	l.SetRun(e)
	if need := len(job.hdr) + len(job.payload); cap(l.WriteBuf) < need {
		l.WriteBuf = make([]byte, need)
	}
	l.SetTick(time.Duration(job.timeout / 10))
	slots := min(job.slots, len(l.Open()))
	active := append([]*client.Conn(nil), l.Open()[:slots]...)
	e.idle = append([]*client.Conn(nil), l.Open()[slots:]...)
	e.starting = true
	now := l.Now()
	for _, c := range active {
		if l.Run() != e {
			return
		}
		if c.State() == client.StateOpen && !next(l, e, c, now) {
			break
		}
	}
	e.starting = false
	e.maybeDone(l)
}

// claim takes one token: ok is false when none is left.
func (e *run) claim() (ok, warm bool) {
	if e.warmLeft == 0 && e.measLeft == 0 {
		if e.warmLeft = take(&e.job.pool.warm, e.job.batch); e.warmLeft == 0 {
			e.measLeft = take(&e.job.pool.meas, e.job.batch)
		}
	}
	switch {
	case e.warmLeft > 0:
		e.warmLeft--
		return true, true
	case e.measLeft > 0:
		e.measLeft--
		return true, false
	}
	return false, false
}

// next sends c's next message if a token is left, reporting whether
// it did.
func next(l *client.Loop, e *run, c *client.Conn, now int64) bool {
	ok, warm := e.claim()
	if !ok {
		return false
	}
	c.Flags |= client.FlagInflight
	if warm {
		c.Flags |= client.FlagWarm
	} else {
		_, s := e.tl.Second(now)
		s.Sent++
	}
	c.Slot = now
	e.inflight++
	sendData(l, e, c)
	return true
}

// sendData masks the phase's frame with a fresh key into the loop's write
// buffer and writes it; what the socket does not take waits for EPOLLOUT.
func sendData(l *client.Loop, e *run, c *client.Conn) {
	key := uint32(l.Rand().Uint64())
	c.WKey = key
	c.WOff = 0
	if c.Flags&client.FlagWantOut != 0 {
		c.Flags |= client.FlagDataPend // written by flush, after the queued output
		return
	}
	l.FrameConn = c
	b := e.Frame(l, key, 0)
	e.payloadOut += int64(len(e.job.payload))
	e.wireOut += int64(len(b) - len(e.job.hdr))
	if c.Sec != nil && c.Sec.Deflate {
		e.wireOut += int64(len(e.job.hdr) - len(e.z[c.Sec.WindowBits].hdr))
	}
	n, errno := l.Write(c, b)
	if errno != 0 {
		if !client.WouldBlock(errno) {
			l.Drop(c, client.Reason("write: "+errno.Error()))
			return
		}
		n = 0
	}
	if n < len(b) {
		c.WOff = int32(n)
		c.Flags |= client.FlagDataPend
		l.WantOut(c)
	}
}

// Frame implements LoopRun: it writes bytes [off:] of the phase's frame,
// masked with key, into the loop's write buffer and returns them.
// The connection is l.fc: one that negotiated permessage-deflate gets
// the compressed frame.
func (e *run) Frame(l *client.Loop, key uint32, off int) []byte {
	hdr, payload := e.job.hdr, e.job.payload
	if c := l.FrameConn; c != nil && c.Sec != nil && c.Sec.Deflate {
		z := e.zframe(l, c.Sec.WindowBits)
		hdr, payload = z.hdr, z.payload
	}
	hl := len(hdr)
	out := l.WriteBuf[:hl+len(payload)-off]
	n := 0
	if off < hl {
		var h [client.MaxHeader]byte
		copy(h[:], hdr)
		h[hl-4] = byte(key)
		h[hl-3] = byte(key >> 8)
		h[hl-2] = byte(key >> 16)
		h[hl-1] = byte(key >> 24)
		n = copy(out, h[off:hl])
		off = hl
	}
	client.MaskCopy(out[n:], payload[off-hl:], key, off-hl)
	return out
}

// OnData implements LoopRun: it checks a chunk of c's reply and completes
// the echo at its end.
func (e *run) OnData(l *client.Loop, c *client.Conn, ev *client.Event, now int64) {
	if c.Flags&client.FlagInflight == 0 {
		return // a message nobody asked for: ignored
	}
	if c.Flags&client.FlagDataPend != 0 {
		// A reply before the request was fully written is not an echo.
		l.Drop(c, client.ReasonUnexpected)
		return
	}
	p := e.job.payload
	if ev.Total > int64(len(p)) {
		c.Flags |= client.FlagBad
	} else if e.job.verify && !bytes.Equal(ev.Data, p[ev.Total-int64(len(ev.Data)):ev.Total]) {
		c.Flags |= client.FlagBad
	}
	if !ev.End {
		return
	}
	warm := c.Flags&client.FlagWarm != 0
	var reason client.Reason
	switch {
	case ev.Total != int64(len(p)):
		reason = client.ReasonWrongLength
	case c.Flags&client.FlagBad != 0:
		reason = client.ReasonPayloadMismatch
	case ev.Op != e.job.op:
		reason = client.ReasonWrongOpcode
	}
	c.Flags &^= client.FlagInflight | client.FlagWarm | client.FlagBad
	e.inflight--
	if !warm {
		if reason == "" {
			e.part.Success++
			e.tl.Echo(now, now-c.Slot, e.part.Latency.Histogram)
		} else {
			e.part.Failed++
			e.part.Errors.Add(reason)
		}
	}
	e.progress(1)
	next(l, e, c, now)
	e.maybeDone(l)
}

// Lost implements LoopRun: it charges a lost connection's in-flight
// message and puts an idle connection in its place.
func (e *run) Lost(l *client.Loop, _ *client.Conn, flags uint8, reason client.Reason) {
	if flags&client.FlagInflight == 0 {
		return
	}
	e.inflight--
	if flags&client.FlagWarm == 0 {
		e.part.Failed++
		e.part.Errors.Add(reason)
	}
	e.progress(1)
	now := l.Now()
	for l.Run() == e && len(e.idle) > 0 {
		c := e.idle[len(e.idle)-1]
		e.idle[len(e.idle)-1] = nil
		e.idle = e.idle[:len(e.idle)-1]
		if c.State() != client.StateOpen || c.Flags&client.FlagInflight != 0 {
			continue
		}
		if next(l, e, c, now) || l.Run() != e {
			break
		}
		break // no token left
	}
	e.maybeDone(l)
}

// Adopt implements adopter: a dropped connection came back; it stands by
// with the idle ones, and takes the next message if one is waiting.
func (e *run) Adopt(l *client.Loop, _, c *client.Conn) {
	if l.Run() != e {
		return
	}
	if e.inflight >= e.job.slots || !next(l, e, c, l.Now()) {
		e.idle = append(e.idle, c)
	}
}

// maybeDone ends the phase here once nothing is in flight.
func (e *run) maybeDone(l *client.Loop) {
	if l.Run() == e && e.inflight == 0 && !e.starting {
		e.Finish(l, false, 0)
	}
}

// progress publishes finished echoes in batches.
func (e *run) progress(n int64) {
	e.unflushed += n
	if e.unflushed >= client.ProgressBatch && e.job.pr != nil {
		e.job.pr.Done.Add(e.unflushed)
		e.unflushed = 0
		e.job.pr.Following().Publish(&e.published, e.liveCounts())
	}
}

// Tick implements LoopRun: it fails messages older than the timeout
// (dropping their connections) and publishes progress.
func (e *run) Tick(l *client.Loop, now int64) {
	for i := len(l.Open()) - 1; i >= 0 && l.Run() == e; i-- {
		if i >= len(l.Open()) {
			continue
		}
		if c := l.Open()[i]; c.Flags&client.FlagInflight != 0 && now-c.Slot > e.job.timeout {
			l.Drop(c, client.ReasonTimeout)
		}
	}
	if l.Run() == e && e.job.pr != nil && e.unflushed > 0 {
		e.job.pr.Done.Add(e.unflushed)
		e.unflushed = 0
		e.job.pr.Following().Publish(&e.published, e.liveCounts())
	}
}

// Finish implements LoopRun: it ends the echo phase here and reports this
// loop's share. If it was stopped (by a command or Close), messages in
// flight are abandoned: neither success nor failure, and their replies,
// when they come, are discarded (conn.skip).
func (e *run) Finish(l *client.Loop, stopped bool, _ int64) {
	for _, c := range l.Open() {
		if c.Flags&client.FlagInflight != 0 {
			c.Flags &^= client.FlagInflight | client.FlagWarm | client.FlagBad
			if c.Skip < ^uint16(0) {
				c.Skip++
			}
		}
		if c.Flags&client.FlagDataPend != 0 {
			l.Spill(e, c)
		}
	}
	e.job.pool.warm.Add(e.warmLeft)
	e.job.pool.meas.Add(e.measLeft)
	if e.job.pr != nil && e.unflushed > 0 {
		e.job.pr.Done.Add(e.unflushed)
	}
	e.part.BytesPayload = e.payloadOut + l.PayloadIn() - e.payloadIn0
	e.part.BytesWire = e.wireOut + l.WireIn() - e.wireIn0
	e.tl.Roll(e.part.Latency.Histogram)
	e.job.pr.Following().Publish(&e.published, e.liveCounts())
	e.part.Seconds = e.tl.Seconds
	l.Finished(e.job.phase, &e.part, stopped)
}

// liveCounts are this loop's totals so far, for Live.
func (e *run) liveCounts() client.LiveCounts {
	return client.LiveCounts{Sent: e.part.Success + e.part.Failed, Recv: e.part.Success, Failed: e.part.Failed}
}
