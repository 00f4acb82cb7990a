package client

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

func TestNativeBucket(t *testing.T) {
	for _, v := range []float64{1e-6, 0.000123, 0.001, 0.0015, 0.01, 0.5, 1, 1.0001, 2, 3, 100} {
		i := NativeBucket(v)
		lo, hi := NativeUpper(i-1), NativeUpper(i)
		if !(v > lo*(1-1e-12) && v <= hi*(1+1e-12)) {
			t.Errorf("%g: bucket %d = (%g, %g]", v, i, lo, hi)
		}
	}
	if NativeBucket(1) != 0 || NativeBucket(2) != 8 || NativeBucket(0.5) != -8 {
		t.Errorf("powers of two sit on their bucket's upper bound: 1→%d 2→%d 0.5→%d", NativeBucket(1), NativeBucket(2), NativeBucket(0.5))
	}
}

// TestLivePublish: loops publish differences of their running totals; a
// shard's snapshot adds to the merged one, histograms exactly.
func TestLivePublish(t *testing.T) {
	var l Live
	var a, b LiveCounts
	l.Publish(&a, LiveCounts{Sent: 10, Recv: 8})
	l.Publish(&b, LiveCounts{Sent: 5, Late: 1})
	l.Publish(&a, LiveCounts{Sent: 30, Recv: 29, Failed: 1, Lost: 2})
	h := NewHistogram()
	for _, v := range []int64{1e6, 1e6, 2e6, 50e6} {
		Record(h, v)
	}
	l.observe(h)
	s := l.Snapshot()
	if s.Sent != 35 || s.Recv != 29 || s.Failed != 1 || s.Lost != 2 || s.Late != 1 || s.Latency.Count != 4 {
		t.Fatalf("snapshot %+v", s)
	}
	if n := s.Latency.Buckets[NativeBucket(0.001)]; n != 2 {
		t.Errorf("1ms bucket %d, want 2: %v", n, s.Latency.Buckets)
	}
	l.SetShard(1, "b", LiveSnapshot{Sent: 100, Latency: s.Latency})
	m := l.Snapshot()
	if m.Sent != 135 || m.Latency.Count != 8 || m.Latency.Buckets[NativeBucket(0.05)] != 2 {
		t.Errorf("merged %+v", m)
	}
	if sh := l.Shards(); len(sh) != 2 || sh[1].Name != "b" || sh[1].Sent != 100 {
		t.Errorf("shards %+v", sh)
	}
	var none *Live
	none.Publish(&a, LiveCounts{Sent: 1}) // no Live: nothing, no panic
}

