//lint:file-ignore SA1019 nhooyr.io/websocket is marked deprecated (moved to github.com/coder/websocket); wsplan's nhooyr preset serves it, so the client must interoperate with it.

package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lesismal/nbio/logging"
	"github.com/lesismal/nbio/nbhttp"
	nbws "github.com/lesismal/nbio/nbhttp/websocket"
	"github.com/lxzan/gws"
	nhooyr "nhooyr.io/websocket"

	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/internal/wstls"
)

// serveHTTP serves h on a loopback httptest server (TLS with cfg when
// non-nil) closed at cleanup, and returns its address. Handlers own
// hijacked connections: the client closes its end and they return.
func serveHTTP(t testing.TB, cfg *tls.Config, h http.HandlerFunc) string {
	t.Helper()
	var wg sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wg.Add(1)
		defer wg.Done()
		h(w, r)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // failed TLS handshakes are what some tests make
	if cfg != nil {
		srv.TLS = cfg
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(func() {
		srv.Close()
		wg.Wait()
	})
	return srv.Listener.Addr().String()
}

// gorillaEcho is a gorilla echo handler; check (if set) sees every
// upgrade request first.
func gorillaEcho(compress bool, subprotocols []string, check func(r *http.Request)) http.HandlerFunc {
	opts := testserver.Options{Compression: compress, Subprotocols: subprotocols}
	if check != nil {
		opts.Check = func(r *http.Request) error { check(r); return nil }
	}
	return testserver.New(opts).ServeHTTP
}

type gwsEcho struct{ gws.BuiltinEventHandler }

func (gwsEcho) OnMessage(c *gws.Conn, m *gws.Message) {
	defer m.Close()
	_ = c.WriteMessage(m.Opcode, m.Bytes()) // a failed write closes c
}

// OnPing answers a ping (gws's built-in handler ignores them).
func (gwsEcho) OnPing(c *gws.Conn, p []byte) { _ = c.WritePong(p) }

// startGwsDeflate serves gws with permessage-deflate (every message
// compressed; takeover as asked).
func startGwsDeflate(t testing.TB, cfg *tls.Config, compress, takeover bool) string {
	up := gws.NewUpgrader(gwsEcho{}, &gws.ServerOption{PermessageDeflate: gws.PermessageDeflate{
		Enabled: compress, ServerContextTakeover: takeover, ClientContextTakeover: takeover, Threshold: 1,
	}})
	return serveHTTP(t, cfg, func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r)
		if err != nil {
			return
		}
		c.ReadLoop()
	})
}

func startNhooyrDeflate(t testing.TB, takeover bool) string {
	opts := &nhooyr.AcceptOptions{CompressionMode: nhooyr.CompressionNoContextTakeover, CompressionThreshold: 1}
	if takeover {
		opts.CompressionMode = nhooyr.CompressionContextTakeover
	}
	return serveHTTP(t, nil, func(w http.ResponseWriter, r *http.Request) {
		c, err := nhooyr.Accept(w, r, opts)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := context.Background()
		for {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.Write(ctx, typ, msg); err != nil {
				return
			}
		}
	})
}

// startNbioDeflate serves nbio's websocket from an nbhttp.Engine in
// non-blocking (epoll) mode, as the nbio_nonblocking preset does.
func startNbioDeflate(t testing.TB) string {
	logging.SetLevel(logging.LevelError)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := nbws.NewUpgrader()
	up.EnableCompression(true)
	up.OnMessage(func(c *nbws.Conn, mt nbws.MessageType, data []byte) {
		_ = c.WriteMessage(mt, data) // a failed write closes c
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = up.Upgrade(w, r, nil) // on error Upgrade has answered
	})
	addr := ln.Addr().String()
	e := nbhttp.NewEngine(nbhttp.Config{
		Network: "tcp", Addrs: []string{addr},
		Listen:            func(string, string) (net.Listener, error) { return ln, nil },
		IOMod:             nbhttp.IOModNonBlocking,
		Handler:           mux,
		ServerExecutor:    func(f func()) { f() },
		SupportServerOnly: true,
	})
	up.Engine = e
	if err := e.Start(); err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return addr
}

