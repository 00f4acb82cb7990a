package wstls

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// payload returns n bytes of a recognisable pattern.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

func TestEcho(t *testing.T) {
	tests := []struct {
		name     string
		max      uint16
		suite    uint16 // TLS 1.2 suite the server offers only; 0 = defaults
		p256     bool   // the server wants P-256 only: TLS 1.3 HelloRetryRequest
		noFast   bool
		wantVer  uint16
		wantFast bool
	}{
		{name: "tls13", max: tls.VersionTLS13, wantVer: tls.VersionTLS13, wantFast: true},
		{name: "tls13-helloretry", max: tls.VersionTLS13, p256: true, wantVer: tls.VersionTLS13, wantFast: true},
		{name: "tls12-aes128gcm", max: tls.VersionTLS12, suite: tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, wantVer: tls.VersionTLS12, wantFast: true},
		{name: "tls12-aes256gcm", max: tls.VersionTLS12, suite: tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, wantVer: tls.VersionTLS12, wantFast: true},
		{name: "tls12-chacha20", max: tls.VersionTLS12, suite: tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, wantVer: tls.VersionTLS12, wantFast: true},
		{name: "tls12-cbc-crypto/tls", max: tls.VersionTLS12, suite: tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, wantVer: tls.VersionTLS12},
		{name: "tls13-crypto/tls", max: tls.VersionTLS13, noFast: true, wantVer: tls.VersionTLS13},
		{name: "tls12-crypto/tls", max: tls.VersionTLS12, noFast: true, wantVer: tls.VersionTLS12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTestServer(t, false, func(c *tls.Config) {
				c.MaxVersion = tt.max
				if tt.suite != 0 {
					c.CipherSuites = []uint16{tt.suite}
				}
				if tt.p256 {
					c.CurvePreferences = []tls.CurveID{tls.CurveP256}
				}
			})
			cfg := clientConfig(t, srv, true)
			if tt.suite != 0 {
				cfg.CipherSuites = []uint16{tt.suite}
			}
			s, c := dialSession(t, srv, cfg, tt.noFast)
			st := s.State()
			if st.Version != tt.wantVer || st.Fast != tt.wantFast {
				t.Fatalf("state %+v, want version %#x fast %v", st, tt.wantVer, tt.wantFast)
			}
			if s.HandshakeTime() <= 0 {
				t.Errorf("handshake time %v", s.HandshakeTime())
			}
			// Sizes within a record, at its limit and over several; the
			// socket's bytes handed in whole and in 7-byte pieces
			// (records split across Feeds).
			for _, n := range []int{1, 1024, maxPlaintext, 40000} {
				for _, chunk := range []int{64 << 10, 7} {
					if err := echo(s, c, payload(n), chunk); err != nil {
						t.Fatalf("echo %d B in %d-byte reads: %v", n, chunk, err)
					}
				}
				// Idle between echoes: the ciphers are made again.
				s.Idle()
				if tt.wantFast && (s.rd.aead != nil || s.wr.aead != nil) {
					t.Fatal("Idle kept the ciphers")
				}
			}
			closeAndExpectEOF(t, s, c)
		})
	}
}

// closeAndExpectEOF sends close_notify; the echo server then closes,
// and its close_notify reads as io.EOF.
func closeAndExpectEOF(t *testing.T, s *Session, c net.Conn) {
	t.Helper()
	out, err := s.Close(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			s.Feed(buf[:n])
			for {
				p, err := s.Next()
				if err == io.EOF {
					return
				}
				if err != nil {
					t.Fatalf("after close: %v", err)
				}
				if p == nil {
					break
				}
			}
		}
		if err != nil {
			// crypto/tls's server answers close_notify by closing
			// without one of its own; a plain EOF is fine too.
			if err == io.EOF {
				return
			}
			t.Fatalf("read after close: %v", err)
		}
	}
}

