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
	Register(KindOf[EchoParams, EchoResult]("echo"))
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
func (p *EchoParams) bytes() int { return SizeOf(p.Payload) }

// payload makes the message an echo phase sends.
func (p *EchoParams) payload() ([]byte, error) {
	return MakeKindPayload(p.PayloadKind, p.bytes(), p.Text, p.PayloadFile)
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
	return RunAs[EchoResult](c, ctx, &p, pr)
}

// Kind implements Params.
func (p *EchoParams) Kind() string { return "echo" }

// Validate implements Params.
func (p *EchoParams) Validate() error {
	return CheckParams(p, CheckPayloadKind(p.PayloadKind, p.PayloadFile))
}

// Split implements Params: concurrency in proportion to the parts' open
// connections (never more than a part has), total and warm-up in
// proportion to the concurrency, so every part finishes at about the same
// time. A part without concurrency or echoes to measure gets nothing.
func (p *EchoParams) Split(weights []int) []Params {
	conc := Distribute(p.Concurrency, weights)
	tot := SplitInt64(p.Total, conc)
	warm := SplitInt64(p.Warmup, conc)
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
	r.Latency.Add(o.Latency)
	r.Errors.Merge(o.Errors)
	r.Stopped = MergeStop(r.Stopped, o.Stopped)
	r.BytesPayload += o.BytesPayload
	r.BytesWire += o.BytesWire
	r.Seconds = MergeSeconds(r.Seconds, o.Seconds)
}

// Stop implements Result.
func (r *EchoResult) Stop() StopReason { return r.Stopped }