// runCA makes a throw-away CA and server certificate (127.0.0.1) and
// returns the server's config (limited to version, 0 = any) and the CA
// file.
func runCA(t testing.TB, version uint16) (*tls.Config, string) {
	t.Helper()
	dir := t.TempDir()
	ca, err := wstls.NewRunCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ca.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	if version != 0 {
		cfg.MinVersion, cfg.MaxVersion = version, version
	}
	return cfg, ca.CAFile
}

func TestTLSEcho(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version uint16
		want    string
		resume  bool
	}{
		{"tls1.3", tls.VersionTLS13, "TLS 1.3", false},
		{"tls1.2", tls.VersionTLS12, "TLS 1.2", false},
		{"tls1.3 resumed", tls.VersionTLS13, "TLS 1.3", true},
		{"tls1.2 resumed", tls.VersionTLS12, "TLS 1.2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, caFile := runCA(t, tc.version)
			addr := serveHTTP(t, cfg, gorillaEcho(false, nil, nil))
			c := newClient(t, Options{Targets: []string{addr}, Loops: 2, NoDelay: true, TLS: &TLSOptions{CAFile: caFile, SessionResumption: tc.resume}})
			cr, er := connectRounds(t, c, 50, roundsParams{Rounds: 40, Payload: payloadOf(t, "text", 1024), Text: true})
			if er.Success != 2000 || er.Failed != 0 {
				t.Fatalf("echo %d ok, %d failed (%v), want 2000 and 0", er.Success, er.Failed, er.Errors)
			}
			if cr.TLSVersion != tc.want {
				t.Errorf("tls version %q, want %q", cr.TLSVersion, tc.want)
			}
			for name, h := range map[string]Hist{"tcp": cr.TCP, "tls": cr.TLS, "upgrade": cr.Upgrade} {
				if h.TotalCount() != 50 || h.Min() <= 0 {
					t.Errorf("%s histogram: %d values, min %d; want 50 values > 0", name, h.TotalCount(), h.Min())
				}
			}
			if sum := cr.TCP.Mean() + cr.TLS.Mean() + cr.Upgrade.Mean(); sum > cr.Latency.Mean()*1.01+1000 {
				t.Errorf("tcp+tls+upgrade mean %.0f ns > handshake mean %.0f ns", sum, cr.Latency.Mean())
			}
			if !tc.resume && cr.TLSResumed != 0 {
				t.Errorf("%d resumed without session_resumption", cr.TLSResumed)
			}
			// With resumption, connections after the first ticket resume
			// (those already in flight when it came cannot).
			if tc.resume {
				cr2, err := c.Connect(t.Context(), ConnectParams{Connections: 20, Concurrency: 1, Timeout: units.Duration(5 * time.Second)}, nil)
				if err != nil || cr2.Success != 20 {
					t.Fatalf("second connect %+v %v", cr2, err)
				}
				if cr2.TLSResumed != 20 {
					t.Errorf("%d of 20 later handshakes resumed, want 20", cr2.TLSResumed)
				}
			}
			if er.PayloadIn != er.WireIn || er.PayloadIn != 2000*1024 {
				t.Errorf("bytes in: payload %d wire %d, want both %d", er.PayloadIn, er.WireIn, 2000*1024)
			}
		})
	}
}

