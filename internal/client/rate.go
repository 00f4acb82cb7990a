package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

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
	pr          *Progress
}

// ratePart is one loop's share of a RateResult.
type ratePart struct {
	conns                               int
	scheduled, sent, recv, failed, late int64
	bytesSent, bytesRecv                int64
	elapsed                             time.Duration // from t = 0 to the end of the phase here
	noConns                             bool          // every connection was lost
	errors                              map[string]int64
	seconds                             []rateSecond
}

// rateSecond is one second of a loop's timeline.
type rateSecond struct {
	sent, recv, late int64
	hist             *hdrhistogram.PackedHistogram
}

// count adds one failure with reason.
func (p *ratePart) count(reason string) {
	if p.errors == nil {
		p.errors = make(map[string]int64)
	}
	p.errors[reason]++
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
	part      ratePart
	cur       *hdrhistogram.Histogram // latencies of the second curSec
	curSec    int
	unflushed int64
}

// rateStart begins a rate phase in this loop.
func (l *loop) rateStart(job *rateJob) {
	r := &rateRun{job: *job, cur: NewHistogram()}
	l.rate = r
	r.flen = len(job.hdr) + len(job.payload)
	if need := max(job.batch, r.flen); cap(l.wbuf) < need {
		l.wbuf = make([]byte, need)
	}
	r.start = int64(job.start.Sub(l.epoch))
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
	r.part.conns = n
	r.cu = cursor{p: job.pacer, first: job.first, total: job.total, n: n}
	secs := int((job.pacer.Duration+time.Duration(job.drain))/time.Second) + 2
	r.part.seconds = make([]rateSecond, secs)
	for i := range r.part.seconds {
		r.part.seconds[i].hist = hdrhistogram.NewPacked(HistMin, HistMax, HistSigFigs)
	}
	r.sending = true
	l.setTick(maxTick)
	l.ratePump(l.now())
}

// second returns the timeline index of loop time now.
func (r *rateRun) second(now int64) int {
	s := int((now - r.start) / int64(time.Second))
	return min(max(s, 0), len(r.part.seconds)-1)
}

// ratePump sends what the timetable has due by now, closes the sending
// window at its end, ends the phase when nothing is left to wait for, and
// sets the time of the next pump.
func (l *loop) ratePump(now int64) {
	r := l.rate
	more := false
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
			if l.rate != r {
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
		l.rateFinish(false, now)
		return
	}
	if r.sending {
		r.wake = r.end
		if at := r.cu.at(); at < r.job.pacer.Duration {
			r.wake = min(r.wake, r.start+int64(at))
		}
		if more {
			r.wake = now
		}
	} else {
		r.wake = r.stopAt
	}
}

