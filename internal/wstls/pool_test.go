package wstls

import (
	"crypto/tls"
	"encoding/hex"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// dialPooled dials srv and completes a handshake with a session of p.
func dialPooled(t *testing.T, p *Pool, srv *testServer, cfg *tls.Config) (*Session, error) {
	t.Helper()
	c, err := net.Dial("tcp", srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := p.NewClient(cfg)
	if err := handshake(s, c); err != nil {
		return s, err
	}
	return s, echo(s, c, []byte("pooled"), 4096)
}

// TestPoolReuse: handshakes one after the other run on one coroutine,
// full and resumed, TLS 1.3 and 1.2, and each session works.
func TestPoolReuse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version uint16
		resume  bool
	}{
		{"1.3", tls.VersionTLS13, false},
		{"1.3-resumed", tls.VersionTLS13, true},
		{"1.2", tls.VersionTLS12, false},
		{"1.2-resumed", tls.VersionTLS12, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTestServer(t, false, func(c *tls.Config) { c.MaxVersion = tc.version })
			cfg := clientConfig(t, srv, tc.resume)
			var p Pool
			defer p.Close()
			resumed := 0
			for i := range 5 {
				s, err := dialPooled(t, &p, srv, cfg)
				if err != nil {
					t.Fatalf("handshake %d: %v", i, err)
				}
				if s.State().Version != tc.version || !s.State().Fast {
					t.Fatalf("handshake %d: state %+v", i, s.State())
				}
				if s.State().DidResume {
					resumed++
				}
			}
			if p.started != 1 || len(p.idle) != 1 {
				t.Errorf("5 handshakes started %d coroutines, %d idle; want 1, 1", p.started, len(p.idle))
			}
			if want := map[bool]int{false: 0, true: 4}[tc.resume]; resumed != want {
				t.Errorf("%d handshakes resumed, want %d", resumed, want)
			}
		})
	}
}

