package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/wsplan/wsplan/internal/pmdeflate"
)

func init() {
	Register(Kind{Name: "rate", NewParams: func() Params { return &RateParams{} }, NewResult: func() Result { return &RateResult{} }})
}

// RateParams configure an open-loop rate phase (Client.Rate).
type RateParams struct {
	Duration time.Duration `json:"duration"` // sending time, > 0
	Rate     float64       `json:"rate"`     // messages per connection per second, > 0 (fractions allowed)
	Payload  int           `json:"payload"`  // bytes per message, >= MarkerLen
	// Connections is how many open connections send; 0 = all open ones.
	Connections int `json:"connections"`
	// Ramp is the time to reach Rate linearly from 0; 0 = none; <= Duration.
	Ramp time.Duration `json:"ramp"`
	// Batch is the most bytes one write carries when several messages are
	// due on a connection at once; 0 = DefaultRateBatch. A message larger
	// than Batch is one write of its own.
	Batch int `json:"batch"`
	// MaxInflight bounds the messages sent and not yet echoed on one
	// connection; 0 = DefaultMaxInflight(Rate). A message due while its
	// connection is at the bound (or its socket is not writable) waits and
	// leaves late, with its original scheduled time.
	MaxInflight int `json:"max_inflight"`
	// MaxInflightBytes bounds the payload bytes sent and not yet echoed
	// over every connection of the phase (split over loops and shards in
	// proportion to their connections), so an overloaded server cannot
	// make the client fill the kernel's socket memory; messages due beyond
	// it wait like those beyond MaxInflight. 0 = DefaultMaxInflightBytes.
	MaxInflightBytes int64 `json:"max_inflight_bytes"`
	// Drain is how long to wait after Duration for echoes still due; 0 =
	// DefaultRateDrain.
	Drain time.Duration `json:"drain"`
	// LateAfter: a message written more than LateAfter after its scheduled
	// time counts as late; 0 = DefaultLateAfter.
	LateAfter time.Duration `json:"late_after"`
	// Verify compares every echoed payload byte after the marker (the
	// marker itself is always checked).
	Verify bool `json:"verify"`
	// Slack is the timer slack: after a wake-up the loop sleeps at least
	// Slack before the next, and writes every message due by then
	// together, so a message leaves at most Slack late (RateResult.SendLate
	// says how late they left). 0 = DefaultSlack; NoSlack = a wake-up per
	// due message.
	Slack time.Duration `json:"slack"`
	// Reads is when the loop reads the echoes: ReadsBatched (the default,
	// "" too) or ReadsPrompt; see ReadsBatched.
	Reads string `json:"reads,omitempty"`
	// PhaseFirst and PhaseTotal place this client's connections in the
	// timetable: its connection j gets phase (PhaseFirst+j)/PhaseTotal of
	// a period. Zero values = j/Connections. Split sets them so that the
	// connections of every loop and shard spread over one period together.
	PhaseFirst int `json:"phase_first"`
	PhaseTotal int `json:"phase_total"`
	// PayloadKind and PayloadFile are what the messages hold after their
	// marker, as in EchoParams.
	PayloadKind string `json:"payload_kind,omitempty"`
	PayloadFile []byte `json:"payload_file,omitempty"`
}

