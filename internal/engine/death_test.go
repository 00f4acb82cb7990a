package engine

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/testserver"
)

// closes is a PeerCloses of n closes at tick k each (client.PeerTick
// from an origin), as a client's would read.
func closes(ticks map[int64]int64) client.PeerCloses {
	var p client.PeerCloses
	tick := int64(client.PeerTick)
	for k, n := range ticks {
		at := 1_000_000*tick + k*tick
		p.Merge(client.PeerCloses{N: n, First: at, Last: at, Recent: map[int64]int64{at / tick: n}})
	}
	return p
}

// TestSuddenLoss: most of a phase's connections closed by the server
// within the window look like a death; a few, a slow trickle, exactly
// half, or closes before the phase do not.
func TestSuddenLoss(t *testing.T) {
	win := int64(client.PeerWindow / client.PeerTick)
	cases := []struct {
		name               string
		before, after      map[int64]int64
		openStart, openEnd int
		n, m               int64
		ok                 bool
	}{
		{"nothing lost", nil, nil, 20, 20, 0, 0, false},
		{"every one at once", nil, map[int64]int64{5: 20}, 20, 0, 20, 20, true},
		{"within the window", nil, map[int64]int64{0: 10, win - 1: 10}, 20, 0, 20, 20, true},
		{"a phase's own connections", nil, map[int64]int64{3: 30, 4: 10}, 0, 0, 40, 40, true},
		{"most, the rest open", nil, map[int64]int64{3: 11}, 20, 9, 11, 20, true},
		{"a few", nil, map[int64]int64{3: 3}, 20, 17, 3, 20, false},
		{"exactly half", nil, map[int64]int64{3: 10}, 20, 10, 10, 20, false},
		{"a slow trickle", nil, map[int64]int64{0: 5, win: 5, 2 * win: 5, 3 * win: 5}, 20, 0, 5, 20, false},
		{"a trickle, then the rest at once", nil, map[int64]int64{0: 2, 3 * win: 18}, 20, 0, 18, 20, true},
		{"the burst was before the phase", map[int64]int64{1: 20}, map[int64]int64{1: 20, 2: 1}, 20, 19, 1, 20, false},
	}
	for _, c := range cases {
		n, m, span, ok := suddenLoss(closes(c.before), closes(c.after), c.openStart, c.openEnd)
		if n != c.n || m != c.m || ok != c.ok {
			t.Errorf("%s: %d of %d (within %v), ok %v; want %d of %d, ok %v", c.name, n, m, span, ok, c.n, c.m, c.ok)
		}
		if ok && (span <= 0 || span > client.PeerWindow) {
			t.Errorf("%s: span %v, want within %v", c.name, span, client.PeerWindow)
		}
	}
}

// listening is the host:port of a listener that accepts until the test
// ends and serves nothing.
func listening(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// TestNewConns: a fresh connection tells a server that listens from one
// that does not; one address that listens is enough.
func TestNewConns(t *testing.T) {
	up, down := listening(t), testserver.ClosedAddr(t)
	for _, c := range []struct {
		addrs []string
		want  string
	}{
		{[]string{up}, ""},
		{[]string{down}, "refused"},
		{[]string{down, down}, "refused"},
		{[]string{down, up}, ""},
		{nil, ""},
	} {
		if got := newConns(t.Context(), c.addrs, time.Second); got != c.want {
			t.Errorf("%v: %q, want %q", c.addrs, got, c.want)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if got := newConns(ctx, []string{up}, time.Second); got != "" {
		t.Errorf("canceled: %q, want \"\" (the client's own doing)", got)
	}
}

// fakeDriver is a driver with counts a test sets.
type fakeDriver struct {
	conns int
	peer  client.PeerCloses
}

func (d *fakeDriver) Run(context.Context, client.Params, *client.Progress) (client.Result, error) {
	return nil, nil
}
func (d *fakeDriver) Conns() int                    { return d.conns }
func (d *fakeDriver) Close() error                  { return nil }
func (d *fakeDriver) PeerCloses() client.PeerCloses { return d.peer }

// TestBlindWatch: a phase against a server the engine cannot watch (a
// url: server without pid:) names its death when the connections say so
// and a new one is refused; not when the server still listens, nor for a
// server whose process the engine watches; a death between two phases
// counts in the next; a dial of the phase's own that found the server
// gone names it too.
func TestBlindWatch(t *testing.T) {
	up, down := listening(t), testserver.ClosedAddr(t)
	srv := func(addr string) plan.Server {
		return plan.Server{Name: "s", Targets: []plan.URLTarget{{URL: "ws://" + addr + "/ws", Addr: addr}}}
	}
	dead := "the server appears to have died: 20 of 20 connections closed by the peer within 10ms, new connections refused"
	death := closes(map[int64]int64{7: 20})
	for _, c := range []struct {
		name    string
		addr    string
		proc    serverProc
		between bool // the closes came before the phase began
		want    string
	}{
		{"dead", down, running{}, false, dead},
		{"dead between phases", down, running{}, true, dead},
		{"still listening", up, running{}, false, ""},
		{"watched by pid", down, &watchedPID{}, false, "-"},
	} {
		d := &fakeDriver{conns: 20}
		w := newBlindWatch(srv(c.addr), d)
		if c.between {
			d.conns, d.peer = 0, death
		}
		if blind := w.begin(c.proc, d.Conns()); blind != (c.want != "-") {
			t.Errorf("%s: blind %v", c.name, blind)
			continue
		}
		if c.want == "-" {
			continue
		}
		d.conns, d.peer = 0, death
		if got := w.died(t.Context(), d.Conns(), false); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		// The next phase: nothing new.
		w.begin(c.proc, d.Conns())
		if got := w.died(t.Context(), d.Conns(), false); got != "" {
			t.Errorf("%s, the phase after: %q, want nothing new", c.name, got)
		}
	}
	// A phase that went wrong before its connections opened (the server
	// died first): none closed by the peer, but no listener is left.
	for _, c := range []struct {
		addr  string
		wrong bool
		want  string
	}{
		{down, true, "the server appears to have died: new connections refused"},
		{down, false, ""}, // a phase that went right names nothing
		{up, true, ""},    // the server listens: its own failures
	} {
		d := &fakeDriver{}
		w := newBlindWatch(srv(c.addr), d)
		w.begin(running{}, 0)
		if got := w.died(t.Context(), 0, c.wrong); got != c.want {
			t.Errorf("no connection lost, went wrong %v, %s: %q, want %q", c.wrong, c.addr, got, c.want)
		}
	}
	if w := newBlindWatch(plan.Server{Name: "started"}, &fakeDriver{}); w != nil {
		t.Errorf("a server wsplan started: %+v, want no watch", w)
	}
	// The phase's own dial (conformance) found it gone.
	w := newBlindWatch(srv(down), &fakeDriver{})
	w.begin(running{}, 0)
	if why := w.serverGone(running{})(0); why != "appears to have died (new connections refused)" {
		t.Errorf("ServerGone: %q", why)
	}
	if got := w.died(t.Context(), 0, false); got != "server appears to have died (new connections refused) during the phase" {
		t.Errorf("after ServerGone: %q", got)
	}
	w = newBlindWatch(srv(up), &fakeDriver{})
	w.begin(running{}, 0)
	if why := w.serverGone(running{})(0); why != "" {
		t.Errorf("ServerGone of a listening server: %q", why)
	}
}
