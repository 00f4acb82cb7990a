package client

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/units"
)

// roundsParams are a phase of no kind that the core's tests run to move
// whole messages both ways over the open connections (TLS, compression,
// fragments, closes): every connection sends Rounds messages, one at a
// time, each after the whole reply to the last, and checks every reply
// against what it sent. The echo kind (scenarios/echo) does this with
// tokens, timeouts and latencies; these tests need only the wire.
type roundsParams struct {
	Rounds  int
	Payload []byte
	Text    bool
	Timeout time.Duration // the phase's; 0 = 10 s
	// Compress sends each message compressed on its own (no context
	// takeover) on connections that negotiated permessage-deflate.
	Compress bool
}

// roundsResult is what a rounds phase saw: replies intact and not, and
// the bytes the loops read (as payload, and as the frames carried them).
type roundsResult struct {
	Success, Failed     int64
	PayloadIn, WireIn   int64
	PayloadOut, WireOut int64 // what the connections sent, with Compress
	Errors              Reasons
	Ended
}

func (p *roundsParams) Validate() error { return nil }

func (p *roundsParams) Split(weights []int) []Params {
	out := make([]Params, len(weights))
	for i := range out {
		q := *p
		out[i] = &q
	}
	return out
}

func (r *roundsResult) Merge(other Result) {
	o := other.(*roundsResult)
	r.Success += o.Success
	r.Failed += o.Failed
	r.PayloadIn += o.PayloadIn
	r.WireIn += o.WireIn
	r.PayloadOut += o.PayloadOut
	r.WireOut += o.WireOut
	r.Errors.Merge(o.Errors)
	r.Stopped = MergeStop(r.Stopped, o.Stopped)
}

func (p *roundsParams) Start(ph *PhaseEnv) (*PhasePlan, error) {
	op := byte(OpBinary)
	if p.Text {
		op = OpText
	}
	frame := append(AppendClientHeader(nil, op, len(p.Payload), 0), p.Payload...)
	timeout := p.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	plan := &PhasePlan{Starts: make([]func(*Loop), len(ph.Open)), Deadline: timeout}
	for i := range ph.Open {
		id := ph.ID
		plan.Starts[i] = func(l *Loop) {
			r := &roundsRun{BaseRun: NewBaseRun(id), p: p, frame: frame, left: len(l.Open()),
				payloadIn0: l.PayloadIn(), wireIn0: l.WireIn()}
			l.SetRun(r)
			for _, c := range append([]*Conn(nil), l.Open()...) {
				c.Slot = 1
				if l.Run() == r {
					l.WriteOrQueue(c, r.frameFor(l, c))
				}
			}
			if l.Run() == r && r.left == 0 {
				r.Finish(l, false, 0)
			}
		}
	}
	return plan, nil
}

// roundsRun is a rounds phase on a loop; a connection's Slot counts the
// messages it sent.
type roundsRun struct {
	BaseRun
	p                   *roundsParams
	frame               []byte
	left                int // connections not done
	payloadIn0, wireIn0 int64
	part                roundsResult
	zframes             map[uint8][]byte // with Compress: the compressed frame per window bits
}

// frameFor returns the frame c sends next, compressed with Compress where
// c negotiated permessage-deflate, and counts its bytes.
func (r *roundsRun) frameFor(l *Loop, c *Conn) []byte {
	r.part.PayloadOut += int64(len(r.p.Payload))
	if !r.p.Compress || c.Sec == nil || !c.Sec.Deflate {
		r.part.WireOut += int64(len(r.p.Payload))
		return r.frame
	}
	bits := c.Sec.WindowBits
	f, ok := r.zframes[bits]
	if !ok {
		var zc pmdeflate.Compressor
		zc.Init(&l.Deflater, pmdeflate.Params{ClientNoContextTakeover: true, ClientMaxWindowBits: int(bits)})
		z := zc.Compress(nil, r.p.Payload)
		f = AppendClientHeader(nil, r.frame[0]&0x0f, len(z), 0)
		f[0] |= Rsv1
		f = append(f, z...)
		if r.zframes == nil {
			r.zframes = map[uint8][]byte{}
		}
		r.zframes[bits] = f
	}
	r.part.WireOut += int64(len(f) - headerLen(f))
	return f
}

// headerLen is the length of a masked client frame's header at f's start.
func headerLen(f []byte) int {
	switch f[1] & 0x7f {
	case 126:
		return 8
	case 127:
		return 14
	}
	return 6
}

func (r *roundsRun) OnData(l *Loop, c *Conn, ev *Event, _ int64) {
	p := r.p.Payload
	if ev.Total > int64(len(p)) || !bytes.Equal(ev.Data, p[ev.Total-int64(len(ev.Data)):ev.Total]) {
		c.Flags |= FlagBad
	}
	if !ev.End {
		return
	}
	switch {
	case ev.Total != int64(len(p)):
		r.part.Failed++
		r.part.Errors.Add(ReasonWrongLength)
	case c.Flags&FlagBad != 0:
		r.part.Failed++
		r.part.Errors.Add(ReasonPayloadMismatch)
	default:
		r.part.Success++
	}
	c.Flags &^= FlagBad
	if c.Slot < int64(r.p.Rounds) {
		c.Slot++
		l.WriteOrQueue(c, r.frameFor(l, c))
		return
	}
	c.Slot++ // past Rounds: this connection is done
	r.done(l)
}

// Lost counts a connection lost before its last reply; one that closes
// after it (a server's close frame right behind the reply) is done
// already and counted once.
func (r *roundsRun) Lost(l *Loop, c *Conn, _ uint8, reason Reason) {
	if c.Slot > int64(r.p.Rounds) {
		return
	}
	r.part.Failed++
	r.part.Errors.Add(reason)
	r.done(l)
}

func (r *roundsRun) done(l *Loop) {
	if r.left--; r.left == 0 && l.Run() == r {
		r.Finish(l, false, 0)
	}
}

func (r *roundsRun) Finish(l *Loop, stopped bool, _ int64) {
	r.part.PayloadIn = l.PayloadIn() - r.payloadIn0
	r.part.WireIn = l.WireIn() - r.wireIn0
	l.Finished(r.ID(), &r.part, stopped)
}

// rounds runs a rounds phase of p on c.
func rounds(ctx context.Context, c *Client, p roundsParams) (roundsResult, error) {
	res, err := c.Run(ctx, &p, nil)
	var out roundsResult
	if r, ok := res.(*roundsResult); ok && r != nil {
		out = *r
	}
	return out, err
}

// payloadOf is a test's message: n bytes of kind (random or text).
func payloadOf(tb testing.TB, kind string, n int) []byte {
	tb.Helper()
	p, err := MakeKindPayload(kind, n, kind == "text", nil)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// connectRounds opens conns connections and runs rounds of p over them.
func connectRounds(t testing.TB, c *Client, conns int, p roundsParams) (ConnectResult, roundsResult) {
	t.Helper()
	cr, err := c.Connect(context.Background(), ConnectParams{Connections: conns, Concurrency: conns, Timeout: units.Duration(10 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cr.Success != int64(conns) {
		t.Fatalf("connect: %d of %d opened, errors %v", cr.Success, conns, cr.Errors)
	}
	rr, err := rounds(context.Background(), c, p)
	if err != nil {
		t.Fatal(err)
	}
	return cr, rr
}