// RateResult is what a rate phase measured. Every message carries a
// MarkerLen-byte marker (its number on its connection and its scheduled
// send time); latency runs from the scheduled time to the complete echo, so
// a message that left late carries its lateness into its latency.
type RateResult struct {
	Conns     int   `json:"conns"`      // connections that took part
	Scheduled int64 `json:"scheduled"`  // messages the timetable had due before Duration on them
	Sent      int64 `json:"sent"`       // messages written
	Recv      int64 `json:"recv"`       // echoes received intact (marker, length, opcode, payload)
	Failed    int64 `json:"failed"`     // echoes received but wrong, or messages nobody sent
	Late      int64 `json:"late"`       // messages written more than LateAfter after their scheduled time
	Unsent    int64 `json:"unsent"`     // Scheduled - Sent: due, but never written before Duration ended
	BytesSent int64 `json:"bytes_sent"` // payload bytes written
	BytesRecv int64 `json:"bytes_recv"` // payload bytes received
	// BytesPayload is BytesSent + BytesRecv; BytesWire is the same data
	// as the frames carried it (compressed under permessage-deflate: each
	// message sent is compressed on its own, as they differ in their
	// marker). Frame headers and TLS not counted.
	BytesPayload int64         `json:"bytes_payload"`
	BytesWire    int64         `json:"bytes_wire"`
	Used         time.Duration `json:"used"`
	Drain        time.Duration `json:"drain"`   // time after Duration spent waiting for echoes
	Latency      Hist          `json:"latency"` // ns, intact echoes, from the scheduled send time; exact over loops and shards
	// Slack is the timer slack the phase ran with (RateParams.Slack).
	Slack time.Duration `json:"slack"`
	// SendLate is how late each message left: its write minus its
	// scheduled time, ns; exact over loops and shards.
	SendLate Hist `json:"send_late"`
	// Wakeups counts the loop wake-ups (epoll_pwait2 returns) during the
	// phase, over every loop: the client's cost driver at sparse rates.
	Wakeups int64 `json:"wakeups"`
	// Reads is how the echoes were read: ReadsBatched, or ReadsPrompt
	// (asked for, or where the kernel refused receive timestamps).
	Reads string `json:"reads"`
	// Seconds is the timeline: entry i covers [i s, i+1 s) from the start
	// of the phase (drain included). Sends count in the second they were
	// written, echoes and their latencies in the second they completed. It
	// grows as the phase runs, one RateSecond (48 bytes) per second.
	Seconds []RateSecond `json:"seconds"`
	Errors  Reasons      `json:"errors"`  // failure reason -> count (failed echoes, lost connections)
	Stopped StopReason   `json:"stopped"` // StopCanceled, StopClosed, StopNoConnections; "" = it ran to its end
}

// Lost returns the messages sent whose echo never came: Sent - Recv - Failed.
func (r RateResult) Lost() int64 { return r.Sent - r.Recv - r.Failed }

// RateSecond is one second of a rate phase's timeline. A finished second
// keeps only this summary point: its latency percentiles are computed
// when the second ends. Merged over several loops or shards, P50, P99 and
// Max are the highest of theirs (Max is exact; P50 and P99 are upper
// bounds, exact for one part); the whole phase's Latency stays exact.
type RateSecond struct {
	Sent int64         `json:"sent"`
	Recv int64         `json:"recv"`
	Late int64         `json:"late"`
	P50  time.Duration `json:"p50,omitempty"`
	P99  time.Duration `json:"p99,omitempty"`
	Max  time.Duration `json:"max,omitempty"`
}

// merge adds o into s.
func (s *RateSecond) merge(o RateSecond) {
	s.Sent += o.Sent
	s.Recv += o.Recv
	s.Late += o.Late
	s.P50 = max(s.P50, o.P50)
	s.P99 = max(s.P99, o.P99)
	s.Max = max(s.Max, o.Max)
}

// Kind implements Params.
func (p *RateParams) Kind() string { return "rate" }

// Merge implements Result.
func (r *RateResult) Merge(other Result) {
	o := other.(*RateResult)
	r.Conns += o.Conns
	r.Scheduled += o.Scheduled
	r.Sent += o.Sent
	r.Recv += o.Recv
	r.Failed += o.Failed
	r.Late += o.Late
	r.Unsent += o.Unsent
	r.BytesSent += o.BytesSent
	r.BytesRecv += o.BytesRecv
	r.BytesPayload += o.BytesPayload
	r.BytesWire += o.BytesWire
	r.Used = max(r.Used, o.Used)
	r.Drain = max(r.Drain, o.Drain)
	r.Latency.add(o.Latency)
	r.Slack = max(r.Slack, o.Slack)
	r.SendLate.add(o.SendLate)
	r.Wakeups += o.Wakeups
	r.Reads = mergeReads(r.Reads, o.Reads)
	for len(r.Seconds) < len(o.Seconds) {
		r.Seconds = append(r.Seconds, RateSecond{})
	}
	for i, s := range o.Seconds {
		r.Seconds[i].merge(s)
	}
	r.Errors.merge(o.Errors)
	r.Stopped = MergeStop(r.Stopped, o.Stopped)
}