// closeWindow ends the sending part of the phase: what was due and not
// sent by now stays unsent.
func (r *rateRun) closeWindow(now int64) {
	r.sending = false
	el := time.Duration(now - r.start)
	for j := range r.conns {
		r.part.scheduled += r.job.pacer.Due(el, r.cu.phase(j))
	}
	if r.live == 0 {
		r.part.noConns = true
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
	sec := &r.part.seconds[r.second(now)]
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
		buf = r.appendFrame(l, buf, uint64(rc.next), at)
		r.left -= r.flen
		rc.next++
		r.inflight++
		r.part.sent++
		sec.sent++
		if now-(r.start+at) > r.job.lateAfter {
			r.part.late++
			sec.late++
		}
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
	r.part.bytesSent += int64(len(r.job.payload))
	return buf
}

// rateWrite writes b to c; what the socket does not take is queued for
// flush. It reports whether everything was written.
func (l *loop) rateWrite(c *conn, b []byte) bool {
	n, e := rawWrite(c.fd, b)
	if e != 0 {
		if !wouldBlock(e) {
			l.lost(c, "write: "+e.Error())
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

// resume sends c's overdue messages once its output has drained (within
// what is left of the last pump's write budget; else its next visit does).
func (r *rateRun) resume(l *loop, c *conn) {
	if rc := r.slot(c); rc != nil && r.sending {
		l.rateSend(r, int(c.sentAt), l.now())
	}
}

// onData checks a chunk of an echo and completes it at its end: the marker
// must name the next message expected on the connection and its scheduled
// time, and (with verify) the rest must match the payload.
func (r *rateRun) onData(l *loop, c *conn, ev *event, now int64) {
	rc := r.slot(c)
	if rc == nil {
		return
	}
	d := ev.data
	pos := ev.total - int64(len(d))
	r.part.bytesRecv += int64(len(d))
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
	var reason string
	var at int64
	switch {
	case rc.acked >= rc.next:
		reason = "unexpected message"
	case ev.total != int64(len(p)):
		reason = "wrong length"
	case ev.op != opBinary:
		reason = "wrong opcode"
	case rc.bad:
		reason = "payload mismatch"
	default:
		var seq uint64
		seq, at = readMarker(rc.mark[:])
		if seq != uint64(rc.acked) || at != int64(r.job.pacer.At(rc.acked, r.cu.phase(int(c.sentAt)))) {
			reason = "marker mismatch"
		}
	}
	rc.bad = false
	rc.mark = [MarkerLen]byte{}
	if rc.acked < rc.next {
		rc.acked++
		r.inflight--
	}
	s := r.second(now)
	if reason == "" {
		r.part.recv++
		r.part.seconds[s].recv++
		if s != r.curSec {
			r.roll()
			r.curSec = s
		}
		record(r.cur, max(0, now-(r.start+at)))
	} else {
		r.part.failed++
		r.part.count(reason)
	}
	if rc.capped && r.sending {
		rc.capped = false
		l.rateSend(r, int(c.sentAt), now)
		if l.rate != r {
			return
		}
	}
	if !r.sending && r.inflight == 0 {
		l.rateFinish(false, now)
	}
}

// roll moves the latencies of second curSec into its timeline entry.
func (r *rateRun) roll() {
	if r.cur.TotalCount() == 0 {
		return
	}
	r.part.seconds[r.curSec].hist.MergeFrom(r.cur)
	r.cur.Reset()
}

// lost takes a dropped connection out of the phase: its messages in flight
// will never be echoed (they count as lost).
func (r *rateRun) lost(l *loop, c *conn, reason string) {
	rc := r.slot(c)
	if rc == nil {
		return
	}
	r.inflight -= rc.next - rc.acked
	rc.acked = rc.next
	r.live--
	r.part.count(reason)
	if r.live == 0 || (!r.sending && r.inflight == 0) {
		r.wake = 0 // the next pump ends the phase
	}
}

// rateTick publishes progress.
func (l *loop) rateTick() {
	r := l.rate
	if r.job.pr != nil && r.unflushed > 0 {
		r.job.pr.Done.Add(r.unflushed)
		r.unflushed = 0
	}
}

// rateFinish ends the rate phase here and reports this loop's share. Echoes
// still due are discarded when they come (conn.skip).
func (l *loop) rateFinish(stopped bool, now int64) {
	r := l.rate
	if r.sending {
		r.closeWindow(now)
	}
	r.roll()
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
	r.part.elapsed = time.Duration(now - r.start)
	r.part.seconds = r.part.seconds[:r.second(now)+1]
	l.rate = nil
	l.setTick(0)
	if r.job.pr != nil && r.unflushed > 0 {
		r.job.pr.Done.Add(r.unflushed)
	}
	l.results <- phaseResult{phase: r.job.phase, rate: &r.part, stopped: stopped}
}

// validate checks a rate phase's parameters.
func (p RateParams) validate() error {
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
	if err := p.validate(); err != nil {
		return RateResult{}, err
	}
	c.phaseMu.Lock()
	defer c.phaseMu.Unlock()
	if c.closed.Load() {
		return RateResult{}, ErrClosed
	}
	open := make([]int, len(c.loops))
	total := 0
	for i, l := range c.loops {
		open[i] = int(l.nopen.Load())
		total += open[i]
	}
	n := p.Connections
	if n == 0 {
		n = total
	}
	if n > total {
		return RateResult{}, fmt.Errorf("client: rate: connections %d exceeds the %d open connections: open more in a connect phase or lower connections", n, total)
	}
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
	phaseTotal := p.PhaseTotal
	if phaseTotal == 0 {
		phaseTotal = n
	}
	pacer := Pacer{Rate: p.Rate, Ramp: p.Ramp, Duration: p.Duration}
	payload := makePayload(p.Payload, false)
	hdr := appendClientHeader(nil, opBinary, len(payload), 0)
	if pr != nil {
		var want int64
		for j := range n {
			want += pacer.Total(float64(p.PhaseFirst+j) / float64(phaseTotal))
		}
		pr.Total.Store(want)
		pr.Done.Store(0)
	}
	c.phase++
	start := time.Now()
	var posted []*loop
	first := p.PhaseFirst
	for i, slots := range distribute(n, open) {
		if slots == 0 {
			continue
		}
		job := &rateJob{
			phase:       c.phase,
			slots:       slots,
			first:       first,
			total:       phaseTotal,
			pacer:       pacer,
			start:       start,
			drain:       int64(p.Drain),
			hdr:         hdr,
			payload:     payload,
			verify:      p.Verify,
			batch:       p.Batch,
			maxInflight: int64(p.MaxInflight),
			loopMax:     max(1, p.MaxInflightBytes*int64(slots)/int64(n)/int64(p.Payload)),
			lateAfter:   int64(p.LateAfter),
			pr:          pr,
		}
		first += slots
		if c.loops[i].post(command{kind: cmdRate, rate: job}) {
			posted = append(posted, c.loops[i])
		}
	}
	results, why := c.collect(ctx, 0, posted)
	res := RateResult{Latency: NewHistogram(), Errors: map[string]int64{}}
	var elapsed time.Duration
	noConns := true // every loop lost all its connections
	for _, r := range results {
		x := r.rate
		if x == nil {
			continue
		}
		res.Conns += x.conns
		res.Scheduled += x.scheduled
		res.Sent += x.sent
		res.Recv += x.recv
		res.Failed += x.failed
		res.Late += x.late
		res.BytesSent += x.bytesSent
		res.BytesRecv += x.bytesRecv
		elapsed = max(elapsed, x.elapsed)
		noConns = noConns && x.noConns
		for k, v := range x.errors {
			res.Errors[k] += v
		}
		for len(res.Seconds) < len(x.seconds) {
			res.Seconds = append(res.Seconds, RateSecond{})
		}
		for i, s := range x.seconds {
			out := &res.Seconds[i]
			out.Sent += s.sent
			out.Recv += s.recv
			out.Late += s.late
			if s.hist.TotalCount() == 0 {
				continue
			}
			if out.Latency == nil {
				out.Latency = s.hist // the loop is done with it
			} else {
				out.Latency.Merge(s.hist)
			}
		}
	}
	for _, s := range res.Seconds {
		if s.Latency != nil {
			s.Latency.MergeInto(res.Latency)
		}
	}
	res.Unsent = res.Scheduled - res.Sent
	res.Used = min(elapsed, p.Duration)
	res.Drain = elapsed - res.Used
	if why == "" && noConns {
		why = StopNoConnections
	}
	res.Stopped = why
	return res, stopErr(ctx, why)
}
