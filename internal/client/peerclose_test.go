package client

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
)

// TestPeerCloses: the open connections the server ends — its TCP close,
// its close frame, its death — are counted, with when.
func TestPeerCloses(t *testing.T) {
	s := testserver.Start(t, testserver.Options{Reply: func(id int64, _ int, _ []byte) testserver.Action {
		if id == 1 {
			return testserver.EchoClose // the first message's connection gets the server's close frame
		}
		return testserver.Echo
	}})
	c := newClient(t, Options{Targets: []string{s.Addr()}, Loops: 2})
	mustConnect(t, c, 20) // the client's own closes (a close phase) are not the server's: scenarios/close's TestCloseKind
	testenv.WaitFor(t, "the server's 20 left", func() bool { return s.Live() == 20 })
	start := time.Now().UnixNano()
	s.Drop(5) // TCP closes, no close frame
	testenv.WaitFor(t, "5 closes", func() bool { return c.PeerCloses().N == 5 })
	// One echo: the server answers, then closes with a close frame.
	if _, err := rounds(t.Context(), c, roundsParams{Rounds: 1, Payload: payloadOf(t, "random", 8)}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the close frame's close", func() bool { return c.PeerCloses().N == 6 })
	s.Close() // the server dies: every connection left
	testenv.WaitFor(t, "every connection closed", func() bool { return c.Conns() == 0 })
	p := c.PeerCloses()
	if p.N != 20 || p.First < start || p.Last < p.First || p.Last > time.Now().UnixNano() {
		t.Fatalf("after the server's death: %+v, want 20 closes since %d", p, start)
	}
	n, span := p.Burst()
	if n < 14 || n > 20 || span <= 0 || span > PeerWindow {
		t.Errorf("burst %d within %v, want the 14 of the death at least, within %v", n, span, PeerWindow)
	}
}

// TestPeerLogWindow: a loop's record keeps the closes of the PeerWindow
// ending at the latest, whatever the ring held before; merged records
// move the window to the later latest.
func TestPeerLogWindow(t *testing.T) {
	tick := int64(PeerTick)
	at := func(k int64) int64 { return 1_000_000*tick + k*tick + tick/2 } // inside tick k
	cases := []struct {
		name  string
		ticks []int64 // each one close in that tick
		n     int64
		span  time.Duration
	}{
		{"none", nil, 0, PeerTick},
		{"one", []int64{5}, 1, PeerTick},
		{"one tick", []int64{7, 7, 7}, 3, PeerTick},
		{"within the window", []int64{0, 100, peerTicks - 1}, 3, PeerWindow},
		{"the oldest just out", []int64{0, 100, peerTicks}, 2, 101 * PeerTick},
		{"an early trickle, then a burst", []int64{0, 50, 900, 901, 901, 902}, 4, 3 * PeerTick},
		{"the ring wrapped past", []int64{3, 3 + peerRing, 3 + peerRing + 1}, 2, 2 * PeerTick},
	}
	for _, c := range cases {
		var g peerLog
		for _, k := range c.ticks {
			g.add(at(k))
		}
		p := g.snapshot()
		n, span := p.Burst()
		if p.N != int64(len(c.ticks)) || n != c.n || span != c.span {
			t.Errorf("%s: N %d, burst %d within %v; want %d, %d within %v", c.name, p.N, n, span, len(c.ticks), c.n, c.span)
		}
	}
	// Two loops: the window is the later one's; the earlier's closes
	// count only where they fall in it.
	var a, b peerLog
	for _, k := range []int64{0, 10, 150} {
		a.add(at(k))
	}
	for _, k := range []int64{210, 220} {
		b.add(at(k))
	}
	var m PeerCloses
	m.Merge(a.snapshot())
	m.Merge(b.snapshot())
	if n, span := m.Burst(); m.N != 5 || n != 3 || span != 71*PeerTick || m.First != at(0) || m.Last != at(220) {
		t.Errorf("merged: %+v, burst %d within %v; want 5 closes, 3 within %v", m, n, span, 71*PeerTick)
	}
	if len(m.Recent) != 3 {
		t.Errorf("merged window keeps %d ticks, want 3 (ticks 0 and 10 dropped)", len(m.Recent))
	}
}

// TestPeerLogAllocs: recording a close allocates nothing.
func TestPeerLogAllocs(t *testing.T) {
	var g peerLog
	now := time.Now().UnixNano()
	if n := testing.AllocsPerRun(1000, func() { now += int64(time.Millisecond); g.add(now) }); n != 0 {
		t.Errorf("peerLog.add: %v allocations, want 0", n)
	}
}

// TestByPeer: which reasons of an open connection's loss are the
// server's doing.
func TestByPeer(t *testing.T) {
	for reason, want := range map[Reason]bool{
		ReasonEOF:                             true,
		"read: connection reset by peer":      true,
		"write: broken pipe":                  true,
		"write: connection reset by peer":     true,
		ReasonServerClose:                     true,
		ReasonServerClose + " 1001":           true,
		ReasonTimeout:                         false,
		ReasonUnexpected:                      false,
		ReasonPayloadMismatch:                 false,
		"protocol: reserved bits set":         false,
		"read: connection timed out":          false,
		"epoll_ctl: no space left on device":  false,
		"mqtt: no packet from the broker ...": false,
	} {
		if got := byPeer(reason); got != want {
			t.Errorf("byPeer(%q) = %v, want %v", reason, got, want)
		}
	}
}

// TestPeerClosesAfterLastData: a server that answers and closes at once
// puts the reply and its FIN in the socket together; the loop, woken
// once by edge-triggered epoll for both, must read on to the end of the
// stream rather than stop at the short read of the reply (it did: such a
// connection stayed open in CLOSE_WAIT, never counted).
func TestPeerClosesAfterLastData(t *testing.T) {
	const n = 400
	s := testserver.Start(t, testserver.Options{Reply: func(int64, int, []byte) testserver.Action { return testserver.EchoDrop }})
	c := newClient(t, Options{Targets: []string{s.Addr()}, Loops: 2})
	mustConnect(t, c, n)
	if _, err := rounds(t.Context(), c, roundsParams{Rounds: 1, Payload: payloadOf(t, "random", 8)}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "every connection closed", func() bool { return c.Conns() == 0 })
	if p := c.PeerCloses(); p.N != n {
		t.Fatalf("%d peer closes, want %d", p.N, n)
	}
}
