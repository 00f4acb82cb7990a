package client

import (
	"bytes"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// echoJob is one loop's share of a closed-loop echo phase.
type echoJob struct {
	phase   int64
	slots   int    // connections with a message in flight
	hdr     []byte // frame header, mask key zeroed
	payload []byte // unmasked payload; echoes must match it
	op      byte
	verify  bool
	timeout int64 // per message, ns
	pool    *tokenPool
	batch   int64 // tokens taken from the pool at a time
	pr      *Progress
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

// echoPart is one loop's share of an EchoResult.
type echoPart struct {
	success, failed int64
	errors          map[string]int64
	hist            *hdrhistogram.Histogram
}

// count adds one failure with reason.
func (p *echoPart) count(reason string) {
	if p.errors == nil {
		p.errors = make(map[string]int64)
	}
	p.errors[reason]++
}

// echoRun is a closed-loop echo phase running in a loop. A connection
// takes part while it holds a message in flight (fInflight): when its echo
// completes (or fails) it sends the next message, if a token is left.
// Connections that were idle at the start replace ones that are lost.
type echoRun struct {
	job       echoJob
	inflight  int
	warmLeft  int64 // tokens taken from the pool, not yet used
	measLeft  int64
	idle      []*conn // open connections not in use, to replace lost ones
	part      echoPart
	unflushed int64
	starting  bool // echoStart is sending the first messages
}

// echoStart begins an echo phase in this loop.
func (l *loop) echoStart(job *echoJob) {
	e := &echoRun{job: *job, part: echoPart{hist: NewHistogram()}}
	l.echo = e
	if need := len(job.hdr) + len(job.payload); cap(l.wbuf) < need {
		l.wbuf = make([]byte, need)
	}
	l.setTick(time.Duration(job.timeout / 10))
	slots := min(job.slots, len(l.open))
	active := append([]*conn(nil), l.open[:slots]...)
	e.idle = append([]*conn(nil), l.open[slots:]...)
	e.starting = true
	now := l.now()
	for _, c := range active {
		if l.echo != e {
			return
		}
		if c.state == stOpen && !l.echoNext(c, now) {
			break
		}
	}
	e.starting = false
	e.maybeDone(l)
}

// claim takes one token: ok is false when none is left.
func (e *echoRun) claim() (ok, warm bool) {
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

// echoNext sends c's next message if a token is left, reporting whether
// it did.
func (l *loop) echoNext(c *conn, now int64) bool {
	e := l.echo
	ok, warm := e.claim()
	if !ok {
		return false
	}
	c.flags |= fInflight
	if warm {
		c.flags |= fWarm
	}
	c.sentAt = now
	e.inflight++
	l.sendData(c)
	return true
}

// sendData masks the phase's frame with a fresh key into the loop's write
// buffer and writes it; what the socket does not take waits for EPOLLOUT.
func (l *loop) sendData(c *conn) {
	key := uint32(l.rng.Uint64())
	c.wkey = key
	c.woff = 0
	if c.flags&fWantOut != 0 {
		c.flags |= fDataPend // written by flush, after the queued output
		return
	}
	b := l.echo.frameFrom(l, key, 0)
	n, e := rawWrite(c.fd, b)
	if e != 0 {
		if !wouldBlock(e) {
			l.lost(c, "write: "+e.Error())
			return
		}
		n = 0
	}
	if n < len(b) {
		c.woff = int32(n)
		c.flags |= fDataPend
		l.wantOut(c)
	}
}

// frameFrom writes bytes [off:] of the phase's frame, masked with key, into
// the loop's write buffer and returns them.
func (e *echoRun) frameFrom(l *loop, key uint32, off int) []byte {
	hl := len(e.job.hdr)
	out := l.wbuf[:hl+len(e.job.payload)-off]
	n := 0
	if off < hl {
		var h [maxHeader]byte
		copy(h[:], e.job.hdr)
		h[hl-4] = byte(key)
		h[hl-3] = byte(key >> 8)
		h[hl-2] = byte(key >> 16)
		h[hl-1] = byte(key >> 24)
		n = copy(out, h[off:hl])
		off = hl
	}
	maskCopy(out[n:], e.job.payload[off-hl:], key, off-hl)
	return out
}

// onData checks a chunk of c's reply and completes the echo at its end.
func (e *echoRun) onData(l *loop, c *conn, ev *event, now int64) {
	if c.flags&fDataPend != 0 {
		// A reply before the request was fully written is not an echo.
		l.lost(c, "unexpected message")
		return
	}
	p := e.job.payload
	if ev.total > int64(len(p)) {
		c.flags |= fBad
	} else if e.job.verify && !bytes.Equal(ev.data, p[ev.total-int64(len(ev.data)):ev.total]) {
		c.flags |= fBad
	}
	if !ev.end {
		return
	}
	warm := c.flags&fWarm != 0
	var reason string
	switch {
	case ev.total != int64(len(p)):
		reason = "wrong length"
	case c.flags&fBad != 0:
		reason = "payload mismatch"
	case ev.op != e.job.op:
		reason = "wrong opcode"
	}
	c.flags &^= fInflight | fWarm | fBad
	e.inflight--
	if !warm {
		if reason == "" {
			e.part.success++
			record(e.part.hist, now-c.sentAt)
		} else {
			e.part.failed++
			e.part.count(reason)
		}
	}
	e.progress(1)
	l.echoNext(c, now)
	e.maybeDone(l)
}

// lostInflight charges a lost connection's in-flight message and puts an
// idle connection in its place.
func (e *echoRun) lostInflight(l *loop, warm bool, reason string) {
	e.inflight--
	if !warm {
		e.part.failed++
		e.part.count(reason)
	}
	e.progress(1)
	now := l.now()
	for l.echo == e && len(e.idle) > 0 {
		c := e.idle[len(e.idle)-1]
		e.idle[len(e.idle)-1] = nil
		e.idle = e.idle[:len(e.idle)-1]
		if c.state != stOpen || c.flags&fInflight != 0 {
			continue
		}
		if l.echoNext(c, now) || l.echo != e {
			break
		}
		break // no token left
	}
	e.maybeDone(l)
}

// maybeDone ends the phase here once nothing is in flight.
func (e *echoRun) maybeDone(l *loop) {
	if l.echo == e && e.inflight == 0 && !e.starting {
		l.echoFinish(false)
	}
}

// progress publishes finished echoes in batches.
func (e *echoRun) progress(n int64) {
	e.unflushed += n
	if e.unflushed >= progressBatch && e.job.pr != nil {
		e.job.pr.Done.Add(e.unflushed)
		e.unflushed = 0
	}
}

// echoTick fails messages older than the timeout (dropping their
// connections) and publishes progress.
func (l *loop) echoTick(now int64) {
	e := l.echo
	for i := len(l.open) - 1; i >= 0 && l.echo == e; i-- {
		if i >= len(l.open) {
			continue
		}
		if c := l.open[i]; c.flags&fInflight != 0 && now-c.sentAt > e.job.timeout {
			l.lost(c, "timeout")
		}
	}
	if l.echo == e && e.job.pr != nil && e.unflushed > 0 {
		e.job.pr.Done.Add(e.unflushed)
		e.unflushed = 0
	}
}

// echoFinish ends the echo phase here and reports this loop's share. If it
// was stopped (by a command or Close), messages in flight are abandoned: neither success nor failure,
// and their replies, when they come, are discarded (conn.skip).
func (l *loop) echoFinish(stopped bool) {
	e := l.echo
	for _, c := range l.open {
		if c.flags&fInflight != 0 {
			c.flags &^= fInflight | fWarm | fBad
			if c.skip < ^uint16(0) {
				c.skip++
			}
		}
		if c.flags&fDataPend != 0 {
			l.spill(c)
		}
	}
	l.echo = nil
	l.setTick(0)
	e.job.pool.warm.Add(e.warmLeft)
	e.job.pool.meas.Add(e.measLeft)
	if e.job.pr != nil && e.unflushed > 0 {
		e.job.pr.Done.Add(e.unflushed)
	}
	l.results <- phaseResult{phase: e.job.phase, echo: &e.part, stopped: stopped}
}

// spill turns c's pending data frame into queued output bytes, so that it
// is finished after the phase (and its frame) is gone.
func (l *loop) spill(c *conn) {
	b := l.echo.frameFrom(l, c.wkey, int(c.woff))
	x := l.getExt(c)
	if c.woff > 0 {
		out := make([]byte, 0, len(b)+len(x.out))
		out = append(out, b...)
		x.out = append(out, x.out...)
	} else {
		x.out = append(x.out, b...)
	}
	c.flags &^= fDataPend
	c.woff = 0
}

// record adds a latency to h.
func record(h *hdrhistogram.Histogram, v int64) {
	if err := h.RecordValue(v); err != nil {
		// Only values above HistMax (120 s) fail; count them at the top.
		_ = h.RecordValue(HistMax) // HistMax is within the bounds: cannot fail
	}
}