// Start implements Params: the loops share one pool of tokens (messages
// to send), so a loop whose connections answer faster sends more.
func (p *EchoParams) Start(ph *PhaseEnv) (*PhasePlan, error) {
	total := ph.OpenTotal()
	if p.Concurrency > total {
		return nil, fmt.Errorf("client: echo: concurrency %d exceeds the %d open connections: open more in a connect phase or lower concurrency", p.Concurrency, total)
	}
	op := byte(OpBinary)
	if p.Text {
		op = OpText
	}
	payload, err := p.payload()
	if err != nil {
		return nil, err
	}
	hdr := AppendClientHeader(nil, op, len(payload), 0)
	pool := &tokenPool{}
	pool.warm.Store(p.Warmup)
	pool.meas.Store(p.Total)
	batch := p.Warmup + p.Total
	if n := len(ph.Open); n > 1 {
		batch = max(1, min(256, batch/int64(64*n)))
	}
	ph.Progress.Begin(p.Warmup + p.Total)
	plan := &PhasePlan{Starts: make([]func(*Loop), len(ph.Open)), Deadline: p.Deadline.D()}
	start := time.Now()
	for i, slots := range Distribute(p.Concurrency, ph.Open) {
		if slots == 0 {
			continue
		}
		job := &echoJob{
			phase:   ph.ID,
			slots:   slots,
			hdr:     hdr,
			payload: payload,
			op:      op,
			verify:  *p.Verify,
			timeout: int64(p.Timeout),
			pool:    pool,
			batch:   batch,
			pr:      ph.Progress,
			start:   start,
		}
		plan.Starts[i] = func(l *Loop) { l.echoStart(job) }
	}
	plan.Done = func(res Result, why StopReason, wall time.Duration) StopReason {
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
	BaseRun
	job       echoJob
	inflight  int
	warmLeft  int64 // tokens taken from the pool, not yet used
	measLeft  int64
	idle      []*Conn // open connections not in use, to replace lost ones
	part      EchoResult
	unflushed int64
	published LiveCounts // what Live has of this loop
	starting  bool       // echoStart is sending the first messages
	tl        Timeline

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
func (e *echoRun) zframe(l *Loop, bits uint8) *zframe {
	if z := e.z[bits]; z != nil {
		return z
	}
	var c pmdeflate.Compressor
	c.Init(&l.Deflater, pmdeflate.Params{ClientNoContextTakeover: true, ClientMaxWindowBits: int(bits)})
	pl := c.Compress(nil, e.job.payload)
	hdr := AppendClientHeader(nil, e.job.op, len(pl), 0)
	hdr[0] |= Rsv1
	z := &zframe{hdr: hdr, payload: pl}
	if need := len(hdr) + len(pl); cap(l.WriteBuf) < need {
		l.WriteBuf = make([]byte, need)
	}
	e.z[bits] = z
	return z
}

// echoStart begins an echo phase in this loop.
func (l *Loop) echoStart(job *echoJob) {
	e := &echoRun{BaseRun: BaseRun{job.phase}, job: *job, part: EchoResult{Latency: NewHist()}, wireIn0: l.WireIn(), payloadIn0: l.PayloadIn(),
		tl: NewTimeline(int64(job.start.Sub(l.Epoch())))}
	e.tl.Live = job.pr.Following()
	l.SetRun(e)
	if need := len(job.hdr) + len(job.payload); cap(l.WriteBuf) < need {
		l.WriteBuf = make([]byte, need)
	}
	l.SetTick(time.Duration(job.timeout / 10))
	slots := min(job.slots, len(l.Open()))
	active := append([]*Conn(nil), l.Open()[:slots]...)
	e.idle = append([]*Conn(nil), l.Open()[slots:]...)
	e.starting = true
	now := l.Now()
	for _, c := range active {
		if l.Run() != e {
			return
		}
		if c.State() == StateOpen && !l.echoNext(e, c, now) {
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
func (l *Loop) echoNext(e *echoRun, c *Conn, now int64) bool {
	ok, warm := e.claim()
	if !ok {
		return false
	}
	c.Flags |= FlagInflight
	if warm {
		c.Flags |= FlagWarm
	} else {
		_, s := e.tl.Second(now)
		s.Sent++
	}
	c.Slot = now
	e.inflight++
	l.sendData(e, c)
	return true
}

// sendData masks the phase's frame with a fresh key into the loop's write
// buffer and writes it; what the socket does not take waits for EPOLLOUT.
func (l *Loop) sendData(e *echoRun, c *Conn) {
	key := uint32(l.Rand().Uint64())
	c.WKey = key
	c.WOff = 0
	if c.Flags&FlagWantOut != 0 {
		c.Flags |= FlagDataPend // written by flush, after the queued output
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
		if !WouldBlock(errno) {
			l.Drop(c, Reason("write: "+errno.Error()))
			return
		}
		n = 0
	}
	if n < len(b) {
		c.WOff = int32(n)
		c.Flags |= FlagDataPend
		l.WantOut(c)
	}
}

// Frame implements LoopRun: it writes bytes [off:] of the phase's frame,
// masked with key, into the loop's write buffer and returns them.
// The connection is l.fc: one that negotiated permessage-deflate gets
// the compressed frame.
func (e *echoRun) Frame(l *Loop, key uint32, off int) []byte {
	hdr, payload := e.job.hdr, e.job.payload
	if c := l.FrameConn; c != nil && c.Sec != nil && c.Sec.Deflate {
		z := e.zframe(l, c.Sec.WindowBits)
		hdr, payload = z.hdr, z.payload
	}
	hl := len(hdr)
	out := l.WriteBuf[:hl+len(payload)-off]
	n := 0
	if off < hl {
		var h [MaxHeader]byte
		copy(h[:], hdr)
		h[hl-4] = byte(key)
		h[hl-3] = byte(key >> 8)
		h[hl-2] = byte(key >> 16)
		h[hl-1] = byte(key >> 24)
		n = copy(out, h[off:hl])
		off = hl
	}
	MaskCopy(out[n:], payload[off-hl:], key, off-hl)
	return out
}

// OnData implements LoopRun: it checks a chunk of c's reply and completes
// the echo at its end.
func (e *echoRun) OnData(l *Loop, c *Conn, ev *Event, now int64) {
	if c.Flags&FlagInflight == 0 {
		return // a message nobody asked for: ignored
	}
	if c.Flags&FlagDataPend != 0 {
		// A reply before the request was fully written is not an echo.
		l.Drop(c, ReasonUnexpected)
		return
	}
	p := e.job.payload
	if ev.Total > int64(len(p)) {
		c.Flags |= FlagBad
	} else if e.job.verify && !bytes.Equal(ev.Data, p[ev.Total-int64(len(ev.Data)):ev.Total]) {
		c.Flags |= FlagBad
	}
	if !ev.End {
		return
	}
	warm := c.Flags&FlagWarm != 0
	var reason Reason
	switch {
	case ev.Total != int64(len(p)):
		reason = ReasonWrongLength
	case c.Flags&FlagBad != 0:
		reason = ReasonPayloadMismatch
	case ev.Op != e.job.op:
		reason = ReasonWrongOpcode
	}
	c.Flags &^= FlagInflight | FlagWarm | FlagBad
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
	l.echoNext(e, c, now)
	e.maybeDone(l)
}

// Lost implements LoopRun: it charges a lost connection's in-flight
// message and puts an idle connection in its place.
func (e *echoRun) Lost(l *Loop, _ *Conn, flags uint8, reason Reason) {
	if flags&FlagInflight == 0 {
		return
	}
	e.inflight--
	if flags&FlagWarm == 0 {
		e.part.Failed++
		e.part.Errors.Add(reason)
	}
	e.progress(1)
	now := l.Now()
	for l.Run() == e && len(e.idle) > 0 {
		c := e.idle[len(e.idle)-1]
		e.idle[len(e.idle)-1] = nil
		e.idle = e.idle[:len(e.idle)-1]
		if c.State() != StateOpen || c.Flags&FlagInflight != 0 {
			continue
		}
		if l.echoNext(e, c, now) || l.Run() != e {
			break
		}
		break // no token left
	}
	e.maybeDone(l)
}

// Adopt implements adopter: a dropped connection came back; it stands by
// with the idle ones, and takes the next message if one is waiting.
func (e *echoRun) Adopt(l *Loop, _, c *Conn) {
	if l.Run() != e {
		return
	}
	if e.inflight >= e.job.slots || !l.echoNext(e, c, l.Now()) {
		e.idle = append(e.idle, c)
	}
}

// maybeDone ends the phase here once nothing is in flight.
func (e *echoRun) maybeDone(l *Loop) {
	if l.Run() == e && e.inflight == 0 && !e.starting {
		e.Finish(l, false, 0)
	}
}

// progress publishes finished echoes in batches.
func (e *echoRun) progress(n int64) {
	e.unflushed += n
	if e.unflushed >= ProgressBatch && e.job.pr != nil {
		e.job.pr.Done.Add(e.unflushed)
		e.unflushed = 0
		e.job.pr.Following().Publish(&e.published, e.liveCounts())
	}
}

// Tick implements LoopRun: it fails messages older than the timeout
// (dropping their connections) and publishes progress.
func (e *echoRun) Tick(l *Loop, now int64) {
	for i := len(l.Open()) - 1; i >= 0 && l.Run() == e; i-- {
		if i >= len(l.Open()) {
			continue
		}
		if c := l.Open()[i]; c.Flags&FlagInflight != 0 && now-c.Slot > e.job.timeout {
			l.Drop(c, ReasonTimeout)
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
func (e *echoRun) Finish(l *Loop, stopped bool, _ int64) {
	for _, c := range l.Open() {
		if c.Flags&FlagInflight != 0 {
			c.Flags &^= FlagInflight | FlagWarm | FlagBad
			if c.Skip < ^uint16(0) {
				c.Skip++
			}
		}
		if c.Flags&FlagDataPend != 0 {
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
func (e *echoRun) liveCounts() LiveCounts {
	return LiveCounts{Sent: e.part.Success + e.part.Failed, Recv: e.part.Success, Failed: e.part.Failed}
}
