package servers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/frameworks"
)

// listen opens a TCP listener on addr (host:port) with SO_REUSEADDR and
// SO_REUSEPORT set, so several server processes (or a restarted one) can
// bind the same port, as the published benchmark's servers did.
func listen(addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: reusePort}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("listen %s: %w (a socket without SO_REUSEPORT, or another user's, holds the port: stop it or choose other ports)", addr, err)
	}
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return ln, nil
}

// reusePort is a net.ListenConfig.Control func setting SO_REUSEADDR and
// SO_REUSEPORT on the socket before bind.
func reusePort(network, address string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); serr != nil {
			return
		}
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	if err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("setsockopt %s: %w", address, serr)
	}
	return nil
}

// listenAll opens one listener per address with listen and wraps each so
// accepted connections get TCP_NODELAY set to nodelay. On error it closes
// the listeners it already opened.
func listenAll(addrs []string, nodelay bool) ([]net.Listener, error) {
	if len(addrs) == 0 {
		return nil, errors.New("no listen address")
	}
	lns := make([]net.Listener, 0, len(addrs))
	for _, a := range addrs {
		ln, err := listen(a)
		if err != nil {
			closeListeners(lns)
			return nil, err
		}
		lns = append(lns, noDelayListener{Listener: ln, noDelay: nodelay})
	}
	return lns, nil
}

// acceptLoop accepts connections on ln and hands each to handle until ln is
// closed or handle returns false. Other accept errors (EMFILE, ENFILE,
// ECONNABORTED) are retried after a pause growing from 5 ms to 1 s, as
// net/http does, so a benchmark hitting the fd limit does not lose its
// listener.
func acceptLoop(ln net.Listener, handle func(net.Conn) bool) {
	var pause time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			time.Sleep(pause)
			continue
		}
		pause = 0
		if !handle(conn) {
			return
		}
	}
}

// listenCfg is listenAll on cfg.Addrs with cfg's nodelay option, each
// listener serving TLS with cfg.TLS when it is set: the handshake runs on
// the first Read or Write of an accepted connection, in the goroutine that
// serves it.
func listenCfg(cfg frameworks.Config) ([]net.Listener, error) {
	lns, err := listenAll(cfg.Addrs, cfg.Bool("nodelay"))
	if err != nil || cfg.TLS == nil {
		return lns, err
	}
	for i, ln := range lns {
		lns[i] = tls.NewListener(ln, cfg.TLS)
	}
	return lns, nil
}

// serveEach runs serve on every listener in a goroutine of its own,
// counted in wg. serve returns once its listener is closed; an error
// before that (an accept error it does not retry) ends that listener
// only, so it is dropped.
func serveEach(lns []net.Listener, wg *sync.WaitGroup, serve func(net.Listener) error) {
	for _, ln := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = serve(ln)
		}()
	}
}

func closeListeners(lns []net.Listener) {
	for _, ln := range lns {
		// A listener already closed by its server returns an error here;
		// there is nothing left to release either way.
		_ = ln.Close()
	}
}

// noDelayListener sets TCP_NODELAY on every accepted TCP connection. Go
// enables it by default; the explicit call makes nodelay=false work too.
type noDelayListener struct {
	net.Listener
	noDelay bool
}

func (l noDelayListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			return c, nil
		}
		if err := tc.SetNoDelay(l.noDelay); err != nil {
			// The peer is already gone (reset before setsockopt); that is
			// the connection's failure, not the listener's, and an error
			// here would stop net/http's Serve.
			c.Close()
			continue
		}
		return c, nil
	}
}

// tracker remembers the connections a server has taken over from its HTTP
// stack (hijacked connections are no longer the HTTP server's to close) and
// the goroutines serving them, so Close can close the connections and wait
// for those goroutines to return. A connection is anything whose Close ends
// it: a net.Conn, or a library's connection type when it hides the net.Conn.
type tracker struct {
	mu     sync.Mutex
	conns  map[io.Closer]struct{}
	closed bool
	wg     sync.WaitGroup
}

// add registers c and one serving goroutine. It returns false, having
// closed c, when the server is already closing; the caller must then return
// without calling done. c must be comparable (a pointer or an interface
// holding one).
func (t *tracker) add(c io.Closer) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return false
	}
	if t.conns == nil {
		t.conns = map[io.Closer]struct{}{}
	}
	t.conns[c] = struct{}{}
	t.wg.Add(1)
	return true
}

// done closes c and unregisters it; call it once per successful add.
func (t *tracker) done(c io.Closer) {
	c.Close()
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	t.wg.Done()
}

// closeAll refuses new connections, closes every registered one and waits
// for their goroutines to call done.
func (t *tracker) closeAll() {
	t.mu.Lock()
	t.closed = true
	conns := make([]io.Closer, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	// Close outside the lock: a library's Close may wait for its own
	// goroutines, which may be calling done.
	for _, c := range conns {
		c.Close()
	}
	t.wg.Wait()
}