// Stop implements Result.
func (r *RateResult) Stop() StopReason { return r.Stopped }

// withDefaults returns p with its zero defaults filled in.
func (p RateParams) withDefaults() RateParams {
	if p.Batch == 0 {
		p.Batch = DefaultRateBatch
	}
	if p.MaxInflight == 0 {
		p.MaxInflight = DefaultMaxInflight(p.Rate)
	}
	if p.MaxInflightBytes == 0 {
		p.MaxInflightBytes = DefaultMaxInflightBytes
	}
	if p.Drain == 0 {
		p.Drain = DefaultRateDrain
	}
	if p.LateAfter == 0 {
		p.LateAfter = DefaultLateAfter
	}
	if p.Slack == 0 {
		p.Slack = DefaultSlack
	}
	if p.Reads == "" {
		p.Reads = ReadsBatched
	}
	return p
}

// Split implements Params: the sending connections in proportion to the
// parts' open connections (never more than a part has), each part given
// its place in one shared timetable (PhaseFirst/PhaseTotal) and its share
// of MaxInflightBytes.
func (p *RateParams) Split(weights []int) []Params {
	d := p.withDefaults()
	n := p.Connections
	if n == 0 {
		for _, w := range weights {
			n += w
		}
	}
	total := p.PhaseTotal
	if total == 0 {
		total = p.PhaseFirst + n
	}
	out := make([]Params, len(weights))
	first := p.PhaseFirst
	for i, slots := range distribute(n, weights) {
		if slots == 0 {
			continue
		}
		q := d
		q.Connections = slots
		q.PhaseFirst, q.PhaseTotal = first, total
		q.MaxInflightBytes = max(int64(p.Payload), d.MaxInflightBytes*int64(slots)/int64(n))
		first += slots
		out[i] = &q
	}
	return out
}

// Rate phase defaults.
const (
	// DefaultRateBatch is RateParams.Batch when 0: the most bytes one write
	// carries, as the predecessor's 16 KiB.
	DefaultRateBatch = 16 << 10
	// DefaultRateDrain is RateParams.Drain when 0.
	DefaultRateDrain = 2 * time.Second
	// DefaultLateAfter is RateParams.LateAfter when 0.
	DefaultLateAfter = time.Millisecond
	// MinDefaultInflight and MaxDefaultInflight bound DefaultMaxInflight.
	MinDefaultInflight = 16
	MaxDefaultInflight = 1000
	// DefaultMaxInflightBytes is RateParams.MaxInflightBytes when 0.
	DefaultMaxInflightBytes = 64 << 20
	// pumpBytes bounds what one pump writes before the loop reads again:
	// an overdriven phase must not starve the reads of its own echoes.
	pumpBytes = 1 << 20
)

// DefaultMaxInflight is RateParams.MaxInflight when 0: one second of
// messages at the full rate, at least MinDefaultInflight and at most
// MaxDefaultInflight.
func DefaultMaxInflight(rate float64) int {
	return int(min(max(math.Ceil(rate), MinDefaultInflight), MaxDefaultInflight))
}

// rateJob is one loop's share of an open-loop rate phase.
type rateJob struct {
	phase       int64
	slots       int // connections sending here: the loop's first slots open ones
	first       int // phase index of this loop's connection 0
	total       int // phase denominator
	pacer       Pacer
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
	pr          *Progress
}

// rateConn is a connection's state in a rate phase; conn.sentAt holds its
// index in rateRun.conns while the phase runs.
type rateConn struct {
	c      *conn
	next   int64 // messages sent: the number of the next one
	acked  int64 // echoes completed, intact or not: the number of the next one expected
	mark   [MarkerLen]byte
	bad    bool // the echo being received differs from the message sent
	capped bool // a message is due but MaxInflight messages are in flight
}