func TestTLSUnknownAuthority(t *testing.T) {
	cfg, _ := runCA(t, 0)
	_, otherCA := runCA(t, 0)
	addr := serveHTTP(t, cfg, gorillaEcho(false, nil, nil))
	c := newClient(t, Options{Targets: []string{addr}, TLS: &TLSOptions{CAFile: otherCA}})
	cr, err := c.Connect(t.Context(), ConnectParams{Connections: 3, Concurrency: 3, Timeout: units.Duration(5 * time.Second), Retries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Reason("tls: x509: certificate signed by unknown authority")
	if cr.Failed != 3 || cr.Errors[want] != 3 {
		t.Fatalf("failed %d, errors %v; want 3 x %q", cr.Failed, cr.Errors, want)
	}
	// insecure_skip_verify accepts it.
	c2 := newClient(t, Options{Targets: []string{addr}, TLS: &TLSOptions{InsecureSkipVerify: true}})
	cr, err = c2.Connect(t.Context(), ConnectParams{Connections: 3, Concurrency: 3, Timeout: units.Duration(5 * time.Second), Retries: -1}, nil)
	if err != nil || cr.Success != 3 {
		t.Fatalf("insecure: %+v %v", cr, err)
	}
	// Plain ws:// against the TLS port fails the handshake, not silently.
	c3 := newClient(t, Options{Targets: []string{addr}})
	cr, err = c3.Connect(t.Context(), ConnectParams{Connections: 1, Concurrency: 1, Timeout: units.Duration(5 * time.Second), Retries: -1}, nil)
	if err != nil || cr.Failed != 1 {
		t.Fatalf("plain against TLS: %+v %v", cr, err)
	}
}

// TestHandshakeOptions: the request carries what Options say, the server
// sees it, and the negotiated subprotocol is recorded.
func TestHandshakeOptions(t *testing.T) {
	const secret = "Bearer s3cr3t-t0ken-value"
	var mu sync.Mutex
	var problems []string
	check := func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		for k, want := range map[string]string{"Authorization": secret, "X-Tenant": "acme", "Origin": "https://app.example"} {
			if got := r.Header.Get(k); got != want {
				problems = append(problems, k+": "+got)
			}
		}
		if r.Host != "chat.example:8443" {
			problems = append(problems, "host: "+r.Host)
		}
		if r.URL.RequestURI() != "/socket?room=7&x=%20y" {
			problems = append(problems, "uri: "+r.URL.RequestURI())
		}
		if got := r.Header.Get("Sec-WebSocket-Protocol"); got != "v2.chat, v1.chat" {
			problems = append(problems, "protocols: "+got)
		}
	}
	addr := serveHTTP(t, nil, gorillaEcho(false, []string{"v1.chat"}, check))
	c := newClient(t, Options{
		Targets: []string{addr}, Hosts: []string{"chat.example:8443"}, RequestURIs: []string{"/socket?room=7&x=%20y"},
		Headers:      [][2]string{{"Authorization", secret}, {"X-Tenant", "acme"}},
		Subprotocols: []string{"v2.chat", "v1.chat"}, Origin: "https://app.example",
	})
	cr, er := connectRounds(t, c, 4, roundsParams{Rounds: 25, Payload: payloadOf(t, "random", 64)})
	if er.Failed != 0 {
		t.Fatalf("echo failed: %v", er.Errors)
	}
	if cr.Subprotocol != "v1.chat" {
		t.Errorf("subprotocol %q, want v1.chat", cr.Subprotocol)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("server saw: %v", problems)
	}
}

// TestSecretsNotInErrors: a server that refuses the request (401) fails
// the connections with reasons that never contain a header's value.
func TestSecretsNotInErrors(t *testing.T) {
	const secret = "s3cr3t-value-in-a-header"
	addr := serveHTTP(t, nil, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no: "+r.Header.Get("Authorization"), http.StatusUnauthorized) // even a server echoing it back
	})
	c := newClient(t, Options{Targets: []string{addr}, Headers: [][2]string{{"Authorization", secret}}, Subprotocols: []string{"a"}})
	cr, err := c.Connect(t.Context(), ConnectParams{Connections: 2, Concurrency: 2, Timeout: units.Duration(5 * time.Second), Retries: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cr.Errors["bad status 401"] != 2 || cr.Retried != 0 { // a refusal is not retried
		t.Errorf("errors %v, retried %d; want 2 x bad status 401, none retried", cr.Errors, cr.Retried)
	}
	for r := range cr.Errors {
		if strings.Contains(string(r), secret) {
			t.Errorf("reason %q contains the secret", r)
		}
	}
	_, err = New(Options{Targets: []string{"no-such-host.invalid:1"}, Headers: [][2]string{{"Authorization", secret}}})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("New error %v: want an error without the secret", err)
	}
}

func TestSubprotocolNotOffered(t *testing.T) {
	key := []byte("dGhlIHNhbXBsZSBub25jZQ==")
	accept := acceptFor(key)
	head := func(extra string) []byte {
		return []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + string(accept[:]) + "\r\n" + extra + "\r\n")
	}
	o := &offer{subprotocols: []string{"a", "b"}}
	for _, tc := range []struct {
		extra string
		want  string
		sub   int
	}{
		{"", "", -1},
		{"Sec-WebSocket-Protocol: b\r\n", "", 1},
		{"Sec-WebSocket-Protocol: c\r\n", "subprotocol not offered", -1},
		{"Sec-WebSocket-Protocol: a\r\nSec-WebSocket-Protocol: a\r\n", "subprotocol not offered", 0},
		{"Sec-WebSocket-Extensions: permessage-deflate\r\n", "unrequested extension", -1},
	} {
		neg, err := checkResponse(head(tc.extra), key, o)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want || (err == nil && neg.subprotocol != tc.sub) {
			t.Errorf("%q: got %q sub %d, want %q sub %d", tc.extra, got, neg.subprotocol, tc.want, tc.sub)
		}
	}
	// Offered compression, declined.
	_, err := checkResponse(head(""), key, &offer{compression: &pmdeflate.Params{}})
	if err == nil || err.Error() != string(ReasonDeclined) {
		t.Errorf("declined: %v, want %q", err, ReasonDeclined)
	}
}

