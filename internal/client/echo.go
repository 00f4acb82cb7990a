package client

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/units"
)

func init() {
	Register(Kind{Name: "echo", NewParams: func() Params { return &EchoParams{} }, NewResult: func() Result { return &EchoResult{} }})
}

// EchoParams configure a closed-loop echo phase. They are the phase's
// plan keys too (scenarios.Echo holds them inline), declared once in
// their tags; the scenario lowers Concurrency to the connections open and
// reads File into PayloadFile.
type EchoParams struct {
	Total       int64          `yaml:"total" json:"total" required:"true" min:"1" doc:"echoes to measure"`
	Concurrency int            `yaml:"concurrency" json:"concurrency" min:"1" doc:"messages in flight, one per connection; default: every open connection"`
	Payload     *units.Size    `yaml:"payload" json:"payload" default:"1KiB" min:"0" max:"64MiB" doc:"bytes per message; 0 = empty messages"`
	Warmup      int64          `yaml:"warmup" json:"warmup" default:"0" min:"0" doc:"echoes before measuring, not counted"`
	Text        bool           `yaml:"text" json:"text" default:"false" doc:"send text frames instead of binary"`
	Verify      *bool          `yaml:"verify" json:"verify" default:"true" doc:"compare every echoed byte"`
	Timeout     units.Duration `yaml:"timeout" json:"timeout" default:"10s" min:"1ns" max:"120s" doc:"longest wait for one echo"`
	Deadline    units.Duration `yaml:"deadline" json:"deadline" default:"0s" min:"0s" doc:"longest phase; 0 = none"`
	PayloadKind string         `yaml:"payload_kind" json:"payload_kind,omitempty" default:"random" doc:"what messages hold: random (incompressible bytes), text (chat-like JSON lines), file"`
	// File is read by the scenario (and checked at load), into
	// PayloadFile: shards need no file.
	File string `yaml:"file" json:"-" doc:"with payload_kind: file, the file whose bytes are cycled to the payload size"`
	// PayloadFile is the content of the payload file (kind "file"),
	// cycled to Payload bytes.
	PayloadFile []byte `yaml:"-" json:"payload_file,omitempty"`
}

// bytes is the payload size; Client.Run applied its default.
func (p *EchoParams) bytes() int { return sizeOf(p.Payload) }

// payload makes the message an echo phase sends.
func (p *EchoParams) payload() ([]byte, error) {
	return makeKindPayload(p.PayloadKind, p.bytes(), p.Text, p.PayloadFile)
}

// EchoResult is what an echo phase measured.
type EchoResult struct {
	Total   int64         `json:"total"` // echoes asked for
	Success int64         `json:"success"`
	Failed  int64         `json:"failed"` // wrong payload, closed connection, timeout
	Used    time.Duration `json:"used"`
	Latency Hist          `json:"latency"` // ns, successful echoes
	Errors  Reasons       `json:"errors"`  // failure reason -> count
	Stopped StopReason    `json:"stopped"` // StopCanceled, StopDeadline, StopClosed, StopNoConnections; "" = it ran to its end
	// BytesPayload and BytesWire count the data sent and received during
	// the phase (warm-up included), both directions: as message payload,
	// and as the frames carried it (compressed under permessage-deflate;
	// frame headers and TLS records not counted). Without compression
	// they are equal.
	BytesPayload int64 `json:"bytes_payload"`
	BytesWire    int64 `json:"bytes_wire"`
	// Seconds is the timeline: entry i covers [i s, i+1 s) from the start
	// of the phase (warm-up included). Measured messages count in the
	// second they were written (Sent), intact echoes and their latencies
	// in the second they completed (Recv, P50, P99, Max); Late is unused.
	// It grows as the phase runs, one RateSecond (48 bytes) per second;
	// merged as a rate phase's (Max exact, P50 and P99 upper bounds).
	Seconds []RateSecond `json:"seconds,omitempty"`
}

// Echo runs a closed-loop echo phase over the open connections:
// p.Concurrency of them each keep exactly one message in flight, sending
// the next as soon as the echo of the previous one is complete, until
// p.Warmup + p.Total messages were sent. The other open connections stand
// by and replace connections that are lost. Latency is measured from the
// send to the complete echo; warm-up echoes are neither counted nor
// recorded.
//
// Progress counts finished echoes, warm-up included (Total = Warmup +
// Total). A phase cut short (ctx canceled, Deadline, Close, or every
// connection lost) returns what was measured, with Success + Failed <
// Total and Stopped saying why; messages in flight then count as neither,
// and their late echoes are discarded. Cancellation also returns ctx.Err(),
// Close ErrClosed; Deadline and lost connections return a nil error.
func (c *Client) Echo(ctx context.Context, p EchoParams, pr *Progress) (EchoResult, error) {
	return runAs[EchoResult](c, ctx, &p, pr)
}