// TestPoolVerifies: a coroutine that ran a handshake with a good
// certificate still rejects a bad one (the verdict of the first is not
// carried over), and goes back to the pool after the failure.
func TestPoolVerifies(t *testing.T) {
	srv := newTestServer(t, false, nil)
	good := clientConfig(t, srv, false)
	other, err := NewRunCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wrongCA, err := ClientConfig(ClientOptions{CAFile: other.CAFile, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	wrongName, err := ClientConfig(ClientOptions{CAFile: srv.ca.CAFile, ServerName: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	var p Pool
	defer p.Close()
	for i, tc := range []struct {
		cfg  *tls.Config
		want string // "" = the handshake succeeds
	}{
		{good, ""},
		{wrongCA, "certificate signed by unknown authority"},
		{good, ""},
		{wrongName, "not example.com"},
		{good, ""},
	} {
		_, err := dialPooled(t, &p, srv, tc.cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Fatalf("%d: %v", i, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Fatalf("%d: got %v, want %q", i, err, tc.want)
		}
	}
	if p.started != 1 {
		t.Errorf("started %d coroutines, want 1", p.started)
	}
}

// TestPoolAbort: a handshake aborted midway ends its coroutine (it is
// not reused), the next handshake gets a new one, and Close leaves no
// goroutine behind.
func TestPoolAbort(t *testing.T) {
	srv := newTestServer(t, false, nil)
	cfg := clientConfig(t, srv, false)
	var p Pool
	s := p.NewClient(cfg)
	hello, done, err := s.Handshake(nil, nil)
	if err != nil || done || len(hello) == 0 {
		t.Fatalf("first step: %d bytes, done %v, %v", len(hello), done, err)
	}
	s.Abort()
	if _, _, err := s.Handshake(nil, []byte{22, 3, 3}); err == nil {
		t.Fatal("an aborted session went on")
	}
	if len(p.idle) != 0 || p.busy != 0 {
		t.Fatalf("after an abort: %d idle, %d busy; want 0, 0", len(p.idle), p.busy)
	}
	// Two in flight at once: two coroutines, both back afterwards.
	c1, c2 := dialConn(t, srv), dialConn(t, srv)
	s1, s2 := p.NewClient(cfg), p.NewClient(cfg)
	out1, _, err1 := s1.Handshake(nil, nil)
	out2, _, err2 := s2.Handshake(nil, nil)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	finish(t, s1, c1, out1)
	finish(t, s2, c2, out2)
	if p.started != 3 || len(p.idle) != 2 || coroutines() != 2 {
		t.Errorf("started %d, %d idle, %d alive; want 3, 2, 2", p.started, len(p.idle), coroutines())
	}
	p.Close()
	if _, err := dialPooled(t, &p, srv, cfg); err != nil {
		t.Fatalf("after Close: %v", err)
	}
	if len(p.idle) != 0 {
		t.Errorf("a closed pool kept %d coroutines", len(p.idle))
	}
	if n := coroutines(); n != 0 {
		t.Errorf("%d handshake coroutines after Close, want 0", n)
	}
}

// coroutines counts the goroutines running worker.run.
func coroutines() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "wstls.(*worker).run(")
}

// TestPoolBound: while handshakes are in progress a pool keeps as many
// idle coroutines as there are handshakes, for the next ones to reuse;
// when none is left, minIdle.
func TestPoolBound(t *testing.T) {
	srv := newTestServer(t, false, nil)
	cfg := clientConfig(t, srv, false)
	var p Pool
	defer p.Close()
	const n = 2*minIdle + 8
	type hs struct {
		c   net.Conn
		s   *Session
		out []byte
	}
	start := func() hs {
		h := hs{c: dialConn(t, srv), s: p.NewClient(cfg)}
		var err error
		if h.out, _, err = h.s.Handshake(nil, nil); err != nil {
			t.Fatal(err)
		}
		return h
	}
	var first []hs
	for range n {
		first = append(first, start())
	}
	for _, h := range first[:n/2] {
		finish(t, h.s, h.c, h.out)
	}
	if p.started != n || len(p.idle) != n/2 {
		t.Fatalf("half finished: started %d, %d idle; want %d, %d", p.started, len(p.idle), n, n/2)
	}
	var second []hs
	for range n / 2 {
		second = append(second, start())
	}
	if p.started != n || len(p.idle) != 0 {
		t.Fatalf("restarted: started %d, %d idle; want %d, 0", p.started, len(p.idle), n)
	}
	for _, h := range append(first[n/2:], second...) {
		finish(t, h.s, h.c, h.out)
	}
	if len(p.idle) != minIdle || p.busy != 0 || coroutines() != minIdle {
		t.Errorf("all finished: %d idle, %d busy, %d alive; want %d, 0, %d", len(p.idle), p.busy, coroutines(), minIdle, minIdle)
	}
}

// dialConn dials srv, closed at the test's end.
func dialConn(t *testing.T, srv *testServer) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// finish writes a handshake's first flight and completes it.
func finish(t *testing.T, s *Session, c net.Conn, first []byte) {
	t.Helper()
	if _, err := c.Write(first); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16<<10)
	for {
		if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		out, done, err := s.Handshake(nil, buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > 0 {
			if _, err := c.Write(out); err != nil {
				t.Fatal(err)
			}
		}
		if done {
			return
		}
	}
}

// TestKeyLog: the secrets crypto/tls logs are decoded without
// allocating; lines it must not trust are refused.
func TestKeyLog(t *testing.T) {
	random := strings.Repeat("ab", 32)
	s32, s48 := strings.Repeat("01", 32), strings.Repeat("fe", 48)
	for _, tc := range []struct {
		line    string
		field   string // the secret set: master, client, server; "" = none
		want    string // its hex
		wantErr bool
	}{
		{"CLIENT_RANDOM " + random + " " + s48 + "\n", "master", s48, false},
		{"CLIENT_TRAFFIC_SECRET_0 " + random + " " + s32 + "\n", "client", s32, false},
		{"SERVER_TRAFFIC_SECRET_0 " + random + " " + s48 + "\n", "server", s48, false},
		{"CLIENT_HANDSHAKE_TRAFFIC_SECRET " + random + " " + s32 + "\n", "", "", false},
		{"SERVER_TRAFFIC_SECRET_0 " + random + " " + s48 + "00\n", "", "", true}, // longer than any secret
		{"SERVER_TRAFFIC_SECRET_0 " + random + " zz\n", "", "", true},
		{"CLIENT_TRAFFIC_SECRET_0 " + random + "\n", "", "", true},
		{"CLIENT_RANDOM\n", "", "", true},
	} {
		var k keyLog
		_, err := k.Write([]byte(tc.line))
		if (err != nil) != tc.wantErr {
			t.Errorf("%.40q: error %v, want error %v", tc.line, err, tc.wantErr)
			continue
		}
		got := map[string][]byte{"master": k.master, "client": k.clientApp, "server": k.serverApp}
		for field, v := range got {
			want := ""
			if field == tc.field {
				want = tc.want
			}
			if hex.EncodeToString(v) != want {
				t.Errorf("%.40q: %s = %x, want %s", tc.line, field, v, want)
			}
		}
	}
	var k keyLog
	line := []byte("SERVER_TRAFFIC_SECRET_0 " + random + " " + s48 + "\n")
	if n := testing.AllocsPerRun(100, func() {
		if _, err := k.Write(line); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a key log line allocates %.0f times, want 0", n)
	}
}

// TestParkedStacksKept: the GC leaves the stacks of parked handshakes
// alone (park's pad), so that they do not grow again, copied, when the
// server's answer comes. 64 handshakes parked after their ClientHello:
// the stack in use is the same after two GCs (without the pad, each GC
// halves it), and no larger than the handshake needs.
func TestParkedStacksKept(t *testing.T) {
	cfg, err := ClientConfig(ClientOptions{ServerName: "localhost", InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	var p Pool
	defer p.Close()
	var parked []*Session
	defer func() {
		for _, s := range parked {
			s.Abort()
		}
	}()
	for range 64 {
		s := p.NewClient(cfg)
		if _, _, err := s.Handshake(nil, nil); err != nil {
			t.Fatal(err)
		}
		parked = append(parked, s)
	}
	stackInuse := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.StackInuse
	}
	runtime.GC()
	before := stackInuse()
	runtime.GC()
	runtime.GC()
	after := stackInuse()
	if after < before*9/10 {
		t.Errorf("stacks in use fell from %d to %d bytes over two GCs: parked handshakes' stacks were shrunk", before, after)
	}
	// The pad must not grow the stacks it keeps: 16 KB each (and the
	// test's own goroutines), not 32. (The race detector's frames are
	// larger.)
	if per := after / uint64(len(parked)); per > 24<<10 && !raceOn {
		t.Errorf("%d bytes of stack per parked handshake, want at most 24 KB", per)
	}
}
