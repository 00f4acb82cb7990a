package client

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/proto/mqtt"
	"github.com/wsplan/wsplan/internal/testserver"
)

// What MQTT costs on the loop's receive path (≤ 2 allocations per message
// is the bar; it makes none), and the decoder under the fuzzer.

// countRun counts the messages a protocol hands the run.
type countRun struct {
	BaseRun
	msgs, bytes int64
}

func (r *countRun) OnMessage(_ *Loop, _ *Conn, m *proto.Message, _ int64) {
	r.msgs++
	r.bytes += int64(len(m.Body))
}
func (*countRun) Lost(*Loop, *Conn, uint8, Reason) {}
func (r *countRun) Finish(l *Loop, stopped bool, _ int64) {
	l.Finished(r.phase, &idleResult{}, stopped)
}

// TestMQTTReceiveAllocs: the broker's PUBLISHes, read from the socket,
// unframed, decoded and handed to the run, one to a message, several to a
// message, split over messages, at QoS 1 (the protocol sends PUBACK), and
// a QoS 1 publish's PUBACK: no allocation per message in steady state.
func TestMQTTReceiveAllocs(t *testing.T) {
	payload := bytes.Repeat([]byte("p"), 256)
	pub := mqtt.AppendPublish(nil, false, []byte("wsplan/room/7"), payload, 0, 0)
	pub1 := mqtt.AppendPublish(nil, false, []byte("wsplan/room/7"), payload, 1, 77)
	three := bytes.Repeat(pub, 3)
	h := len(pub) / 2
	for _, tc := range []struct {
		name   string
		frames [][]byte
		msgs   int64
	}{
		{"one packet a message", [][]byte{testserver.ServerFrame(true, OpBinary, pub)}, 1},
		{"three packets a message", [][]byte{testserver.ServerFrame(true, OpBinary, three)}, 3},
		{"a packet over two messages", [][]byte{testserver.ServerFrame(true, OpBinary, pub[:h]), testserver.ServerFrame(true, OpBinary, pub[h:])}, 1},
		{"a packet in two fragments", [][]byte{testserver.ServerFrame(false, OpBinary, pub[:h]), testserver.ServerFrame(true, opContinuation, pub[h:])}, 1},
		{"qos 1, answered", [][]byte{testserver.ServerFrame(true, OpBinary, pub1)}, 1},
		{"a puback", [][]byte{testserver.ServerFrame(true, OpBinary, mqtt.AppendAck(nil, mqtt.Puback, 9))}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newMQTTRig(t, mqtt.Settings{})
			r := &countRun{BaseRun: BaseRun{1}}
			g.l.ph = r
			round := func() {
				for _, f := range tc.frames {
					if _, err := unix.Write(g.peer, f); err != nil {
						t.Fatal(err)
					}
					g.l.ReadFrames(g.c)
				}
				if _, err := unix.Read(g.peer, g.rbuf); err != nil && err != unix.EAGAIN {
					t.Fatal(err)
				}
			}
			for range 100 {
				round()
			}
			if n := testing.AllocsPerRun(1000, round); n > 0 {
				t.Errorf("%.2f allocations per round, want 0", n)
			}
			if want := 1101 * tc.msgs; r.msgs != want || g.c.state != StateOpen {
				t.Fatalf("run got %d messages, want %d (conn state %d)", r.msgs, want, g.c.state)
			}
		})
	}
}

// loopRig is one loop whose connection speaks a protocol, greeted, its
// peer the test playing the server.
type loopRig struct {
	l    *Loop
	c    *Conn
	peer int
	rbuf []byte
}

// newLoopRig makes the rig of o's protocol, its connection's state open
// (the protocol's own number for it).
func newLoopRig(tb testing.TB, o ProtocolOptions, open uint8) *loopRig {
	tb.Helper()
	p, err := proto.Make(o)
	if err != nil {
		tb.Fatal(err)
	}
	l, c, peer := loopPair(tb)
	l.cl.proto = p
	c.Sec = &connSec{proto: &proto.Conn{State: open}}
	stopOnCleanup(tb, l, peer)
	return &loopRig{l: l, c: c, peer: peer, rbuf: make([]byte, 1<<20)}
}

// newMQTTRig is the rig of MQTT, its CONNACK taken.
func newMQTTRig(tb testing.TB, o mqtt.Settings) *loopRig {
	return newLoopRig(tb, ProtocolOptions{Name: mqtt.Name, Settings: &o}, 1)
}
