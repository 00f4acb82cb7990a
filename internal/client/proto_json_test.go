package client

import (
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// protoRig drives one loop synchronously over a socketpair, its one
// connection open through a protocol: the test plays the server on the
// peer end; what the protocol decodes reaches sink.
type protoRig struct {
	l     *loop
	c     *conn
	s     *protoConn
	peer  int
	sink  *msgSink
	frame []byte
	in    []byte
}

// msgSink is a run that keeps the last message a protocol decoded (its
// parts copied) and counts them.
type msgSink struct {
	baseRun
	n                int
	typ              uint8
	topic, mid, body []byte
	why              Reason
}

func (k *msgSink) onMessage(_ *loop, _ *conn, m *message, _ int64) {
	k.n++
	k.typ = m.Type
	k.topic = append(k.topic[:0], m.Topic...)
	k.mid = append(k.mid[:0], m.ID...)
	k.body = append(k.body[:0], m.Body...)
	k.why = m.why
}

func (*msgSink) finish(*loop, bool, int64)        {}
func (*msgSink) lost(*loop, *conn, uint8, Reason) {}

func newProtoRig(tb testing.TB, p wireProtocol) *protoRig {
	tb.Helper()
	l, c, peer := loopPair(tb)
	l.cl.proto = p
	s := &protoConn{}
	c.sec = &connSec{proto: s}
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
	g.l.readFrames(g.c)
}

// serverFrameHeader appends an unmasked final text frame's header.
func serverFrameHeader(dst []byte, n int) []byte {
	switch {
	case n < 126:
		return append(dst, 0x80|opText, byte(n))
	case n < 1<<16:
		return append(dst, 0x80|opText, 126, byte(n>>8), byte(n))
	}
	dst = append(dst, 0x80|opText, 127)
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
	_, _, payload, err := readClientFrame(strings.NewReader(string(g.in[:n])))
	if err != nil {
		tb.Fatal(err)
	}
	return string(payload)
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `a "quoted" \ back`, "new\nline\ttab\r", "ctl \x00\x01\x1f", "ünï ✓"} {
		b := appendJSONString(nil, []byte(s))
		var got string
		if err := json.Unmarshal(b, &got); err != nil || got != s {
			t.Errorf("%q: %s decodes to %q (%v)", s, b, got, err)
		}
	}
}

func TestJSONMembers(t *testing.T) {
	var keys, vals []string
	f := func(k, v []byte) bool {
		keys, vals = append(keys, string(k)), append(vals, string(v))
		return true
	}
	if !jsonMembers([]byte(` {"a":1, "b\"c" : {"x":[1,2]}, "d":"s"}`), f) {
		t.Fatal("an object: false")
	}
	if got := strings.Join(keys, "|") + " " + strings.Join(vals, "|"); got != `a|b\"c|d 1|{"x":[1,2]}|"s"` {
		t.Errorf("object: %s", got)
	}
	keys, vals = nil, nil
	if !jsonMembers([]byte(`[{"id":1},2]`), f) || strings.Join(vals, "|") != `{"id":1}|2` || keys[0] != "" {
		t.Errorf("array: %q %q", keys, vals)
	}
	if jsonMembers([]byte(`"str"`), f) || jsonMembers(nil, f) {
		t.Error("not an object or array: true")
	}
}