// Kind implements Params.
func (p *EchoParams) Kind() string { return "echo" }

// Validate implements Params.
func (p *EchoParams) Validate() error {
	return checkParams(p, checkPayloadKind(p.PayloadKind, p.PayloadFile))
}

// Split implements Params: concurrency in proportion to the parts' open
// connections (never more than a part has), total and warm-up in
// proportion to the concurrency, so every part finishes at about the same
// time. A part without concurrency or echoes to measure gets nothing.
func (p *EchoParams) Split(weights []int) []Params {
	conc := distribute(p.Concurrency, weights)
	tot := splitInt64(p.Total, conc)
	warm := splitInt64(p.Warmup, conc)
	out := make([]Params, len(weights))
	for i := range out {
		if conc[i] == 0 || tot[i] == 0 {
			continue
		}
		q := *p
		q.Concurrency, q.Total, q.Warmup = conc[i], tot[i], warm[i]
		out[i] = &q
	}
	return out
}

// Merge implements Result.
func (r *EchoResult) Merge(other Result) {
	o := other.(*EchoResult)
	r.Total += o.Total
	r.Success += o.Success
	r.Failed += o.Failed
	r.Used = max(r.Used, o.Used)
	r.Latency.add(o.Latency)
	r.Errors.merge(o.Errors)
	r.Stopped = MergeStop(r.Stopped, o.Stopped)
	r.BytesPayload += o.BytesPayload
	r.BytesWire += o.BytesWire
	r.Seconds = mergeSeconds(r.Seconds, o.Seconds)
}

// Stop implements Result.
func (r *EchoResult) Stop() StopReason { return r.Stopped }

// start implements Params: the loops share one pool of tokens (messages
// to send), so a loop whose connections answer faster sends more.
func (p *EchoParams) start(ph *phaseEnv) (*phasePlan, error) {
	total := 0
	for _, o := range ph.open {
		total += o
	}
	if p.Concurrency > total {
		return nil, fmt.Errorf("client: echo: concurrency %d exceeds the %d open connections: open more in a connect phase or lower concurrency", p.Concurrency, total)
	}
	op := byte(opBinary)
	if p.Text {
		op = opText
	}
	payload, err := p.payload()
	if err != nil {
		return nil, err
	}
	hdr := appendClientHeader(nil, op, len(payload), 0)
	pool := &tokenPool{}
	pool.warm.Store(p.Warmup)
	pool.meas.Store(p.Total)
	batch := p.Warmup + p.Total
	if n := len(ph.open); n > 1 {
		batch = max(1, min(256, batch/int64(64*n)))
	}
	if ph.pr != nil {
		ph.pr.Total.Store(p.Warmup + p.Total)
		ph.pr.Done.Store(0)
	}
	plan := &phasePlan{starts: make([]func(*loop), len(ph.open)), deadline: p.Deadline.D()}
	start := time.Now()
	for i, slots := range distribute(p.Concurrency, ph.open) {
		if slots == 0 {
			continue
		}
		job := &echoJob{
			phase:   ph.id,
			slots:   slots,
			hdr:     hdr,
			payload: payload,
			op:      op,
			verify:  *p.Verify,
			timeout: int64(p.Timeout),
			pool:    pool,
			batch:   batch,
			pr:      ph.pr,
			start:   start,
		}
		plan.starts[i] = func(l *loop) { l.echoStart(job) }
	}
	plan.done = func(res Result, why StopReason, wall time.Duration) StopReason {
		r := res.(*EchoResult)
		r.Total = p.Total
		r.Used = wall
		if r.Latency.Histogram == nil {
			r.Latency = NewHist()
		}
		if why == "" && pool.warm.Load()+pool.meas.Load() > 0 {
			why = StopNoConnections
		}
		r.Stopped = why
		return why
	}
	return plan, nil
}

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