// rateRun is an open-loop rate phase running in a loop. The cursor walks
// the timetable; at each event the connection concerned writes every
// message due by now (up to Batch bytes a write), unless its socket is
// not writable or MaxInflight messages are in flight: its due messages
// then wait, and leave as soon as a flush or an echo frees it, late but
// with their scheduled times. Nothing waits for replies.
type rateRun struct {
	baseRun
	wireIn0   int64 // the loop's received wire bytes at the start
	wakes0    int64 // the loop's wake-ups at the start
	gate      pacedWake
	job       rateJob
	cu        cursor
	conns     []rateConn
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
	part      RateResult
	noConns   bool     // every connection was lost
	tl        timeline // per second: sends, echoes and their latencies
	unflushed int64

	// Permessage-deflate: each message is compressed on its own (they
	// all differ in their marker), with the loop's shared deflater.
	zc      pmdeflate.Compressor
	zbits   uint8  // client window bits zc was set up for; 0 = none yet
	zin     []byte // the message before compression
	zout    []byte // compressed
	wireOut int64  // data bytes written as framed (compressed or not)
}

// rateStart begins a rate phase in this loop.
func (l *loop) rateStart(job *rateJob) {
	r := &rateRun{baseRun: baseRun{job.phase}, job: *job, part: RateResult{Latency: NewHist()}, wireIn0: l.wireIn}
	l.ph = r
	r.flen = len(job.hdr) + len(job.payload)
	// Room for a compressed frame too: deflate can grow a message that
	// does not compress by a few bytes per block.
	if need := max(job.batch, r.flen) + r.flen/64 + 64; cap(l.wbuf) < need {
		l.wbuf = make([]byte, need)
	}
	r.gate = newPacedWake(job.slack)
	r.wakes0 = l.wakes
	r.start = int64(job.start.Sub(l.epoch))
	r.tl = newTimeline(r.start)
	r.end = r.start + int64(job.pacer.Duration)
	r.stopAt = r.end + job.drain
	n := min(job.slots, len(l.open))
	r.conns = make([]rateConn, n)
	for i := range r.conns {
		c := l.open[i]
		r.conns[i].c = c
		c.sentAt = int64(i)
	}
	r.live = n
	r.part.Conns = n
	r.part.Reads = r.gate.begin(l, l.open[:n], job.reads)
	r.cu = cursor{p: job.pacer, first: job.first, total: job.total, n: n}
	r.sending = true
	l.setTick(maxTick)
	r.pump(l, l.now())
}

// wakeAt implements loopRun.
func (r *rateRun) wakeAt() int64 { return r.wake }

// dueAt implements slackRun.
func (r *rateRun) dueAt() int64 { return r.due }

// ratePump runs the pump (tests call it by this name).
func (l *loop) ratePump(now int64) { l.ph.pump(l, now) }