// TestConnectReasonOf: failure texts fall into the fixed reasons, by
// their errno, their status or the handshake's step; classing allocates
// nothing.
func TestConnectReasonOf(t *testing.T) {
	for _, tc := range []struct {
		reason Reason
		state  uint8
		want   ConnectReason
	}{
		{"connect: " + Reason(unix.ECONNREFUSED.Error()), stConnecting, ConnectRefused},
		{"connect: " + Reason(unix.ETIMEDOUT.Error()), stConnecting, ConnectTimeout},
		{ReasonTimeout, stReceiving, ConnectTimeout},
		{"read: " + Reason(unix.ECONNRESET.Error()), stReceiving, ConnectReset},
		{"write: " + Reason(unix.EPIPE.Error()), stSending, ConnectReset},
		{"read: " + Reason(unix.ECONNRESET.Error()), stGreeting, ConnectReset},
		{"connect: " + Reason(unix.EHOSTUNREACH.Error()), stConnecting, ConnectUnreachable},
		{"connect: " + Reason(unix.EADDRNOTAVAIL.Error()), stConnecting, ConnectLocal},
		{"socket: " + Reason(unix.EMFILE.Error()), stConnecting, ConnectLocal},
		{"epoll_ctl: " + Reason(unix.EBADF.Error()), stConnecting, ConnectLocal},
		{ReasonHandshakeEOF, stReceiving, ConnectClosed},
		{ReasonEOF, stGreeting, ConnectClosed},
		{"bad status 429", stReceiving, ConnectHTTP4xx},
		{"bad status 503", stReceiving, ConnectHTTP5xx},
		{"bad status 200", stReceiving, ConnectHandshake},
		{"bad status line", stReceiving, ConnectHandshake},
		{Reason(errNoUpgrade.Error()), stReceiving, ConnectHandshake},
		{ReasonDeclined, stReceiving, ConnectHandshake},
		{"tls: x509: certificate signed by unknown authority", stTLS, ConnectTLS},
		{"mqtt: connack: not authorized", stGreeting, ConnectProtocol},
		{ReasonServerClose + " 1000", stGreeting, ConnectProtocol},
		{"socket.io: connect refused: not authorized", stGreeting, ConnectProtocol},
		{"graphql-ws: forbidden (4403): Forbidden", stGreeting, ConnectProtocol},
		// A server's words never make the class: this names a close, not an errno.
		{"server close 1013: connection refused", stGreeting, ConnectProtocol},
		// Sad half: what names no known cause is other, never free text.
		{"connect: " + Reason(unix.EIO.Error()), stConnecting, ConnectOther},
		{"something odd", stConnecting, ConnectOther},
		{"", stConnecting, ConnectOther},
	} {
		if got := connectReasonOf(tc.reason, tc.state); got != tc.want {
			t.Errorf("%q in state %d: %s, want %s", tc.reason, tc.state, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { connectReasonOf("read: connection reset by peer", stReceiving) }); n != 0 {
		t.Errorf("classing allocates %v times", n)
	}
	if ConnectReason(200).String() != "other" {
		t.Errorf("an unknown reason names %q", ConnectReason(200).String())
	}
}

// TestConnectFailuresJSON: the shard wire carries reasons by name, an
// unknown one (a newer shard's) as other.
func TestConnectFailuresJSON(t *testing.T) {
	var f ConnectFailures
	f[ConnectRefused], f[ConnectHTTP5xx] = 3, 2
	b, err := json.Marshal(f)
	if err != nil || string(b) != `{"http_5xx":2,"refused":3}` {
		t.Fatalf("marshal: %s %v", b, err)
	}
	var g ConnectFailures
	if err := json.Unmarshal([]byte(`{"refused":3,"http_5xx":2,"quantum":4}`), &g); err != nil {
		t.Fatal(err)
	}
	if g[ConnectRefused] != 3 || g[ConnectHTTP5xx] != 2 || g[ConnectOther] != 4 || g.Total() != 9 {
		t.Errorf("unmarshal: %v", g)
	}
}

// TestLiveShardRuns: a shard group's Live shows the shards' open
// connections from a run's start, and a phase of several runs keeps
// counting (a shard counts each run from zero); gauges are the latest.
func TestLiveShardRuns(t *testing.T) {
	var l Live
	l.SetShardOpen(0, "a", 10)
	l.SetShardOpen(1, "b", 10)
	if s := l.Snapshot(); !s.HasOpen || s.Open != 20 {
		t.Fatalf("before any line: open %d (%v), want 20", s.Open, s.HasOpen)
	}
	var refused ConnectFailures
	refused[ConnectRefused] = 2
	l.SetShard(0, "a", LiveSnapshot{Sent: 5, Connects: 3, ConnectFailed: refused, Open: 12, CPUSeconds: 1, Latency: NativeHist{Count: 1, Sum: 0.001, Buckets: map[int]uint64{NativeBucket(0.001): 1}}})
	l.ShardRunsDone()
	l.SetShardOpen(0, "a", 12)
	l.SetShard(0, "a", LiveSnapshot{Sent: 1, Connects: 1, ConnectFailed: refused, Open: 11, CPUSeconds: 1.5})
	s := l.Snapshot()
	if s.Sent != 6 || s.Connects != 4 || s.ConnectFailed[ConnectRefused] != 4 || s.Open != 21 || s.CPUSeconds != 1.5 || s.Latency.Count != 1 {
		t.Errorf("second run: %+v; want sent 6, connects 4, refused 4, open 21, cpu 1.5, one latency", s)
	}
	if sh := l.Shards(); len(sh) != 2 || sh[0].Sent != 6 || sh[1].Name != "b" || sh[1].Open != 10 {
		t.Errorf("shards %+v", sh)
	}
}

// TestLiveConnections: a Live follows the client's connections as they
// open, are dropped and close, and counts connections given up by
// reason (not their attempts).
func TestLiveConnections(t *testing.T) {
	closed := testserver.ClosedAddr(t)
	c := newClient(t, Options{Targets: []string{closed}, Loops: 2})
	pr := &Progress{Live: &Live{}}
	res, err := c.Connect(t.Context(), ConnectParams{Connections: 20, Concurrency: 20, Retries: 2, Timeout: units.Duration(5 * time.Second)}, pr)
	if err != nil || res.Failed != 20 || res.Retried != 40 {
		t.Fatalf("connect to a closed port: %+v %v", res, err)
	}
	s := pr.Live.Snapshot()
	if s.ConnectFailed[ConnectRefused] != 20 || s.ConnectFailed.Total() != 20 || s.Connects != 0 || !s.HasOpen || s.Open != 0 {
		t.Errorf("closed port: %+v; want 20 refused, nothing open", s)
	}

	srv := testserver.Start(t, testserver.Options{})
	c = newClient(t, Options{Targets: []string{srv.Addr()}, Loops: 2})
	pr = &Progress{Live: &Live{}}
	if res, err := c.Connect(t.Context(), ConnectParams{Connections: 20, Concurrency: 20, Timeout: units.Duration(5 * time.Second)}, pr); err != nil || res.Success != 20 {
		t.Fatalf("connect: %+v %v", res, err)
	}
	if s := pr.Live.Snapshot(); s.Connects != 20 || s.Open != 20 || s.ConnectFailed.Total() != 0 {
		t.Errorf("connect: %+v; want 20 opened and open", s)
	}
	// The hold lasts until the drops were seen (at most a minute: a bound
	// no host reaches, not a wait).
	hold := &Progress{Live: &Live{}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := idle(ctx, c, time.Minute, false, hold)
		done <- err
	}()
	testenv.WaitFor(t, "the hold's connections", func() bool { return hold.Live.Snapshot().Open == 20 })
	srv.Drop(5)
	testenv.WaitFor(t, "the drops mid-hold", func() bool { return hold.Live.Snapshot().Open == 15 })
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	c.Close()
	if s := hold.Live.Snapshot(); s.Open != 0 || s.Connects != 0 {
		t.Errorf("after close: open %d, connects %d; want 0 and 0", s.Open, s.Connects)
	}
}
