package client

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/testserver"
)

// protoRig drives one loop synchronously over a socketpair, its one
// connection open through a protocol: the test plays the server on the
// peer end; what the protocol decodes reaches sink.
type protoRig struct {
	l     *Loop
	c     *Conn
	s     *proto.Conn
	peer  int
	sink  *msgSink
	frame []byte
	in    []byte
}

// msgSink is a run that keeps the last message a protocol decoded (its
// parts copied) and counts them.
type msgSink struct {
	BaseRun
	n                int
	typ              uint8
	topic, mid, body []byte
	why              Reason
}

func (k *msgSink) OnMessage(_ *Loop, _ *Conn, m *proto.Message, _ int64) {
	k.n++
	k.typ = m.Type
	k.topic = append(k.topic[:0], m.Topic...)
	k.mid = append(k.mid[:0], m.ID...)
	k.body = append(k.body[:0], m.Body...)
	k.why = Reason(m.Why)
}

func (*msgSink) Finish(*Loop, bool, int64)        {}
func (*msgSink) Lost(*Loop, *Conn, uint8, Reason) {}

func newProtoRig(tb testing.TB, p proto.Protocol) *protoRig {
	tb.Helper()
	l, c, peer := loopPair(tb)
	l.cl.proto = p
	s := &proto.Conn{}
	c.Sec = &connSec{proto: s}
	sink := &msgSink{}
	l.ph = sink
	tb.Cleanup(func() {
		l.ph = nil
		l.shutdown()
		unix.Close(peer)
	})
	return &protoRig{l: l, c: c, s: s, peer: peer, sink: sink, in: make([]byte, 64<<10)}
}

// serve writes msg to the client as one text frame and lets the loop
// read it.
func (g *protoRig) serve(tb testing.TB, msg []byte) {
	g.frame = append(serverFrameHeader(g.frame[:0], len(msg)), msg...)
	if _, err := unix.Write(g.peer, g.frame); err != nil {
		tb.Fatal(err)
	}
	g.l.ReadFrames(g.c)
}

// serverFrameHeader appends an unmasked final text frame's header.
func serverFrameHeader(dst []byte, n int) []byte {
	switch {
	case n < 126:
		return append(dst, 0x80|OpText, byte(n))
	case n < 1<<16:
		return append(dst, 0x80|OpText, 126, byte(n>>8), byte(n))
	}
	dst = append(dst, 0x80|OpText, 127)
	for i := 7; i >= 0; i-- {
		dst = append(dst, byte(n>>(8*i)))
	}
	return dst
}

// sent returns the payload of the frame the client wrote ("" = none).
func (g *protoRig) sent(tb testing.TB) string {
	tb.Helper()
	n, err := unix.Read(g.peer, g.in)
	if err == unix.EAGAIN {
		return ""
	}
	if err != nil {
		tb.Fatal(err)
	}
	_, _, payload, err := testserver.ReadClientFrame(strings.NewReader(string(g.in[:n])))
	if err != nil {
		tb.Fatal(err)
	}
	return string(payload)
}
