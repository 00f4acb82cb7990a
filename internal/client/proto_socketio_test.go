package client

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/proto"

	"github.com/wsplan/wsplan/internal/proto/socketio"
)

// Socket.IO on one loop against the test playing the server (the real
// one, socket.io 4.8, runs in cmd/wsplan's tests): the greeting's
// packets, what the loop answers by itself, and the receive path's
// allocations.

func newSocketIORig(tb testing.TB, ns string) (*protoRig, proto.Protocol) {
	tb.Helper()
	p, err := proto.Make(ProtocolOptions{Name: socketio.Name, Settings: &socketio.Settings{Namespace: ns}})
	if err != nil {
		tb.Fatal(err)
	}
	return newProtoRig(tb, p), p
}

// TestSocketIODecode: events (with the server asking an ack, answered
// empty), acks by id, pings answered by the loop and never handed to the
// run, and the packets that end a connection.
func TestSocketIODecode(t *testing.T) {
	g, _ := newSocketIORig(t, "/chat")
	for _, tc := range []struct {
		in, sent, topic, id, body string
		typ                       uint8
		n                         int // messages the run has seen after in
	}{
		{in: `42/chat,["chat",{"n":1}]`, typ: proto.MsgEvent, topic: "chat", body: `["chat",{"n":1}]`, n: 1},
		{in: `42/chat,17["ask",1]`, sent: "43/chat,17[]", typ: proto.MsgEvent, topic: "ask", id: "17", body: `["ask",1]`, n: 2},
		{in: `43/chat,5[{"n":1}]`, typ: proto.MsgAck, id: "5", body: `[{"n":1}]`, n: 3},
		{in: "2", sent: "3", typ: proto.MsgAck, id: "5", body: `[{"n":1}]`, n: 3},
		{in: "6", typ: proto.MsgAck, id: "5", body: `[{"n":1}]`, n: 3},
	} {
		g.serve(t, []byte(tc.in))
		k := g.sink
		if got := g.sent(t); got != tc.sent || k.n != tc.n || k.typ != tc.typ || string(k.topic) != tc.topic || string(k.mid) != tc.id || string(k.body) != tc.body {
			t.Errorf("%s: sent %q, run has %d, last type %d topic %q id %q body %q; want %q, %d, %d %q %q %q",
				tc.in, got, k.n, k.typ, k.topic, k.mid, k.body, tc.sent, tc.n, tc.typ, tc.topic, tc.id, tc.body)
		}
	}
	p, _ := proto.Make(ProtocolOptions{Name: socketio.Name, Settings: &socketio.Settings{}})
	for in, want := range map[string]proto.Reason{
		"1":                   "socket.io: closed by the server",
		"41":                  "socket.io: disconnected by the server",
		`45-["b",{}]`:         "socket.io: packet type 5 is not spoken (binary events)",
		`44{"message":"bye"}`: "socket.io: connect error: bye",
		"x":                   "socket.io: unknown packet x",
	} {
		if got := p.Decode(g.l.env(g.c), g.s, OpText, []byte(in), 0); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

// sentShort reads one short masked frame the client wrote and returns its
// payload, unmasked in place (without allocating, unlike protoRig.sent).
func sentShort(tb testing.TB, g *protoRig) []byte {
	n, err := unix.Read(g.peer, g.in)
	if err != nil || n < 6 || int(g.in[1]&0x7f) != n-6 {
		tb.Fatalf("read %d bytes (%v): want one short masked frame", n, err)
	}
	p := g.in[6:n]
	for i := range p {
		p[i] ^= g.in[2+i%4]
	}
	return p
}

// TestSocketIOReceiveAllocs: an event, an event whose ack the loop sends,
// an ack, and an Engine.IO ping answered by a pong, each read from the
// socket, decoded and handed to the run (or answered): no allocation per
// message in steady state (the bound is 2). The ack the loop sends is
// longer than a fresh scratch buffer: it must be built in one kept grown.
func TestSocketIOReceiveAllocs(t *testing.T) {
	ns := "/" + strings.Repeat("n", 40)
	for _, tc := range []struct {
		name, in, sent string
		n              int // messages the run gets per round
	}{
		{"event", "42" + ns + `,["message","` + strings.Repeat("A", 344) + `"]`, "", 1},
		{"event asking an ack", "42" + ns + `,123456789["ask",{"n":1}]`, "43" + ns + ",123456789[]", 1},
		{"ack", "43" + ns + `,42[{"n":1}]`, "", 1},
		{"ping", "2", "3", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := newSocketIORig(t, ns)
			in := []byte(tc.in)
			round := func() {
				g.serve(t, in)
				if tc.sent != "" {
					if got := sentShort(t, g); string(got) != tc.sent {
						t.Fatalf("sent %q, want %q", got, tc.sent)
					}
				}
			}
			for range 10 {
				round()
			}
			if n := testing.AllocsPerRun(500, round); n > 0 {
				t.Errorf("%.2f allocations per message, want 0 (bound 2)", n)
			}
			if want := 511 * tc.n; g.sink.n != want || g.c.state != StateOpen {
				t.Errorf("the run got %d messages, want %d; state %d", g.sink.n, want, g.c.state)
			}
		})
	}
}
