package client

import (
	"encoding/json"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// TestReconnectServerRestart: the server goes away and comes back on the
// same address 300 ms later; attempts fail (refused) and wait by the
// policy, then every connection of a hold is back. The hold's live counts
// follow: the open connections fall to 0 and come back, each failed
// attempt counts as refused, each reconnect as a connection opened.
func TestReconnectServerRestart(t *testing.T) {
	testenv.Slow(t, "2 s: reconnects across a server restart")
	srv := testserver.New(testserver.Options{})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	c := newClient(t, Options{Targets: []string{addr},
		Reconnect: &Reconnect{Policy: ReconnectBackoff, Base: units.Duration(20 * time.Millisecond), Max: units.Duration(200 * time.Millisecond), Jitter: JitterNone}})
	mustConnect(t, c, 20)
	back := make(chan *http.Server, 1)
	time.AfterFunc(200*time.Millisecond, func() {
		hs.Close() // the listener and every connection
		srv.Close()
		time.Sleep(300 * time.Millisecond)
		ln2, err := net.Listen("tcp4", addr)
		if err != nil {
			t.Error(err)
			back <- nil
			return
		}
		hs2 := &http.Server{Handler: testserver.New(testserver.Options{})}
		go hs2.Serve(ln2)
		back <- hs2
	})
	pr := &Progress{Live: &Live{}}
	lowest := make(chan int64, 1)
	go func() {
		low := int64(math.MaxInt64)
		for deadline := time.Now().Add(1400 * time.Millisecond); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if s := pr.Live.Snapshot(); s.HasOpen {
				low = min(low, s.Open)
			}
		}
		lowest <- low
	}()
	res, err := idle(t.Context(), c, 1500*time.Millisecond, false, pr)
	if err != nil {
		t.Fatal(err)
	}
	if hs2 := <-back; hs2 != nil {
		t.Cleanup(func() { hs2.Close() })
	}
	rs := c.Reconnects()
	if rs.Drops != 20 || rs.Reconnects != 20 || rs.Failed == 0 || !strings.HasPrefix(string(firstKey(rs.Errors)), "connect: connection refused") {
		t.Errorf("reconnects %+v: want 20 back after refused attempts", rs)
	}
	s := pr.Live.Snapshot()
	if low := <-lowest; low != 0 || s.Open != 20 || s.Connects != 20 || s.ConnectFailed[ConnectRefused] != rs.Failed || s.ConnectFailed.Total() != rs.Failed {
		t.Errorf("live: lowest open %d, open %d, connects %d, failures %v; want 0, 20, 20 and %d refused", low, s.Open, s.Connects, s.ConnectFailed, rs.Failed)
	}
	if d := time.Duration(rs.Latency.Min()); d < 250*time.Millisecond {
		t.Errorf("first back %v after its drop, want after the 300 ms the server was away", d)
	}
	if res.Alive != 20 || c.Conns() != 20 {
		t.Errorf("hold: %d alive, %d open", res.Alive, c.Conns())
	}
}

// TestReconnectNone: without a policy a dropped connection stays closed,
// and a kind that is not an adopter gets no reconnects while it runs.
func TestReconnectNone(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	c := newClient(t, Options{Targets: []string{srv.Addr()}, Reconnect: &Reconnect{Policy: ReconnectNone}})
	mustConnect(t, c, 10)
	srv.Drop(5)
	testenv.WaitFor(t, "the drops", func() bool { return c.Conns() == 5 })
	res, err := idle(t.Context(), c, 200*time.Millisecond, false, nil)
	if err != nil || res.Alive != 5 || c.Reconnects().Drops != 0 {
		t.Errorf("hold %+v %v, reconnects %+v", res, err, c.Reconnects())
	}
	if _, err := New(Options{Targets: []string{srv.Addr()}, Reconnect: &Reconnect{Policy: "sometimes"}}); err == nil || !strings.Contains(err.Error(), `policy: must be none, immediate or backoff, got "sometimes"`) {
		t.Errorf("bad policy: %v", err)
	}
}

// TestReconnectWait: the waits of each policy and jitter.
func TestReconnectWait(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		r    Reconnect
		n    int
		u    float64
		want time.Duration
	}{
		{Reconnect{Policy: ReconnectImmediate, Base: units.Duration(100 * ms)}, 0, 0.5, 0},
		{Reconnect{Policy: ReconnectImmediate, Base: units.Duration(100 * ms)}, 3, 0.5, 100 * ms},
		{Reconnect{Policy: ReconnectBackoff, Base: units.Duration(100 * ms), Max: units.Duration(time.Second), Jitter: JitterNone}, 0, 0.5, 100 * ms},
		{Reconnect{Policy: ReconnectBackoff, Base: units.Duration(100 * ms), Max: units.Duration(time.Second), Jitter: JitterNone}, 2, 0.5, 400 * ms},
		{Reconnect{Policy: ReconnectBackoff, Base: units.Duration(100 * ms), Max: units.Duration(time.Second), Jitter: JitterNone}, 9, 0.5, time.Second},
		{Reconnect{Policy: ReconnectBackoff, Base: units.Duration(100 * ms), Max: units.Duration(time.Second), Jitter: JitterNone}, 80, 0.5, time.Second},
		{Reconnect{Policy: ReconnectBackoff, Base: units.Duration(100 * ms), Max: units.Duration(time.Second), Jitter: JitterFull}, 1, 0.25, 50 * ms},
		{Reconnect{Policy: ReconnectBackoff, Base: units.Duration(100 * ms), Max: units.Duration(time.Second), Jitter: JitterEqual}, 1, 0.5, 150 * ms},
	} {
		if got := c.r.wait(c.n, c.u); got != c.want {
			t.Errorf("%+v attempt %d u %v: %v, want %v", c.r, c.n, c.u, got, c.want)
		}
	}
	r := Reconnect{}
	if err := r.Check(); err != nil || r.Policy != ReconnectNone || r.Jitter != JitterFull || r.Base != units.Duration(100*ms) || r.Max != units.Duration(10*time.Second) || r.Timeout != units.Duration(5*time.Second) {
		t.Errorf("defaults %+v %v", r, err)
	}
	// The policy crosses to shards as JSON.
	var back Reconnect
	if b, err := json.Marshal(r); err != nil || json.Unmarshal(b, &back) != nil || back != r {
		t.Errorf("JSON round trip: %+v, want %+v (%s)", back, r, b)
	}
	for _, bad := range []Reconnect{{Policy: "sometimes"}, {Base: -1}, {Base: units.Duration(time.Second), Max: units.Duration(ms)}, {Jitter: "lots"}} {
		if err := bad.Check(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// firstKey is some key of m ("" when empty).
func firstKey(m Reasons) Reason {
	for k := range m {
		return k
	}
	return ""
}