// pump implements loopRun: it sends what the timetable has due by now,
// closes the sending window at its end, ends the phase when nothing is
// left to wait for, and sets the time of the next pump.
func (r *rateRun) pump(l *loop, now int64) {
	more := false
	r.gate.pumped(now)
	if r.sending {
		el := time.Duration(now - r.start)
		visited := 0
		r.left = max(pumpBytes, r.job.batch)
		for r.live > 0 {
			at := r.cu.at()
			if at >= r.job.pacer.Duration || at > el {
				break
			}
			l.rateSend(r, r.cu.j, now)
			if l.ph != r {
				return
			}
			if r.left <= 0 {
				// Read before writing more; this connection is visited
				// again at the next pump, right after.
				more = true
				break
			}
			r.cu.advance()
			// A whole round visited in one pump: every connection is up to
			// date with now, so the events still behind are done too.
			if visited++; visited >= len(r.conns) {
				r.cu.seek(el)
				visited = 0
			}
		}
		if now >= r.end || r.live == 0 {
			r.closeWindow(now)
		}
	}
	if !r.sending && (r.inflight == 0 || now >= r.stopAt) {
		r.finish(l, false, now)
		return
	}
	if r.sending {
		r.wake, r.due = r.end, r.end
		if at := r.cu.at(); at < r.job.pacer.Duration {
			r.due = min(r.due, r.start+int64(at))
			r.wake = min(r.wake, r.gate.wake(r.due))
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
func (r *rateRun) closeWindow(now int64) {
	r.sending = false
	el := time.Duration(now - r.start)
	for j := range r.conns {
		r.part.Scheduled += r.job.pacer.Due(el, r.cu.phase(j))
	}
	if r.live == 0 {
		r.noConns = true
	}
}

// rateSend writes connection j's due messages, in batches of up to
// job.batch bytes, until none is due, the socket stops taking them,
// MaxInflight are in flight on the connection or loopMax on the loop, or
// the pump's write budget is spent.
func (l *loop) rateSend(r *rateRun, j int, now int64) {
	rc := &r.conns[j]
	c := rc.c
	if c.state != stOpen || c.flags&fWantOut != 0 {
		return // closed, or blocked until flush empties its output
	}
	phase := r.cu.phase(j)
	due := r.job.pacer.Due(time.Duration(now-r.start), phase)
	if rc.next >= due {
		return
	}
	_, sec := r.tl.second(now)
	buf := l.wbuf[:0]
	for rc.next < due && r.inflight < r.job.loopMax && r.left > 0 {
		if rc.next-rc.acked >= r.job.maxInflight {
			rc.capped = true
			break
		}
		if len(buf) > 0 && len(buf)+r.flen > r.job.batch {
			if !l.rateWrite(c, buf) {
				buf = buf[:0]
				break
			}
			buf = l.wbuf[:0]
		}
		at := int64(r.job.pacer.At(rc.next, phase))
		if c.sec != nil && c.sec.deflate {
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
		r.gate.sent(now, r.start+at)
		r.unflushed++
	}
	if len(buf) > 0 {
		l.rateWrite(c, buf)
	}
	if r.unflushed >= progressBatch && r.job.pr != nil {
		r.job.pr.Done.Add(r.unflushed)
		r.unflushed = 0
	}
}

// appendFrame appends message seq, scheduled at `at` ns after the start,
// as a masked frame with a fresh key. buf has room for it.
func (r *rateRun) appendFrame(l *loop, buf []byte, seq uint64, at int64) []byte {
	key := uint32(l.rng.Uint64())
	n := len(buf)
	buf = buf[:n+r.flen]
	hl := copy(buf[n:], r.job.hdr)
	f := buf[n:]
	f[hl-4] = byte(key)
	f[hl-3] = byte(key >> 8)
	f[hl-2] = byte(key >> 16)
	f[hl-1] = byte(key >> 24)
	var m [MarkerLen]byte
	putMarker(m[:], seq, at)
	maskCopy(f[hl:], m[:], key, 0)
	maskCopy(f[hl+MarkerLen:], r.job.payload[MarkerLen:], key, MarkerLen)
	r.part.BytesSent += int64(len(r.job.payload))
	return buf
}

// appendZFrame appends message seq compressed (RSV1 set), masked with a
// fresh key. A compressed frame that does not fit behind buf's batch is
// preceded by writing the batch (ok false: the socket refused it).
func (r *rateRun) appendZFrame(l *loop, c *conn, buf []byte, seq uint64, at int64) ([]byte, bool) {
	if bits := c.sec.bits; bits != r.zbits {
		r.zc.Init(&l.deflater, pmdeflate.Params{ClientNoContextTakeover: true, ClientMaxWindowBits: int(bits)})
		r.zbits = bits
	}
	r.zin = append(r.zin[:0], r.job.payload...)
	putMarker(r.zin[:MarkerLen], seq, at)
	r.zout = r.zc.Compress(r.zout[:0], r.zin)
	need := maxHeader + len(r.zout)
	if len(buf) > 0 && len(buf)+need > cap(buf) {
		if !l.rateWrite(c, buf) {
			return buf[:0], false
		}
		buf = l.wbuf[:0]
	}
	if cap(buf) < need { // a message that grew under compression
		l.wbuf = make([]byte, 0, need)
		buf = l.wbuf[:0]
	}
	key := uint32(l.rng.Uint64())
	n := len(buf)
	buf = appendClientHeader(buf, opBinary, len(r.zout), key)
	buf[n] |= rsv1
	h := len(buf)
	buf = buf[:h+len(r.zout)]
	maskCopy(buf[h:], r.zout, key, 0)
	r.part.BytesSent += int64(len(r.job.payload))
	r.wireOut += int64(len(r.zout))
	return buf, true
}

// rateWrite writes b to c; what the socket does not take is queued for
// flush. It reports whether everything was written.
func (l *loop) rateWrite(c *conn, b []byte) bool {
	n, e := l.write(c, b)
	if e != 0 {
		if !wouldBlock(e) {
			l.lost(c, Reason("write: "+e.Error()))
			return false
		}
		n = 0
	}
	if n == len(b) {
		return true
	}
	x := l.getExt(c)
	x.out = append(x.out, b[n:]...)
	l.wantOut(c)
	return false
}

// slot returns c's state in the phase, or nil if c does not take part.
func (r *rateRun) slot(c *conn) *rateConn {
	if i := c.sentAt; i >= 0 && i < int64(len(r.conns)) && r.conns[i].c == c {
		return &r.conns[i]
	}
	return nil
}

// resume implements loopRun: it sends c's overdue messages once its output
// has drained (within what is left of the last pump's write budget; else
// its next visit does).
func (r *rateRun) resume(l *loop, c *conn) {
	if rc := r.slot(c); rc != nil && r.sending {
		l.rateSend(r, int(c.sentAt), l.now())
	}
}

// onData implements loopRun: it checks a chunk of an echo and completes it
// at its end: the marker
// must name the next message expected on the connection and its scheduled
// time, and (with verify) the rest must match the payload.
func (r *rateRun) onData(l *loop, c *conn, ev *event, now int64) {
	rc := r.slot(c)
	if rc == nil {
		return
	}
	d := ev.data
	pos := ev.total - int64(len(d))
	r.part.BytesRecv += int64(len(d))
	if pos < MarkerLen {
		k := copy(rc.mark[pos:], d)
		d = d[k:]
		pos += int64(k)
	}
	p := r.job.payload
	if ev.total > int64(len(p)) {
		rc.bad = true
	} else if r.job.verify && len(d) > 0 && !bytes.Equal(d, p[pos:ev.total]) {
		rc.bad = true
	}
	if !ev.end {
		return
	}
	var reason Reason
	var at int64
	switch {
	case rc.acked >= rc.next:
		reason = ReasonUnexpected
	case ev.total != int64(len(p)):
		reason = ReasonWrongLength
	case ev.op != opBinary:
		reason = ReasonWrongOpcode
	case rc.bad:
		reason = ReasonPayloadMismatch
	default:
		var seq uint64
		seq, at = readMarker(rc.mark[:])
		if seq != uint64(rc.acked) || at != int64(r.job.pacer.At(rc.acked, r.cu.phase(int(c.sentAt)))) {
			reason = ReasonMarkerMismatch
		}
	}
	rc.bad = false
	rc.mark = [MarkerLen]byte{}
	if rc.acked < rc.next {
		rc.acked++
		r.inflight--
	}
	if reason == "" {
		r.part.Recv++
		r.tl.echo(now, max(0, now-(r.start+at)), r.part.Latency.Histogram)
	} else {
		r.part.Failed++
		r.part.Errors.add(reason)
	}
	if rc.capped && r.sending {
		rc.capped = false
		l.rateSend(r, int(c.sentAt), l.now()) // now may be the echo's arrival, before this read
		if l.ph != r {
			return
		}
	}
	if !r.sending && r.inflight == 0 {
		r.finish(l, false, now)
	}
}

// lost implements loopRun: it takes a dropped connection out of the
// phase; its messages in flight will never be echoed (they count as lost).
func (r *rateRun) lost(_ *loop, c *conn, _ uint8, reason Reason) {
	rc := r.slot(c)
	if rc == nil {
		return
	}
	r.inflight -= rc.next - rc.acked
	rc.acked = rc.next
	r.live--
	r.part.Errors.add(reason)
	if r.live == 0 || (!r.sending && r.inflight == 0) {
		r.wake, r.due = 0, 0 // the next pump ends the phase
	}
}

// tick implements loopRun: it publishes progress.
func (r *rateRun) tick(*loop, int64) {
	if r.job.pr != nil && r.unflushed > 0 {
		r.job.pr.Done.Add(r.unflushed)
		r.unflushed = 0
	}
}

// rateFinish ends the rate phase (tests call it by this name).
func (l *loop) rateFinish(stopped bool, now int64) { l.ph.finish(l, stopped, now) }

// finish implements loopRun: it ends the rate phase here and reports this
// loop's share. Echoes still due are discarded when they come (conn.skip).
func (r *rateRun) finish(l *loop, stopped bool, now int64) {
	if r.sending {
		r.closeWindow(now)
	}
	r.tl.roll(r.part.Latency.Histogram)
	for i := range r.conns {
		rc := &r.conns[i]
		c := rc.c
		if c.state == stOpen && c.sentAt == int64(i) {
			if out := rc.next - rc.acked; out > 0 {
				c.skip = uint16(min(int64(c.skip)+out, math.MaxUint16))
			}
		}
		c.sentAt = 0
	}
	elapsed := max(0, time.Duration(now-r.start))
	r.tl.second(now) // the timeline reaches the end
	r.part.Seconds = r.tl.secs
	r.part.Used = min(elapsed, r.job.pacer.Duration)
	r.part.Drain = elapsed - r.part.Used
	r.part.Unsent = r.part.Scheduled - r.part.Sent
	if r.noConns {
		r.part.Stopped = StopNoConnections
	}
	if r.job.pr != nil && r.unflushed > 0 {
		r.job.pr.Done.Add(r.unflushed)
	}
	r.gate.end(l)
	r.part.Slack = time.Duration(r.gate.slack)
	r.part.SendLate = Hist{r.gate.late}
	r.part.Wakeups = l.wakes - r.wakes0
	r.part.BytesPayload = r.part.BytesSent + r.part.BytesRecv
	r.part.BytesWire = r.wireOut + l.wireIn - r.wireIn0
	l.finished(r.job.phase, &r.part, stopped)
}

// Validate implements Params.
func (p *RateParams) Validate() error {
	var errs []error
	if p.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration must be > 0, got %v", p.Duration))
	}
	if !(p.Rate > 0) || math.IsInf(p.Rate, 0) {
		errs = append(errs, fmt.Errorf("rate must be > 0 messages per second, got %v", p.Rate))
	}
	if p.Payload < MarkerLen || p.Payload > maxPayload {
		errs = append(errs, fmt.Errorf("payload must be in [%d, %d] (the first %d bytes carry the latency marker), got %d", MarkerLen, maxPayload, MarkerLen, p.Payload))
	}
	if p.Connections < 0 {
		errs = append(errs, fmt.Errorf("connections must be >= 0, got %d", p.Connections))
	}
	if p.Ramp < 0 || p.Ramp > p.Duration {
		errs = append(errs, fmt.Errorf("ramp must be in [0, duration %v], got %v", p.Duration, p.Ramp))
	}
	if p.Batch < 0 {
		errs = append(errs, fmt.Errorf("batch must be >= 0, got %d", p.Batch))
	}
	if p.MaxInflight < 0 {
		errs = append(errs, fmt.Errorf("max inflight must be >= 0, got %d", p.MaxInflight))
	}
	if p.MaxInflightBytes < 0 {
		errs = append(errs, fmt.Errorf("max inflight bytes must be >= 0, got %d", p.MaxInflightBytes))
	}
	if p.Drain < 0 {
		errs = append(errs, fmt.Errorf("drain must be >= 0, got %v", p.Drain))
	}
	if err := checkPayloadKind(p.PayloadKind, p.PayloadFile); err != nil {
		errs = append(errs, err)
	}
	if p.Slack < 0 && p.Slack != NoSlack {
		errs = append(errs, fmt.Errorf("slack must be >= 0 (or NoSlack), got %v", p.Slack))
	}
	if err := CheckReads(p.Reads); err != nil {
		errs = append(errs, fmt.Errorf("reads %w", err))
	}
	if p.LateAfter < 0 {
		errs = append(errs, fmt.Errorf("late after must be >= 0, got %v", p.LateAfter))
	}
	if p.PhaseFirst < 0 || p.PhaseTotal < 0 || (p.PhaseTotal > 0 && p.PhaseFirst+p.Connections > p.PhaseTotal) {
		errs = append(errs, fmt.Errorf("phase first %d + connections %d must be <= phase total %d", p.PhaseFirst, p.Connections, p.PhaseTotal))
	}
	if len(errs) > 0 {
		return fmt.Errorf("client: rate: %w", errors.Join(errs...))
	}
	return nil
}

// Rate runs an open-loop phase over p.Connections open connections: each
// sends p.Rate messages per second for p.Duration on the timetable of a
// Pacer (connection i's k-th message is due at offset_i + k/Rate, the
// offsets spread evenly over one period), never waiting for replies, and
// then waits up to p.Drain for the echoes still due. Every message carries
// a marker with its number and scheduled time; its latency runs from that
// scheduled time, so a client or server that falls behind shows in the
// latency instead of being hidden (no coordinated omission).
//
// Progress counts messages sent. A phase cut short (ctx canceled, Close)
// returns what was measured with Stopped saying why; cancellation also
// returns ctx.Err(), Close ErrClosed.
func (c *Client) Rate(ctx context.Context, p RateParams, pr *Progress) (RateResult, error) {
	return runAs[RateResult](c, ctx, &p, pr)
}

// start implements Params.
func (p *RateParams) start(ph *phaseEnv) (*phasePlan, error) {
	total := 0
	for _, o := range ph.open {
		total += o
	}
	n := p.Connections
	if n == 0 {
		n = total
	}
	if n > total {
		return nil, fmt.Errorf("client: rate: connections %d exceeds the %d open connections: open more in a connect phase or lower connections", n, total)
	}
	d := p.withDefaults()
	phaseTotal := p.PhaseTotal
	if phaseTotal == 0 {
		phaseTotal = p.PhaseFirst + n
	}
	pacer := Pacer{Rate: p.Rate, Ramp: p.Ramp, Duration: p.Duration}
	payload, err := makeKindPayload(p.PayloadKind, p.Payload, false, p.PayloadFile)
	if err != nil {
		return nil, err
	}
	hdr := appendClientHeader(nil, opBinary, len(payload), 0)
	if ph.pr != nil {
		var want int64
		for j := range n {
			want += pacer.Total(float64(p.PhaseFirst+j) / float64(phaseTotal))
		}
		ph.pr.Total.Store(want)
		ph.pr.Done.Store(0)
	}
	plan := &phasePlan{starts: make([]func(*loop), len(ph.open))}
	for i, part := range p.Split(ph.open) {
		if part == nil {
			continue
		}
		q := part.(*RateParams)
		job := &rateJob{
			phase:       ph.id,
			slots:       q.Connections,
			first:       q.PhaseFirst,
			total:       q.PhaseTotal,
			pacer:       pacer,
			start:       ph.start,
			drain:       int64(d.Drain),
			hdr:         hdr,
			payload:     payload,
			verify:      p.Verify,
			batch:       d.Batch,
			maxInflight: int64(d.MaxInflight),
			loopMax:     max(1, q.MaxInflightBytes/int64(p.Payload)),
			lateAfter:   int64(d.LateAfter),
			slack:       d.Slack,
			reads:       d.Reads,
			pr:          ph.pr,
		}
		plan.starts[i] = func(l *loop) { l.rateStart(job) }
	}
	plan.done = func(res Result, why StopReason, _ time.Duration) StopReason {
		r := res.(*RateResult)
		if r.Latency.Histogram == nil {
			r.Latency = NewHist()
		}
		if r.SendLate.Histogram == nil {
			r.SendLate = NewHist()
		}
		if why == "" {
			why = r.Stopped
		}
		r.Stopped = why
		return why
	}
	return plan, nil
}