// TestCompressionInterop: permessage-deflate against real libraries with
// chat-like text: negotiated, wire bytes under half of the payload both
// ways (each message the client sends compressed on its own), every echo
// intact (verified after inflation).
func TestCompressionInterop(t *testing.T) {
	testenv.Slow(t, "1 s: compression against every deflate server")
	servers := []struct {
		name  string
		start func(t testing.TB) string
	}{
		{"gorilla", func(t testing.TB) string { return serveHTTP(t, nil, gorillaEcho(true, nil, nil)) }},
		{"gws", func(t testing.TB) string { return startGwsDeflate(t, nil, true, false) }},
		{"gws takeover", func(t testing.TB) string { return startGwsDeflate(t, nil, true, true) }},
		{"nhooyr", func(t testing.TB) string { return startNhooyrDeflate(t, false) }},
		{"nhooyr takeover", func(t testing.TB) string { return startNhooyrDeflate(t, true) }},
		{"nbio_nonblocking", startNbioDeflate},
	}
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			addr := s.start(t)
			c := newClient(t, Options{Targets: []string{addr}, Loops: 2, NoDelay: true, Compression: &pmdeflate.Params{}})
			cr, er := connectRounds(t, c, 20, roundsParams{Rounds: 100, Payload: payloadOf(t, "text", 1024), Text: true, Compress: true})
			if er.Success != 2000 || er.Failed != 0 {
				t.Fatalf("echo %d ok, %d failed (%v)", er.Success, er.Failed, er.Errors)
			}
			if !strings.HasPrefix(cr.Extensions, "permessage-deflate") {
				t.Errorf("extensions %q, want permessage-deflate", cr.Extensions)
			}
			// What the server compressed.
			ratio := float64(er.WireIn) / float64(er.PayloadIn)
			if er.PayloadIn != 2000*1024 || ratio >= 0.5 {
				t.Errorf("payload in %d bytes (want %d), wire %d: ratio %.3f, want < 0.5", er.PayloadIn, 2000*1024, er.WireIn, ratio)
			}
			// What the client compressed, each message on its own (as the
			// kinds do: scenarios/echo's TestEchoCompressed and
			// scenarios/rate's TestRateCompressed check their own frames).
			sent := float64(er.WireOut) / float64(er.PayloadOut)
			if er.PayloadOut != 2000*1024 || sent >= 0.5 {
				t.Errorf("payload out %d bytes (want %d), wire %d: ratio %.3f, want < 0.5", er.PayloadOut, 2000*1024, er.WireOut, sent)
			}
			t.Logf("%s: %s, wire/payload received %.3f, sent %.3f", s.name, cr.Extensions, ratio, sent)
		})
	}
}

