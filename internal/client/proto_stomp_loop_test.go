package client

import (
	"bufio"
	"bytes"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/proto/stomp"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// STOMP on the event loops against a fake broker (the real one, RabbitMQ,
// runs in cmd/wsplan's tests): the greeting's outcomes as the connect
// phase reports them, heart-beats both ways over a hold, and the receive
// path's allocations.

// stompBroker answers a CONNECT as mode says and counts the client's
// heart-beats.
type stompBroker struct {
	mode  string // "ok", "error", "mute", "silent", "deny" (an ERROR answers a SEND's receipt)
	beat  string // CONNECTED's heart-beat header
	beats atomic.Int64
	conns atomic.Int64
	mu    sync.Mutex
	frame []string // the CONNECT frames seen
}

func (b *stompBroker) start(t *testing.T) string {
	s := &testserver.RawServer{Handle: b.handle}
	return s.Start(t)
}

func (b *stompBroker) handle(c net.Conn, r *bufio.Reader) {
	_, _, connect, err := testserver.ReadClientFrame(r)
	if err != nil {
		return
	}
	b.mu.Lock()
	b.frame = append(b.frame, string(connect))
	b.mu.Unlock()
	switch b.mode {
	case "error":
		c.Write(testserver.ServerFrame(true, OpText, []byte("ERROR\nmessage:Bad CONNECT\ncontent-type:text/plain\ncontent-length:32\n\nAccess refused for user 'guest'\n\x00\n")))
	case "mute":
	default:
		c.Write(testserver.ServerFrame(true, OpText, []byte("CONNECTED\nversion:1.2\nheart-beat:"+b.beat+"\n\n\x00\n")))
	}
	b.conns.Add(1)
	stop := make(chan struct{})
	defer close(stop)
	if b.mode == "ok" {
		go func() { // the server's heart-beats
			tk := time.NewTicker(100 * time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tk.C:
					if _, err := c.Write(testserver.ServerFrame(true, OpText, []byte("\n"))); err != nil {
						return
					}
				}
			}
		}()
	}
	for {
		_, op, p, err := testserver.ReadClientFrame(r)
		if err != nil || op == OpClose {
			return
		}
		if string(p) == "\n" {
			b.beats.Add(1)
		}
		if b.mode == "deny" && bytes.HasPrefix(p, []byte("SEND\n")) {
			_, rest, _ := bytes.Cut(p, []byte("\nreceipt:"))
			id, _, _ := bytes.Cut(rest, []byte("\n"))
			c.Write(testserver.ServerFrame(true, OpText, []byte("ERROR\nreceipt-id:"+string(id)+"\nmessage:access_refused\n\nwrite access to topic denied\x00")))
			return // STOMP: an ERROR ends the connection
		}
	}
}

func stompClient(t *testing.T, addr string, keepalive time.Duration) *Client {
	return newClient(t, Options{Targets: []string{addr}, Loops: 1,
		Protocol: ProtocolOptions{Name: stomp.Name, Settings: &stomp.Settings{Keepalive: units.Duration(keepalive), Username: "guest", Password: "guest"}}})
}