func TestWrongCA(t *testing.T) {
	srv := newTestServer(t, false, nil)
	other, err := NewRunCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ClientConfig(ClientOptions{CAFile: other.CAFile, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := NewClient(cfg)
	err = handshake(s, c)
	if err == nil || !strings.Contains(err.Error(), "tls handshake: tls: failed to verify certificate: x509: certificate signed by unknown authority") {
		t.Fatalf("got %v, want an unknown-authority error", err)
	}
	if _, err := s.Seal(nil, []byte("x")); err == nil {
		t.Fatal("Seal after a failed handshake succeeded")
	}
}

func TestWrongName(t *testing.T) {
	srv := newTestServer(t, false, nil)
	cfg, err := ClientConfig(ClientOptions{CAFile: srv.ca.CAFile, ServerName: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = handshake(NewClient(cfg), c)
	if err == nil || !strings.Contains(err.Error(), "certificate is valid for localhost, not example.com") {
		t.Fatalf("got %v, want a name mismatch", err)
	}
}

func TestInsecureSkipVerify(t *testing.T) {
	srv := newTestServer(t, false, nil)
	cfg, err := ClientConfig(ClientOptions{ServerName: "example.com", InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	s, c := dialSession(t, srv, cfg, false)
	if err := echo(s, c, []byte("hello"), 4096); err != nil {
		t.Fatal(err)
	}
}

func TestSNI(t *testing.T) {
	srv := newTestServer(t, false, func(c *tls.Config) { c.NextProtos = []string{"h2", "http/1.1"} })
	for _, name := range []string{"localhost", "127.0.0.1"} {
		cfg, err := ClientConfig(ClientOptions{CAFile: srv.ca.CAFile, ServerName: name})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := dialSession(t, srv, cfg, false)
		want := name
		if net.ParseIP(name) != nil {
			want = ""
		}
		if s.State().ServerName != want {
			t.Errorf("state server name %q, want %q", s.State().ServerName, want)
		}
		if s.State().NegotiatedProtocol != "http/1.1" {
			t.Errorf("ALPN %q, want http/1.1", s.State().NegotiatedProtocol)
		}
	}
	// An IP address is not sent as SNI (RFC 6066 §3).
	if got := srv.snis(); len(got) != 2 || got[0] != "localhost" || got[1] != "" {
		t.Fatalf("server saw SNI %q, want [localhost \"\"]", got)
	}
}

// TestNoHandshakeState: once established on the fast path, a session
// keeps nothing of crypto/tls or the handshake — with a session cache,
// once the first application data has ended the ticket phase.
func TestNoHandshakeState(t *testing.T) {
	for _, v := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		for _, resume := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s resume %v", tls.VersionName(v), resume), func(t *testing.T) {
				srv := newTestServer(t, false, func(c *tls.Config) { c.MaxVersion = v })
				cfg := clientConfig(t, srv, resume)
				s, c := dialSession(t, srv, cfg, false)
				if want := resume && v == tls.VersionTLS13; (s.x != nil) != want {
					t.Fatalf("after the handshake: crypto/tls kept %v, want %v", s.x != nil, want)
				}
				if err := echo(s, c, []byte("hello"), 4096); err != nil {
					t.Fatal(err)
				}
				if s.x != nil || len(s.stash) != 0 {
					t.Fatalf("after an echo: crypto/tls kept %v, stash %d B", s.x != nil, len(s.stash))
				}
				s.Idle()
				if s.rd.aead != nil || s.wr.aead != nil || s.stash != nil {
					t.Fatal("idle session kept ciphers or buffers")
				}
				if err := echo(s, c, []byte("again"), 4096); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestResumption(t *testing.T) {
	for _, v := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			srv := newTestServer(t, false, func(c *tls.Config) { c.MaxVersion = v })
			cfg := clientConfig(t, srv, true)
			s1, c1 := dialSession(t, srv, cfg, false)
			if s1.State().DidResume {
				t.Fatal("first connection resumed")
			}
			// TLS 1.3 tickets arrive after the handshake: an echo takes
			// them in.
			if err := echo(s1, c1, []byte("first"), 4096); err != nil {
				t.Fatal(err)
			}
			s2, c2 := dialSession(t, srv, cfg, false)
			if !s2.State().DidResume {
				t.Fatal("second connection did not resume")
			}
			if !s2.State().Fast {
				t.Fatal("resumed session not on the fast path")
			}
			if err := echo(s2, c2, payload(3000), 100); err != nil {
				t.Fatal(err)
			}
			// Without a session cache, no resumption.
			cfg3 := clientConfig(t, srv, false)
			s3, _ := dialSession(t, srv, cfg3, false)
			if s3.State().DidResume {
				t.Fatal("resumed without a session cache")
			}
		})
	}
}

func TestAbortHandshake(t *testing.T) {
	// A server that accepts and never answers: the handshake waits for
	// input; Abort must end the coroutine (goleak checks).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg, err := ClientConfig(ClientOptions{ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	s := NewClient(cfg)
	out, done, err := s.Handshake(nil, nil)
	if err != nil || done || len(out) == 0 || out[0] != recHandshake {
		t.Fatalf("first step: %d bytes, done %v, err %v", len(out), done, err)
	}
	s.Abort()
	s.Abort()
	if _, _, err := s.Handshake(nil, []byte{1}); err == nil {
		t.Fatal("Handshake after Abort succeeded")
	}
	// Garbage from the server fails the handshake with a reason.
	s = NewClient(cfg)
	if _, _, err := s.Handshake(nil, nil); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Handshake(nil, []byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
	if err == nil || !strings.Contains(err.Error(), "tls handshake:") {
		t.Fatalf("got %v, want a handshake error", err)
	}
}

func TestNotEstablished(t *testing.T) {
	s := NewClient(&tls.Config{InsecureSkipVerify: true})
	if _, err := s.Seal(nil, []byte("x")); err != ErrNotEstablished {
		t.Fatalf("Seal: %v", err)
	}
	if _, err := s.Next(); err != ErrNotEstablished {
		t.Fatalf("Next: %v", err)
	}
}

func TestCorruptRecord(t *testing.T) {
	srv := newTestServer(t, false, nil)
	s, c := dialSession(t, srv, clientConfig(t, srv, false), false)
	ct, err := s.Seal(nil, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(ct); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	buf[n-1] ^= 1 // flip a tag bit
	s.Feed(buf[:n])
	for {
		p, err := s.Next()
		if err != nil {
			if !strings.Contains(err.Error(), "bad record MAC") {
				t.Fatalf("got %v, want bad record MAC", err)
			}
			return
		}
		if p == nil {
			t.Fatal("corrupt record accepted")
		}
	}
}

func TestRecTracker(t *testing.T) {
	// Two records (3 and 0 body bytes) then a third's header, handed in
	// one byte at a time and whole: take never crosses a record end.
	stream := []byte{22, 3, 3, 0, 3, 'a', 'b', 'c', 23, 3, 3, 0, 0, 22, 3, 3, 0, 1, 'x'}
	var tr recTracker
	var cuts []int
	for off := 0; off < len(stream); {
		n := tr.take(stream[off:])
		off += n
		cuts = append(cuts, off)
	}
	want := []int{8, 13, 19}
	if !bytes.Equal(intsToBytes(cuts), intsToBytes(want)) {
		t.Fatalf("record ends %v, want %v", cuts, want)
	}
	tr = recTracker{}
	total := 0
	for i := range stream {
		total += tr.take(stream[i : i+1])
	}
	if total != len(stream) || tr.hdrN != 0 {
		t.Fatalf("byte-wise: took %d, hdrN %d", total, tr.hdrN)
	}
}

func intsToBytes(v []int) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

// lockedLog is a server KeyLogWriter the test can read safely.
type lockedLog struct {
	mu sync.Mutex
	kl keyLog
}

func (l *lockedLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.kl.Write(b)
}

// TestKeyUpdate plays the server's side of a TLS 1.3 KeyUpdate with the
// server's logged secrets: the client must take the new read key, answer
// update_requested with a KeyUpdate of its own before its next record,
// and switch its write key.
func TestKeyUpdate(t *testing.T) {
	var sl lockedLog
	srv := newTestServer(t, false, func(c *tls.Config) {
		c.SessionTicketsDisabled = true
		c.KeyLogWriter = &sl
	})
	s, _ := dialSession(t, srv, clientConfig(t, srv, false), false)
	sl.mu.Lock()
	serverSecret, clientSecret := sl.kl.serverApp, sl.kl.clientApp
	sl.mu.Unlock()
	if serverSecret == nil || clientSecret == nil {
		t.Fatal("no secrets logged")
	}
	// peer is the server's record layer.
	peer := &Session{version: tls.VersionTLS13, st: s.st, mode: modeFast}
	if err := peer.wr.set13(s.st, serverSecret); err != nil {
		t.Fatal(err)
	}
	if err := peer.rd.set13(s.st, clientSecret); err != nil {
		t.Fatal(err)
	}
	ct, err := peer.sealRecord(nil, recHandshake, []byte{24, 0, 0, 1, 1}) // KeyUpdate, update_requested
	if err != nil {
		t.Fatal(err)
	}
	next, err := nextSecret13(s.st, peer.wr.secret[:s.st.hashLen])
	if err != nil {
		t.Fatal(err)
	}
	if err := peer.wr.set13(s.st, next); err != nil {
		t.Fatal(err)
	}
	if ct, err = peer.sealRecord(ct, recAppData, []byte("after")); err != nil {
		t.Fatal(err)
	}
	s.Feed(ct)
	p, err := s.Next()
	if err != nil || string(p) != "after" {
		t.Fatalf("client read %q, %v; want after", p, err)
	}
	out, err := s.Seal(nil, []byte("reply"))
	if err != nil {
		t.Fatal(err)
	}
	peer.Feed(out)
	p, err = peer.Next()
	if err != nil || string(p) != "reply" {
		t.Fatalf("server read %q, %v; want reply after the client's KeyUpdate", p, err)
	}
	if s.keyUpd || peer.keyUpd {
		t.Fatal("KeyUpdate still due")
	}
}

// TestHandshakeByteWise hands the handshake in one byte at a time: the
// coroutine must wait for input at every byte and still see whole records.
func TestHandshakeByteWise(t *testing.T) {
	for _, v := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			srv := newTestServer(t, false, func(c *tls.Config) { c.MaxVersion = v })
			c, err := net.Dial("tcp", srv.addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s := NewClient(clientConfig(t, srv, true))
			if err := handshakeChunks(s, c, 1); err != nil {
				t.Fatal(err)
			}
			if !s.State().Fast {
				t.Fatalf("state %+v", s.State())
			}
			if err := echo(s, c, payload(2000), 1); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestServerSpeaksFirst: application data the server sends right after
// its last handshake flight can arrive in the same read as that flight;
// the session must keep it (with TLS 1.3 tickets before it) for Next.
func TestServerSpeaksFirst(t *testing.T) {
	greet := []byte("hello from the server")
	for _, v := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		for _, resume := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cache=%v", tls.VersionName(v), resume), func(t *testing.T) {
				srv := newGreetServer(t, false, greet, func(c *tls.Config) { c.MaxVersion = v })
				c, err := net.Dial("tcp", srv.addr())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				s := NewClient(clientConfig(t, srv, resume))
				if err := handshake(s, c); err != nil {
					t.Fatal(err)
				}
				t.Logf("left over after the handshake: %d bytes", len(s.stash)-s.stashOff)
				// Whatever of the greeting came with the handshake is in the
				// session; read the rest from the socket.
				var got []byte
				for {
					p, err := s.Next()
					if err != nil {
						t.Fatal(err)
					}
					if p == nil {
						break
					}
					got = append(got, p...)
				}
				buf := make([]byte, 4096)
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				for len(got) < len(greet) {
					n, err := c.Read(buf)
					if err != nil {
						t.Fatal(err)
					}
					s.Feed(buf[:n])
					for {
						p, err := s.Next()
						if err != nil {
							t.Fatal(err)
						}
						if p == nil {
							break
						}
						got = append(got, p...)
					}
				}
				if string(got) != string(greet) {
					t.Fatalf("got %q", got)
				}
				if err := echo(s, c, []byte("and back"), 4096); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestResumeBeforeFirstRead: crypto/tls servers send TLS 1.3 tickets with
// their last handshake flight; a second connection can resume before the
// first has read anything, as in a connection storm.
func TestResumeBeforeFirstRead(t *testing.T) {
	srv := newTestServer(t, false, nil)
	cfg := clientConfig(t, srv, true)
	type sc struct {
		s *Session
		c net.Conn
	}
	var conns []sc
	resumed := 0
	for i := 0; i < 5; i++ {
		s, c := dialSession(t, srv, cfg, false)
		if s.State().DidResume {
			resumed++
		}
		conns = append(conns, sc{s, c})
	}
	// The records taken at handshake end are not seen again; the
	// connections work.
	for _, x := range conns {
		if err := echo(x.s, x.c, []byte("x"), 4096); err != nil {
			t.Fatal(err)
		}
	}
	// Tickets may come in a later read than the server's Finished (then
	// the next connection does a full handshake); here they mostly come
	// with it.
	t.Logf("%d of 4 later connections resumed before any read", resumed)
	if resumed == 0 {
		t.Error("no connection resumed before the first read")
	}
}
