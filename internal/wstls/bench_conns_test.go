package wstls

// The candidates BenchmarkEcho and BenchmarkProtocol compare (bench_test.go
// says what they measure): each one's connection as the loop sees it, and
// the raw socket calls and CPU clocks the loop uses.

import (
	"crypto/tls"
	"net"
	"syscall"
	"testing"
	"time"
	"unsafe"

	llibtls "github.com/lesismal/llib/std/crypto/tls"
	"golang.org/x/sys/unix"
)

// benchConn is one client connection's protocol layer as the loop sees
// it.
type benchConn interface {
	seal(dst, plain []byte) []byte
	feed(ct []byte)
	read(dst []byte) int // plaintext bytes available now; 0 = needs more input
}

// candidate makes benchConns.
type candidate struct {
	name    string
	version uint16 // 0: plain TCP
	dial    func(tb testing.TB, srv *testServer) (benchConn, net.Conn)
}

func candidates() []candidate {
	var cs []candidate
	cs = append(cs, candidate{name: "plain", dial: dialPlain})
	for _, v := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		vn := map[uint16]string{tls.VersionTLS13: "1.3", tls.VersionTLS12: "1.2"}[v]
		cs = append(cs,
			candidate{name: "wstls-" + vn, version: v, dial: dialSess(false)},
			candidate{name: "cryptotls-" + vn, version: v, dial: dialSess(true)},
			candidate{name: "llib-" + vn, version: v, dial: dialLlib(v)},
		)
	}
	return cs
}

type plainConn struct{ in []byte }

func (p *plainConn) seal(dst, plain []byte) []byte { return append(dst, plain...) }
func (p *plainConn) feed(ct []byte)                { p.in = ct }
func (p *plainConn) read(dst []byte) int {
	n := copy(dst, p.in)
	p.in = p.in[n:]
	if len(p.in) == 0 {
		p.in = nil
	}
	return n
}

func dialPlain(tb testing.TB, srv *testServer) (benchConn, net.Conn) {
	c, err := net.Dial("tcp", srv.addr())
	if err != nil {
		tb.Fatal(err)
	}
	return &plainConn{}, c
}

type sessConn struct{ s *Session }

func (c sessConn) seal(dst, plain []byte) []byte {
	out, err := c.s.Seal(dst, plain)
	if err != nil {
		panic(err)
	}
	return out
}
func (c sessConn) feed(ct []byte) { c.s.Feed(ct) }
func (c sessConn) read([]byte) int {
	p, err := c.s.Next()
	if err != nil {
		panic(err)
	}
	return len(p)
}

func dialSess(noFast bool) func(testing.TB, *testServer) (benchConn, net.Conn) {
	return func(tb testing.TB, srv *testServer) (benchConn, net.Conn) {
		c, err := net.Dial("tcp", srv.addr())
		if err != nil {
			tb.Fatal(err)
		}
		srv.mu.Lock()
		if srv.cfg == nil { // one config for all connections, as the client has
			cfg, err := ClientConfig(ClientOptions{CAFile: srv.ca.CAFile, ServerName: "localhost"})
			if err != nil {
				tb.Fatal(err)
			}
			srv.cfg = cfg
		}
		cfg := srv.cfg
		srv.mu.Unlock()
		s := NewClient(cfg)
		s.noFast = noFast
		if err := handshake(s, c); err != nil {
			tb.Fatal(err)
		}
		return sessConn{s}, c
	}
}

// llibMem is llib's transport after the handshake: writes are collected.
type llibMem struct {
	net.Conn
	out []byte
}

func (m *llibMem) Write(p []byte) (int, error) {
	m.out = append(m.out, p...)
	return len(p), nil
}

type llibConn struct {
	c *llibtls.Conn
	m *llibMem
}

func (c *llibConn) seal(dst, plain []byte) []byte {
	c.m.out = dst
	if _, err := c.c.Write(plain); err != nil {
		panic(err)
	}
	out := c.m.out
	c.m.out = nil
	return out
}

func (c *llibConn) feed(ct []byte) {
	if _, err := c.c.Append(ct); err != nil {
		panic(err)
	}
}

func (c *llibConn) read(dst []byte) int {
	n, err := c.c.Read(dst)
	if err != nil {
		panic(err)
	}
	return n
}

// dialLlib handshakes with llib on the blocking socket (llib's client
// handshake is blocking; nbio dials the same way), then switches the
// conn to non-blocking mode over an in-memory transport.
func dialLlib(v uint16) func(testing.TB, *testServer) (benchConn, net.Conn) {
	return func(tb testing.TB, srv *testServer) (benchConn, net.Conn) {
		c, err := net.Dial("tcp", srv.addr())
		if err != nil {
			tb.Fatal(err)
		}
		cfg := &llibtls.Config{InsecureSkipVerify: true, MinVersion: v, MaxVersion: v}
		tc := llibtls.NewConn(c, cfg, true, false)
		if err := tc.Handshake(); err != nil {
			tb.Fatal(err)
		}
		m := &llibMem{Conn: c}
		tc.ResetConn(m, true)
		return &llibConn{c: tc, m: m}, c
	}
}

// rawFD returns a non-blocking duplicate of c's socket and closes c, so
// that the loop owns the only descriptor.
func rawFD(tb testing.TB, c net.Conn) int {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		tb.Fatal(err)
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.Dup(int(s)) }); err != nil || derr != nil {
		tb.Fatal(err, derr)
	}
	c.Close()
	if err := unix.SetNonblock(fd, true); err != nil {
		tb.Fatal(err)
	}
	return fd
}

func rawRead(fd int, b []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	return int(r), e
}

func rawWrite(fd int, b []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	return int(r), e
}

// threadCPU is the calling thread's CPU clock.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Duration(ts.Nano())
}

// processCPU is the process's CPU time (user + system), servers included.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchServer starts the echo server a candidate talks to.
func benchServer(tb testing.TB, c candidate) *testServer {
	return newTestServer(tb, c.version == 0, func(cfg *tls.Config) {
		cfg.MinVersion, cfg.MaxVersion = c.version, c.version
	})
}