// TestSTOMPHeartBeats: idle connections stay open over a hold of many
// heart-beat intervals, the client sending its heart-beats on time and
// reading the server's without counting them.
func TestSTOMPHeartBeats(t *testing.T) {
	testenv.Slow(t, "2 s: STOMP heart-beats waited for")
	b := &stompBroker{mode: "ok", beat: "100,300"}
	c := stompClient(t, b.start(t), 200*time.Millisecond)
	res, err := c.Connect(t.Context(), ConnectParams{Connections: 4, Concurrency: 4, Timeout: units.Duration(2 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success != 4 || res.Greeting.TotalCount() != 4 {
		t.Fatalf("connect: %d open, %d greetings, errors %v", res.Success, res.Greeting.TotalCount(), res.Errors)
	}
	if f := b.frame[0]; !strings.Contains(f, "\nlogin:guest\npasscode:guest\nheart-beat:200,200\n") {
		t.Errorf("CONNECT frame %q", f)
	}
	hold, err := idle(t.Context(), c, 1500*time.Millisecond, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hold.Alive != 4 || len(hold.Errors) != 0 {
		t.Fatalf("hold: %d alive of 4, errors %v", hold.Alive, hold.Errors)
	}
	// The server wants one every 300ms: over 1.5 s, about 5 a connection.
	if n := b.beats.Load(); n < 4*4 || n > 4*10 {
		t.Errorf("the server got %d heart-beats from 4 connections in 1.5 s, want about 20", n)
	}
}

// TestSTOMPGreetingFailures: a refusal, a server that never answers and
// one that promises heart-beats it never sends fail the connections with
// the protocol's reasons.
func TestSTOMPGreetingFailures(t *testing.T) {
	for _, tc := range []struct {
		mode, beat, reason string
	}{
		{"error", "", "stomp: ERROR: Bad CONNECT (Access refused for user 'guest')"},
		{"mute", "", "stomp: no CONNECTED"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			b := &stompBroker{mode: tc.mode, beat: tc.beat}
			c := stompClient(t, b.start(t), 0)
			res, err := c.Connect(t.Context(), ConnectParams{Connections: 3, Concurrency: 3, Timeout: units.Duration(300 * time.Millisecond), Retries: -1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Success != 0 || res.Failed != 3 || res.Errors[Reason(tc.reason)] != 3 || len(res.Errors) != 1 {
				t.Errorf("connect: %d open, %d failed, errors %v; want 3 × %q", res.Success, res.Failed, res.Errors, tc.reason)
			}
		})
	}
	t.Run("silent", func(t *testing.T) {
		b := &stompBroker{mode: "silent", beat: "100,0"}
		c := stompClient(t, b.start(t), 200*time.Millisecond)
		mustConnect(t, c, 3)
		hold, err := idleUntilDropped(t.Context(), c, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// 2 × max(100ms, 200ms) without a byte from the server.
		if why := Reason("stomp: no heart-beat from the server for 2 of its intervals"); hold.Alive != 0 || hold.Errors[why] != 3 {
			t.Errorf("hold: %d alive, errors %v; want 3 × %q", hold.Alive, hold.Errors, why)
		}
		if n := b.beats.Load(); n != 0 {
			t.Errorf("the client sent %d heart-beats to a server that wants none", n)
		}
	})
}

// stompSink is a run that takes decoded messages.
type stompSink struct {
	BaseRun
	n, bytes int
}

func (r *stompSink) OnMessage(_ *Loop, _ *Conn, m *proto.Message, _ int64) {
	r.n++
	r.bytes += len(m.Body)
}
func (*stompSink) Lost(*Loop, *Conn, uint8, Reason) {}
func (*stompSink) Finish(*Loop, bool, int64)        {}

// TestSTOMPReceiveAllocs: reading MESSAGE frames — one a WebSocket
// message, several with heart-beats in one, one over two messages, with
// an escaped destination —
// from the socket to the run allocates nothing in steady state (the
// bound is 2 per message).
func TestSTOMPReceiveAllocs(t *testing.T) {
	body := string(MakePayload(256, false))
	one := "MESSAGE\nsubscription:/topic/wsplan.room.1\ndestination:/topic/wsplan.room.1\nmessage-id:T_1@@session-x@@1\nredelivered:false\ncontent-length:256\n\n" + body + "\x00\n"
	for _, tc := range []struct {
		name string
		wire []byte
		per  int // messages per round
	}{
		{"one frame a message", testserver.ServerFrame(true, OpBinary, []byte(one)), 1},
		{"four frames and heart-beats", bytes.Join([][]byte{testserver.ServerFrame(true, OpBinary, []byte(one+one+"\n"+one+one)), testserver.ServerFrame(true, OpText, []byte("\n"))}, nil), 4},
		{"a frame in two messages", bytes.Join([][]byte{testserver.ServerFrame(true, OpBinary, []byte(one[:100])), testserver.ServerFrame(true, OpBinary, []byte(one[100:]))}, nil), 1},
		{"escaped destination", testserver.ServerFrame(true, OpBinary, []byte(strings.Replace(one, "destination:/topic/wsplan.room.1", `destination:/topic/a\cb`, 1))), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newLoopRig(t, ProtocolOptions{Name: stomp.Name}, 1)
			sink := &stompSink{}
			g.l.ph = sink
			t.Cleanup(func() { g.l.ph = nil })
			round := func() {
				if _, err := unix.Write(g.peer, tc.wire); err != nil {
					t.Fatal(err)
				}
				g.l.ReadFrames(g.c)
			}
			for range 10 {
				round()
			}
			allocs := testing.AllocsPerRun(200, round) // runs round once more to warm up
			if got := allocs / float64(tc.per); got > 0 {
				t.Errorf("%.2f allocations per message, want 0 (bound 2)", got)
			}
			if sink.n != 211*tc.per || sink.bytes != sink.n*256 || g.c.state != StateOpen {
				t.Errorf("the run got %d messages (%d bytes), want %d of 256; state %d", sink.n, sink.bytes, 211*tc.per, g.c.state)
			}
		})
	}
}

// BenchmarkSTOMPReceive is the receive path of one 256-byte MESSAGE.
func BenchmarkSTOMPReceive(b *testing.B) {
	body := string(MakePayload(256, false))
	wire := testserver.ServerFrame(true, OpBinary, []byte("MESSAGE\nsubscription:/topic/wsplan.room.1\ndestination:/topic/wsplan.room.1\nmessage-id:T_1@@session-x@@1\nredelivered:false\ncontent-length:256\n\n"+body+"\x00\n"))
	g := newLoopRig(b, ProtocolOptions{Name: stomp.Name}, 1)
	g.l.ph = &stompSink{}
	b.Cleanup(func() { g.l.ph = nil })
	b.ReportAllocs()
	b.SetBytes(int64(len(wire)))
	for b.Loop() {
		if _, err := unix.Write(g.peer, wire); err != nil {
			b.Fatal(err)
		}
		g.l.ReadFrames(g.c)
	}
}