// TestCompressionDeclined: asked, not negotiated: every connection fails
// with that reason; nothing is measured uncompressed.
func TestCompressionDeclined(t *testing.T) {
	addr := startGwsDeflate(t, nil, false, false)
	c := newClient(t, Options{Targets: []string{addr}, Compression: &pmdeflate.Params{}})
	cr, err := c.Connect(t.Context(), ConnectParams{Connections: 5, Concurrency: 5, Timeout: units.Duration(5 * time.Second), Retries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cr.Success != 0 || cr.Errors[ReasonDeclined] != 5 {
		t.Fatalf("success %d errors %v, want 5 x %q", cr.Success, cr.Errors, ReasonDeclined)
	}
}

// TestTLSCompression: both at once, through gws behind TLS.
func TestTLSCompression(t *testing.T) {
	cfg, caFile := runCA(t, 0)
	addr := startGwsDeflate(t, cfg, true, true)
	c := newClient(t, Options{Targets: []string{addr}, TLS: &TLSOptions{CAFile: caFile}, Compression: &pmdeflate.Params{}})
	cr, er := connectRounds(t, c, 10, roundsParams{Rounds: 100, Payload: payloadOf(t, "text", 4096)})
	if er.Success != 1000 || er.Failed != 0 || cr.TLSVersion != "TLS 1.3" || cr.Extensions == "" {
		t.Fatalf("echo %d/%d %v, tls %q ext %q", er.Success, er.Failed, er.Errors, cr.TLSVersion, cr.Extensions)
	}
}

// TestTLSPhases: the core's phases over TLS with compression: large
// messages (many records, partial writes), pings, holds. The kinds test
// their own over TLS (scenarios/rate's TestRateTLSCompressed,
// scenarios/hold's TestHoldTLSPings).
func TestTLSPhases(t *testing.T) {
	cfg, caFile := runCA(t, 0)
	addr := startGwsDeflate(t, cfg, true, true)
	c := newClient(t, Options{Targets: []string{addr}, Loops: 2, TLS: &TLSOptions{CAFile: caFile}, Compression: &pmdeflate.Params{}})
	cr, er := connectRounds(t, c, 8, roundsParams{Rounds: 2, Payload: payloadOf(t, "text", 1<<20)})
	if er.Success != 16 || er.Failed != 0 || cr.Extensions == "" {
		t.Fatalf("1 MiB echoes: %d ok, %d failed %v", er.Success, er.Failed, er.Errors)
	}
	// 8 MiB of random bytes: more than a socket takes at once, so the
	// sealed records wait for EPOLLOUT in pieces. One connection of a
	// client of its own: what is checked is the bytes, and compressing
	// 8 MiB on both sides costs a second of CPU per connection.
	// (A generous timeout: that is slow on a busy host.)
	one := newClient(t, Options{Targets: []string{addr}, TLS: &TLSOptions{CAFile: caFile}, Compression: &pmdeflate.Params{}})
	if _, er := connectRounds(t, one, 1, roundsParams{Rounds: 1, Payload: payloadOf(t, "random", 8<<20), Timeout: 8 * time.Minute}); er.Success != 1 || er.Failed != 0 {
		t.Fatalf("8 MiB random echo: %d ok, %d failed %v", er.Success, er.Failed, er.Errors)
	}
	hr, err := idle(t.Context(), c, 300*time.Millisecond, true, nil)
	if err != nil || hr.Alive != hr.Conns || hr.Pongs == 0 {
		t.Fatalf("hold: %+v %v", hr, err)
	}
	if c.Conns() != 8 {
		t.Errorf("%d connections open at the end, want 8", c.Conns())
	}
}

// TestTLSServerName: SNI is the Host's name (or tls.server_name); an IP
// address sends none and is verified against the certificate's IPs.
func TestTLSServerName(t *testing.T) {
	cfg, caFile := runCA(t, 0)
	var mu sync.Mutex
	var seen []string
	base := cfg.Clone()
	cfg.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		mu.Lock()
		seen = append(seen, h.ServerName)
		mu.Unlock()
		return base, nil
	}
	addr := serveHTTP(t, cfg, gorillaEcho(false, nil, nil))
	_, port, _ := net.SplitHostPort(addr)
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"ip", Options{Targets: []string{addr}, TLS: &TLSOptions{CAFile: caFile}}, ""},
		{"host", Options{Targets: []string{addr}, Hosts: []string{"localhost:" + port}, TLS: &TLSOptions{CAFile: caFile}}, "localhost"},
		{"server_name", Options{Targets: []string{addr}, TLS: &TLSOptions{CAFile: caFile, ServerName: "localhost"}}, "localhost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			c := newClient(t, tc.opts)
			cr, err := c.Connect(t.Context(), ConnectParams{Connections: 2, Concurrency: 2, Timeout: units.Duration(5 * time.Second), Retries: -1}, nil)
			if err != nil || cr.Success != 2 {
				t.Fatalf("connect %+v %v", cr.Errors, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 2 || seen[0] != tc.want || seen[1] != tc.want {
				t.Errorf("server saw SNI %q, want 2 x %q", seen, tc.want)
			}
		})
	}
	// A name the certificate does not hold fails verification.
	c := newClient(t, Options{Targets: []string{addr}, TLS: &TLSOptions{CAFile: caFile, ServerName: "example.com"}})
	cr, err := c.Connect(t.Context(), ConnectParams{Connections: 1, Concurrency: 1, Timeout: units.Duration(5 * time.Second), Retries: -1}, nil)
	if err != nil || cr.Errors["tls: x509: certificate is not valid for the server name"] != 1 {
		t.Errorf("wrong name: %v %v", cr.Errors, err)
	}
}

