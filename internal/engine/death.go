package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/plan"
)

// A url: server without pid: is blind to the engine: no process to
// watch. Its death still shows, from the client's side: most of the
// connections open end at once, closed or reset by the server (the
// kernel's doing when a process dies), and a new connection is refused.
// A phase against such a server keeps a blindWatch; when the phase ends
// with both signs, its row says "the server appears to have died" and the
// phases after it are skipped, as for a death the engine saw.

// deathDial is how long the fresh connection that tells a dead server
// from a live one may take.
const deathDial = time.Second

// peerCloser is a Driver that counts the connections the server closed or
// reset (client.Client, shard.Group).
type peerCloser interface {
	PeerCloses() client.PeerCloses
}

// blindWatch is what the phases against a url: server keep to tell at
// each one's end whether the server appears to have died, when the
// engine cannot see its process.
type blindWatch struct {
	addrs []string   // the server's host:ports, dialed to see whether it still listens
	pc    peerCloser // nil: the driver counts no closes
	// seen is the closes counted at the end of the last phase (none
	// before the first): a death between two phases counts in the next.
	seen client.PeerCloses
	open int // connections open at the phase's start

	mu   sync.Mutex
	gone string // what the phase's own dial (Env.ServerGone) found; "" = nothing
}

// newBlindWatch returns the watch of srv's phases, nil for a server
// wsplan started (it watches its process).
func newBlindWatch(srv plan.Server, drv Driver) *blindWatch {
	if len(srv.Targets) == 0 {
		return nil
	}
	w := &blindWatch{}
	for _, t := range srv.Targets {
		w.addrs = append(w.addrs, t.Addr)
	}
	w.pc, _ = drv.(peerCloser)
	return w
}

// begin readies w for a phase against proc, open connections open; it
// reports whether the phase is blind (the engine cannot see the server's
// process: no pid:, or none since a restart).
func (w *blindWatch) begin(proc serverProc, open int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.open, w.gone = open, ""
	if _, blind := current(proc).(running); !blind {
		if w.pc != nil {
			w.seen = w.pc.PeerCloses() // a later blind phase counts from here
		}
		return false
	}
	return true
}

// serverGone is Env.ServerGone for a blind server: a phase that dials
// the server itself asks it when a connection failed. The server is gone
// when a fresh connection is refused (or times out), dialed again until
// wait has passed (a dying process's connections may end a moment before
// its listener); a restart that failed (proc) says so first, and one in
// progress is no death.
func (w *blindWatch) serverGone(proc serverProc) func(time.Duration) string {
	return func(wait time.Duration) string {
		if why := exitWithin(proc, 0); why != "" || proc.Stopping() {
			return why
		}
		how := ""
		for deadline := time.Now().Add(wait); ; time.Sleep(exitPoll) {
			if how = newConns(context.Background(), w.addrs, deathDial); how != "" || !time.Now().Before(deadline) {
				break
			}
		}
		if how == "" {
			return ""
		}
		why := "appears to have died (new connections " + how + ")"
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.gone == "" {
			w.gone = why
		}
		return why
	}
}

// died returns why the server appears to have died during the phase, ""
// when nothing says so: the phase's own dial found it gone, or most of
// the connections were closed by the server within client.PeerWindow and
// a new one fails, or the phase went wrong (wrong) and new connections
// are refused: no listener is left where the server answered before the
// phase (a phase whose own connections had not opened yet when the
// server died loses none of them). openEnd is the connections open at
// the phase's end.
func (w *blindWatch) died(ctx context.Context, openEnd int, wrong bool) string {
	w.mu.Lock()
	gone, before := w.gone, w.seen
	w.mu.Unlock()
	if gone != "" {
		return "server " + gone + " during the phase"
	}
	if w.pc == nil {
		return ""
	}
	after := w.pc.PeerCloses()
	w.mu.Lock()
	w.seen = after
	w.mu.Unlock()
	n, m, span, ok := suddenLoss(before, after, w.open, openEnd)
	if ctx.Err() != nil {
		return ""
	}
	if !ok {
		if wrong && newConns(ctx, w.addrs, deathDial) == "refused" {
			return "the server appears to have died: new connections refused"
		}
		return ""
	}
	how := newConns(ctx, w.addrs, deathDial)
	if how == "" {
		return ""
	}
	return fmt.Sprintf("the server appears to have died: %d of %d connections closed by the peer within %s, new connections %s",
		n, m, span.Round(time.Millisecond), how)
}

// suddenLoss reads the closes by the server over a phase (before and
// after it) against the connections open at its start and end: n of the
// m connections the phase had were closed within span, the
// client.PeerWindow ending at the last close; ok when they are most of
// them. m is the more of those open at the start and those the server
// closed during the phase plus those still open at its end (a phase may
// open its own).
func suddenLoss(before, after client.PeerCloses, openStart, openEnd int) (n, m int64, span time.Duration, ok bool) {
	lost := after.N - before.N
	if lost <= 0 {
		return 0, 0, 0, false
	}
	n, span = after.Burst()
	n = min(n, lost)
	m = max(int64(openStart), lost+int64(openEnd))
	return n, m, span, n > 0 && 2*n > m
}

// newConns dials every address at once and says how new connections fare
// when every one failed on the server's side: "refused", "timed out",
// "unreachable"; "" when any connected, or failed for a reason of the
// client's own (no source port, no file descriptor).
func newConns(ctx context.Context, addrs []string, timeout time.Duration) string {
	how := make([]string, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			how[i] = dialFate(ctx, a, timeout)
		}()
	}
	wg.Wait()
	for _, h := range how {
		if h == "" {
			return ""
		}
	}
	if len(how) == 0 {
		return ""
	}
	return how[0]
}

// dialFate dials addr once: "" when it connects (or fails on the client's
// side), else how it failed.
func dialFate(ctx context.Context, addr string, timeout time.Duration) string {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
		return ""
	}
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return "refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	case ctx.Err() == nil && errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	}
	return ""
}
