package wstls

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// testServer is a crypto/tls echo server on loopback, one goroutine per
// connection, recording the SNI of each ClientHello.
type testServer struct {
	ln    net.Listener
	ca    RunCA
	cfg   *tls.Config // the benchmarks' shared client config
	greet []byte
	mu    sync.Mutex
	sni   []string
	conns []net.Conn
	wg    sync.WaitGroup
}

// newTestServer starts an echo server with a run CA made in a temp dir;
// tweak adjusts its config (versions, suites). plain serves TCP without TLS.
func newTestServer(t testing.TB, plain bool, tweak func(*tls.Config)) *testServer {
	t.Helper()
	return newGreetServer(t, plain, nil, tweak)
}

// newGreetServer is newTestServer whose server writes greet on each
// connection as soon as the handshake is done, before echoing.
func newGreetServer(t testing.TB, plain bool, greet []byte, tweak func(*tls.Config)) *testServer {
	t.Helper()
	ca, err := NewRunCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := &testServer{ca: ca, greet: greet}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !plain {
		cfg, err := ca.ServerConfig()
		if err != nil {
			t.Fatal(err)
		}
		cfg.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			srv.mu.Lock()
			srv.sni = append(srv.sni, h.ServerName)
			srv.mu.Unlock()
			return nil, nil
		}
		if tweak != nil {
			tweak(cfg)
		}
		ln = tls.NewListener(ln, cfg)
	}
	srv.ln = ln
	srv.wg.Add(1)
	go srv.accept()
	t.Cleanup(srv.close)
	return srv
}

func (srv *testServer) accept() {
	defer srv.wg.Done()
	for {
		c, err := srv.ln.Accept()
		if err != nil {
			return
		}
		srv.mu.Lock()
		srv.conns = append(srv.conns, c)
		srv.mu.Unlock()
		srv.wg.Add(1)
		go func() {
			defer srv.wg.Done()
			defer c.Close()
			if len(srv.greet) > 0 {
				if _, err := c.Write(srv.greet); err != nil {
					return
				}
			}
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// dropConns closes the server side of every connection and waits for
// their goroutines, leaving the listener open.
func (srv *testServer) dropConns() {
	srv.mu.Lock()
	for _, c := range srv.conns {
		c.Close()
	}
	srv.conns = nil
	srv.mu.Unlock()
}

func (srv *testServer) close() {
	srv.ln.Close()
	srv.dropConns()
	srv.wg.Wait()
}

func (srv *testServer) addr() string { return srv.ln.Addr().String() }

func (srv *testServer) snis() []string {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return append([]string(nil), srv.sni...)
}

// handshake runs s's handshake over a blocking conn, as a loop would:
// write what Handshake returns, hand in what the socket gives.
func handshake(s *Session, c net.Conn) error { return handshakeChunks(s, c, 4096) }

// handshakeChunks is handshake reading at most chunk bytes at a time.
func handshakeChunks(s *Session, c net.Conn, chunk int) error {
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	defer c.SetDeadline(time.Time{})
	out, done, err := s.Handshake(nil, nil)
	buf := make([]byte, chunk)
	for {
		if len(out) > 0 {
			if _, werr := c.Write(out); werr != nil && err == nil {
				err = werr
			}
		}
		if err != nil || done {
			if err != nil {
				s.Abort()
			}
			return err
		}
		n, rerr := c.Read(buf)
		if rerr != nil {
			s.Abort()
			return rerr
		}
		out, done, err = s.Handshake(out[:0], buf[:n])
	}
}

// echo sends msg through s and reads the echo back, handing the session
// the socket's bytes in pieces of at most chunk bytes.
func echo(s *Session, c net.Conn, msg []byte, chunk int) error {
	ct, err := s.Seal(nil, msg)
	if err != nil {
		return err
	}
	if _, err := c.Write(ct); err != nil {
		return err
	}
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	var got []byte
	buf := make([]byte, chunk)
	for len(got) < len(msg) {
		n, err := c.Read(buf)
		if err != nil {
			return err
		}
		s.Feed(buf[:n])
		for {
			p, err := s.Next()
			if err != nil {
				return err
			}
			if p == nil {
				break
			}
			got = append(got, p...)
		}
	}
	if !bytes.Equal(got, msg) {
		return errors.New("echo differs")
	}
	return nil
}

// dialSession dials srv and completes a handshake with cfg.
func dialSession(t testing.TB, srv *testServer, cfg *tls.Config, noFast bool) (*Session, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := NewClient(cfg)
	s.noFast = noFast
	if err := handshake(s, c); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return s, c
}

// clientConfig trusts srv's run CA.
func clientConfig(t testing.TB, srv *testServer, resume bool) *tls.Config {
	t.Helper()
	cfg, err := ClientConfig(ClientOptions{CAFile: srv.ca.CAFile, ServerName: "localhost", SessionResumption: resume})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
