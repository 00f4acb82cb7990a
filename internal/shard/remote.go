package shard

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/wsplan/wsplan/sysctl"
)

// Defaults of a remote shard's link.
const (
	// LinkTimeout is how long either side of a remote link waits for a
	// line before it decides the link is gone: the orchestrator sends a
	// heartbeat every LinkTimeout/4, a shard a progress line every
	// ProgressInterval while a phase runs.
	LinkTimeout = 5 * time.Second
	// HandshakeTimeout bounds a remote peer's TLS handshake and first line.
	HandshakeTimeout = 10 * time.Second
	// DefaultIdleExit is how long `wsplan shard --listen` waits for an
	// orchestrator, at start and after one leaves, before it exits
	// (plan: client.idle_exit).
	DefaultIdleExit = 30 * time.Second
)

// ErrIdle is returned by Listen when no orchestrator came for IdleExit.
var ErrIdle = errors.New("no orchestrator connected")

// ListenSpec configures the shard side of remote shards.
type ListenSpec struct {
	Listener net.Listener // plain TCP; Listen speaks TLS over it
	TLS      *tls.Config  // ShardTLS: the run's shard certificate, client certificates required
	// IdleExit is how long to wait for an orchestrator at start and after
	// one leaves (the orchestrator's open request may set the latter);
	// 0 = DefaultIdleExit, < 0 = forever.
	IdleExit time.Duration
	// Link is the link timeout; 0 = LinkTimeout.
	Link time.Duration
	// Logf receives one line per orchestrator accepted, refused or gone.
	Logf func(format string, args ...any)
	// Host reads the host's facts for the hello reply; nil = sysctl.ReadHostFacts.
	Host func() sysctl.HostFacts
	// Loops is the client's event loops when the orchestrator asks for 0.
	Loops int
}

// Listen serves one orchestrator at a time over mutually authenticated
// TLS: a peer without a certificate of the run's CA, a plain-TCP peer and
// a second orchestrator while one is connected are refused and logged.
// A session runs Serve over the link; when the link drops (EOF, a reset,
// or no line for Link), the running phase stops and every connection of
// the client closes. Listen returns ErrIdle after IdleExit without an
// orchestrator, or nil when ctx ends.
func Listen(ctx context.Context, s ListenSpec) error {
	s = s.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	l := &listener{spec: s, events: make(chan time.Duration)}
	conns := make(chan net.Conn)
	acceptErr := make(chan error, 1)
	go accept(ctx, s.Listener, conns, acceptErr)
	defer func() {
		s.Listener.Close()
		cancel()
		l.wg.Wait()
	}()
	idle := newIdleTimer(s.IdleExit)
	defer idle.reset(0)
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-acceptErr:
			return err
		case <-idle.C():
			return ErrIdle
		case d := <-l.events:
			if d == 0 {
				d = s.IdleExit
			}
			idle.reset(d)
		case c := <-conns:
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				l.serve(ctx, c)
			}()
		}
	}
}

func (s ListenSpec) withDefaults() ListenSpec {
	if s.IdleExit == 0 {
		s.IdleExit = DefaultIdleExit
	}
	if s.Link == 0 {
		s.Link = LinkTimeout
	}
	if s.Logf == nil {
		s.Logf = func(string, ...any) {}
	}
	if s.Host == nil {
		s.Host = func() sysctl.HostFacts {
			// A fact that cannot be read stays zero and its check is skipped.
			h, _ := sysctl.ReadHostFacts(sysctl.FS{}, "")
			return h
		}
	}
	return s
}

// accept hands every accepted connection to conns until the listener
// fails (its error on acceptErr) or ctx ends.
func accept(ctx context.Context, ln net.Listener, conns chan<- net.Conn, acceptErr chan<- error) {
	for {
		c, err := ln.Accept()
		if err != nil {
			acceptErr <- err
			return
		}
		select {
		case conns <- c:
		case <-ctx.Done():
			c.Close()
			return
		}
	}
}

// idleTimer runs between sessions: Listen exits when it fires.
type idleTimer struct{ t *time.Timer }

func newIdleTimer(d time.Duration) *idleTimer {
	it := &idleTimer{}
	it.reset(d)
	return it
}

// reset stops the timer and, for d > 0, starts it again with d.
func (it *idleTimer) reset(d time.Duration) {
	if it.t != nil {
		it.t.Stop()
		it.t = nil
	}
	if d > 0 {
		it.t = time.NewTimer(d)
	}
}