// FuzzCheckResponse: any response head is accepted or refused with a
// reason, never a panic, and a negotiated subprotocol is one offered.
func FuzzCheckResponse(f *testing.F) {
	key := []byte("dGhlIHNhbXBsZSBub25jZQ==")
	accept := acceptFor(key)
	ok := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + string(accept[:]) + "\r\n"
	f.Add([]byte(ok + "\r\n"))
	f.Add([]byte(ok + "Sec-WebSocket-Protocol: b\r\nSec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=10\r\n\r\n"))
	f.Add([]byte(ok + "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\nSec-WebSocket-Extensions: x\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 401 Unauthorized\r\n\r\n"))
	o := &offer{subprotocols: []string{"a", "b"}, compression: &pmdeflate.Params{}}
	f.Fuzz(func(t *testing.T, head []byte) {
		neg, err := checkResponse(head, key, o)
		if err == nil && (neg.subprotocol < -1 || neg.subprotocol >= len(o.subprotocols) || !neg.deflate) {
			t.Fatalf("accepted %q with %+v", head, neg)
		}
	})
}

// TestTLSServerRestartedWithAnotherCertificate: a server that comes back
// mid-run with another certificate chain (as after a restart: its
// connections dropped, then new handshakes) is verified again — the
// chain-verdict cache (wstls.Verifier) reuses a verdict only for the same
// bytes — so an untrusted or misnamed chain fails every connection after
// it, and a new trusted one is accepted.
func TestTLSServerRestartedWithAnotherCertificate(t *testing.T) {
	trusted, err := wstls.NewCA("trusted", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := wstls.NewCA("other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, wstls.PEM("CERTIFICATE", trusted.DER), 0o644); err != nil {
		t.Fatal(err)
	}
	issue := func(ca *wstls.CA, name string) *tls.Certificate {
		der, key, err := ca.Issue(x509.Certificate{DNSNames: []string{name}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(wstls.PEM("CERTIFICATE", der), wstls.PEM("PRIVATE KEY", key))
		if err != nil {
			t.Fatal(err)
		}
		return &cert
	}
	var cur atomic.Pointer[tls.Certificate]
	cur.Store(issue(trusted, "localhost"))
	srv := testserver.Start(t, testserver.Options{TLS: &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cur.Load(), nil },
	}})
	c := newClient(t, Options{Targets: []string{srv.Addr()}, TLS: &TLSOptions{CAFile: caFile, ServerName: "localhost"}})
	steps := []struct {
		name    string
		cert    *tls.Certificate // the server's from now on; nil = the same
		failure Reason           // every connection fails with it; "" = all open
	}{
		{"first chain", nil, ""},
		{"same chain again", nil, ""},
		{"back with an untrusted chain", issue(other, "localhost"), "tls: x509: certificate signed by unknown authority"},
		{"back with a trusted chain for another name", issue(trusted, "example.com"), "tls: x509: certificate is not valid for the server name"},
		{"back with a new trusted chain", issue(trusted, "localhost"), ""},
	}
	open := 0
	for _, st := range steps {
		if st.cert != nil {
			srv.Drop(open) // the restart ends the server's connections
			cur.Store(st.cert)
		}
		cr, err := c.Connect(t.Context(), ConnectParams{Connections: 3, Concurrency: 3, Timeout: units.Duration(5 * time.Second), Retries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case st.failure == "" && cr.Success != 3:
			t.Fatalf("%s: %d of 3 opened, errors %v", st.name, cr.Success, cr.Errors)
		case st.failure != "" && (cr.Failed != 3 || cr.Errors[st.failure] != 3):
			t.Fatalf("%s: failed %d, errors %v; want 3 x %q", st.name, cr.Failed, cr.Errors, st.failure)
		}
		open += int(cr.Success)
	}
}