// echoRun is a closed-loop echo phase running in a loop. A connection
// takes part while it holds a message in flight (fInflight): when its echo
// completes (or fails) it sends the next message, if a token is left.
// Connections that were idle at the start replace ones that are lost.
type echoRun struct {
	baseRun
	job       echoJob
	inflight  int
	warmLeft  int64 // tokens taken from the pool, not yet used
	measLeft  int64
	idle      []*conn // open connections not in use, to replace lost ones
	part      EchoResult
	unflushed int64
	published LiveCounts // what Live has of this loop
	starting  bool       // echoStart is sending the first messages
	tl        timeline

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
func (e *echoRun) zframe(l *loop, bits uint8) *zframe {
	if z := e.z[bits]; z != nil {
		return z
	}
	var c pmdeflate.Compressor
	c.Init(&l.deflater, pmdeflate.Params{ClientNoContextTakeover: true, ClientMaxWindowBits: int(bits)})
	pl := c.Compress(nil, e.job.payload)
	hdr := appendClientHeader(nil, e.job.op, len(pl), 0)
	hdr[0] |= rsv1
	z := &zframe{hdr: hdr, payload: pl}
	if need := len(hdr) + len(pl); cap(l.wbuf) < need {
		l.wbuf = make([]byte, need)
	}
	e.z[bits] = z
	return z
}

// echoStart begins an echo phase in this loop.
func (l *loop) echoStart(job *echoJob) {
	e := &echoRun{baseRun: baseRun{job.phase}, job: *job, part: EchoResult{Latency: NewHist()}, wireIn0: l.wireIn, payloadIn0: l.payloadIn,
		tl: newTimeline(int64(job.start.Sub(l.epoch)))}
	e.tl.live = job.pr.live()
	l.ph = e
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
		if l.ph != e {
			return
		}
		if c.state == stOpen && !l.echoNext(e, c, now) {
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
func (l *loop) echoNext(e *echoRun, c *conn, now int64) bool {
	ok, warm := e.claim()
	if !ok {
		return false
	}
	c.flags |= fInflight
	if warm {
		c.flags |= fWarm
	} else {
		_, s := e.tl.second(now)
		s.Sent++
	}
	c.slot = now
	e.inflight++
	l.sendData(e, c)
	return true
}

// sendData masks the phase's frame with a fresh key into the loop's write
// buffer and writes it; what the socket does not take waits for EPOLLOUT.
func (l *loop) sendData(e *echoRun, c *conn) {
	key := uint32(l.rng.Uint64())
	c.wkey = key
	c.woff = 0
	if c.flags&fWantOut != 0 {
		c.flags |= fDataPend // written by flush, after the queued output
		return
	}
	l.fc = c
	b := e.frame(l, key, 0)
	e.payloadOut += int64(len(e.job.payload))
	e.wireOut += int64(len(b) - len(e.job.hdr))
	if c.sec != nil && c.sec.deflate {
		e.wireOut += int64(len(e.job.hdr) - len(e.z[c.sec.bits].hdr))
	}
	n, errno := l.write(c, b)
	if errno != 0 {
		if !wouldBlock(errno) {
			l.lost(c, Reason("write: "+errno.Error()))
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

// frame implements loopRun: it writes bytes [off:] of the phase's frame,
// masked with key, into the loop's write buffer and returns them.
// The connection is l.fc: one that negotiated permessage-deflate gets
// the compressed frame.
func (e *echoRun) frame(l *loop, key uint32, off int) []byte {
	hdr, payload := e.job.hdr, e.job.payload
	if c := l.fc; c != nil && c.sec != nil && c.sec.deflate {
		z := e.zframe(l, c.sec.bits)
		hdr, payload = z.hdr, z.payload
	}
	hl := len(hdr)
	out := l.wbuf[:hl+len(payload)-off]
	n := 0
	if off < hl {
		var h [maxHeader]byte
		copy(h[:], hdr)
		h[hl-4] = byte(key)
		h[hl-3] = byte(key >> 8)
		h[hl-2] = byte(key >> 16)
		h[hl-1] = byte(key >> 24)
		n = copy(out, h[off:hl])
		off = hl
	}
	maskCopy(out[n:], payload[off-hl:], key, off-hl)
	return out
}

// onData implements loopRun: it checks a chunk of c's reply and completes
// the echo at its end.
func (e *echoRun) onData(l *loop, c *conn, ev *event, now int64) {
	if c.flags&fInflight == 0 {
		return // a message nobody asked for: ignored
	}
	if c.flags&fDataPend != 0 {
		// A reply before the request was fully written is not an echo.
		l.lost(c, ReasonUnexpected)
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
	var reason Reason
	switch {
	case ev.total != int64(len(p)):
		reason = ReasonWrongLength
	case c.flags&fBad != 0:
		reason = ReasonPayloadMismatch
	case ev.op != e.job.op:
		reason = ReasonWrongOpcode
	}
	c.flags &^= fInflight | fWarm | fBad
	e.inflight--
	if !warm {
		if reason == "" {
			e.part.Success++
			e.tl.echo(now, now-c.slot, e.part.Latency.Histogram)
		} else {
			e.part.Failed++
			e.part.Errors.add(reason)
		}
	}
	e.progress(1)
	l.echoNext(e, c, now)
	e.maybeDone(l)
}

// lost implements loopRun: it charges a lost connection's in-flight
// message and puts an idle connection in its place.
func (e *echoRun) lost(l *loop, _ *conn, flags uint8, reason Reason) {
	if flags&fInflight == 0 {
		return
	}
	e.inflight--
	if flags&fWarm == 0 {
		e.part.Failed++
		e.part.Errors.add(reason)
	}
	e.progress(1)
	now := l.now()
	for l.ph == e && len(e.idle) > 0 {
		c := e.idle[len(e.idle)-1]
		e.idle[len(e.idle)-1] = nil
		e.idle = e.idle[:len(e.idle)-1]
		if c.state != stOpen || c.flags&fInflight != 0 {
			continue
		}
		if l.echoNext(e, c, now) || l.ph != e {
			break
		}
		break // no token left
	}
	e.maybeDone(l)
}

// adopt implements adopter: a dropped connection came back; it stands by
// with the idle ones, and takes the next message if one is waiting.
func (e *echoRun) adopt(l *loop, _, c *conn) {
	if l.ph != e {
		return
	}
	if e.inflight >= e.job.slots || !l.echoNext(e, c, l.now()) {
		e.idle = append(e.idle, c)
	}
}

// maybeDone ends the phase here once nothing is in flight.
func (e *echoRun) maybeDone(l *loop) {
	if l.ph == e && e.inflight == 0 && !e.starting {
		e.finish(l, false, 0)
	}
}

// progress publishes finished echoes in batches.
func (e *echoRun) progress(n int64) {
	e.unflushed += n
	if e.unflushed >= progressBatch && e.job.pr != nil {
		e.job.pr.Done.Add(e.unflushed)
		e.unflushed = 0
		e.job.pr.live().publish(&e.published, e.liveCounts())
	}
}

// tick implements loopRun: it fails messages older than the timeout
// (dropping their connections) and publishes progress.
func (e *echoRun) tick(l *loop, now int64) {
	for i := len(l.open) - 1; i >= 0 && l.ph == e; i-- {
		if i >= len(l.open) {
			continue
		}
		if c := l.open[i]; c.flags&fInflight != 0 && now-c.slot > e.job.timeout {
			l.lost(c, ReasonTimeout)
		}
	}
	if l.ph == e && e.job.pr != nil && e.unflushed > 0 {
		e.job.pr.Done.Add(e.unflushed)
		e.unflushed = 0
		e.job.pr.live().publish(&e.published, e.liveCounts())
	}
}

// finish implements loopRun: it ends the echo phase here and reports this
// loop's share. If it was stopped (by a command or Close), messages in
// flight are abandoned: neither success nor failure, and their replies,
// when they come, are discarded (conn.skip).
func (e *echoRun) finish(l *loop, stopped bool, _ int64) {
	for _, c := range l.open {
		if c.flags&fInflight != 0 {
			c.flags &^= fInflight | fWarm | fBad
			if c.skip < ^uint16(0) {
				c.skip++
			}
		}
		if c.flags&fDataPend != 0 {
			l.spill(e, c)
		}
	}
	e.job.pool.warm.Add(e.warmLeft)
	e.job.pool.meas.Add(e.measLeft)
	if e.job.pr != nil && e.unflushed > 0 {
		e.job.pr.Done.Add(e.unflushed)
	}
	e.part.BytesPayload = e.payloadOut + l.payloadIn - e.payloadIn0
	e.part.BytesWire = e.wireOut + l.wireIn - e.wireIn0
	e.tl.roll(e.part.Latency.Histogram)
	e.job.pr.live().publish(&e.published, e.liveCounts())
	e.part.Seconds = e.tl.secs
	l.finished(e.job.phase, &e.part, stopped)
}

// liveCounts are this loop's totals so far, for Live.
func (e *echoRun) liveCounts() LiveCounts {
	return LiveCounts{Sent: e.part.Success + e.part.Failed, Recv: e.part.Success, Failed: e.part.Failed}
}