// C is the timer's channel; nil (never ready) while it is stopped.
func (it *idleTimer) C() <-chan time.Time {
	if it.t == nil {
		return nil
	}
	return it.t.C
}

// listener is Listen's state shared with its connections' goroutines.
type listener struct {
	spec ListenSpec
	wg   sync.WaitGroup
	mu   sync.Mutex
	busy string // the connected orchestrator's address
	// Sessions report their start (-1) and end (the idle_exit asked
	// for, 0 = spec.IdleExit); the idle timer runs between them.
	events chan time.Duration
}

// serve answers one accepted connection: a refusal, or a whole session.
func (l *listener) serve(ctx context.Context, c net.Conn) {
	s := l.spec
	peer := c.RemoteAddr().String()
	tc, err := handshake(ctx, c, s.TLS)
	if err != nil {
		s.Logf("refused %s: %v", peer, err)
		c.Close()
		return
	}
	l.mu.Lock()
	other := l.busy
	if other == "" {
		l.busy = peer
	}
	l.mu.Unlock()
	if other != "" {
		s.Logf("refused %s: orchestrator %s is connected", peer, other)
		_ = tc.SetWriteDeadline(time.Now().Add(s.Link))
		// Best effort: the refusal is logged here either way.
		_ = json.NewEncoder(tc).Encode(Reply{Op: "refused", Err: "busy: orchestrator " + other + " is connected"})
		tc.Close()
		return
	}
	s.Logf("orchestrator %s connected", peer)
	l.report(ctx, -1)
	d, err := session(ctx, tc, s)
	// Free before the close: an orchestrator that saw the session end
	// (a preflight's probe, then the run's dial) is not refused as busy.
	l.mu.Lock()
	l.busy = ""
	l.mu.Unlock()
	tc.Close()
	if err != nil {
		s.Logf("orchestrator %s gone: %v", peer, err)
	} else {
		s.Logf("orchestrator %s closed the session", peer)
	}
	l.report(ctx, d)
}

func (l *listener) report(ctx context.Context, d time.Duration) {
	select {
	case l.events <- d:
	case <-ctx.Done():
	}
}

// handshake runs the server side of the TLS handshake within
// HandshakeTimeout; it fails for a peer without a valid client certificate.
func handshake(ctx context.Context, c net.Conn, cfg *tls.Config) (*tls.Conn, error) {
	tc := tls.Server(c, cfg)
	hctx, cancel := context.WithTimeout(ctx, HandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		return nil, err
	}
	return tc, nil
}

// session answers one orchestrator: its open (or probe) request, then
// Serve until the link ends. It returns the idle_exit the orchestrator
// asked for.
func session(ctx context.Context, tc *tls.Conn, s ListenSpec) (time.Duration, error) {
	link := &linkConn{Conn: tc, timeout: HandshakeTimeout}
	in := bufio.NewReader(link)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return 0, fmt.Errorf("first line: %w", err)
	}
	recv := time.Now()
	var r Request
	if err := json.Unmarshal(line, &r); err != nil || (r.Op != "open" && r.Op != "probe") {
		return 0, fmt.Errorf("want an open request, got %q", line)
	}
	link.timeout = s.Link
	h := s.Host()
	enc := json.NewEncoder(link)
	if err := enc.Encode(Reply{Op: "hello", Pid: os.Getpid(), Host: &h, Delay: time.Since(recv)}); err != nil {
		return 0, err
	}
	if r.Op == "probe" || r.Options == nil {
		return r.IdleExit, nil
	}
	opts := *r.Options
	if opts.Loops <= 0 {
		opts.Loops = max(1, s.Loops)
	}
	err = Serve(ctx, opts, in, link)
	if err != nil {
		// Best effort: the orchestrator may still be reading (a client
		// that could not open); the error is logged either way.
		_ = enc.Encode(Reply{Op: "error", Err: err.Error()})
	}
	return r.IdleExit, err
}

// linkConn is a remote link with a deadline on every read and write: a
// peer that stops sending (heartbeats or progress) or stops reading is
// gone after timeout, even when its host vanished without a reset.
type linkConn struct {
	net.Conn
	timeout time.Duration
}

func (l *linkConn) Read(p []byte) (int, error) {
	if err := l.Conn.SetReadDeadline(time.Now().Add(l.timeout)); err != nil {
		return 0, err
	}
	return l.Conn.Read(p)
}

func (l *linkConn) Write(p []byte) (int, error) {
	if err := l.Conn.SetWriteDeadline(time.Now().Add(l.timeout)); err != nil {
		return 0, err
	}
	return l.Conn.Write(p)
}
