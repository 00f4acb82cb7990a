package wstls

// The coroutines that run crypto/tls's handshakes, and their reuse.

import (
	"crypto/tls"
	"iter"
)

// minIdle is how many idle coroutines a Pool keeps when no handshake is
// in progress: enough for a few handshakes to start at once, few enough
// that a loop keeps little once a storm is over (an idle coroutine's
// stack, grown to crypto/tls's depth, shrinks by half at each GC). While
// handshakes are in progress it keeps as many idle as there are
// handshakes: in a storm, those that finish in one turn of the loop hand
// theirs to those that start in the next.
const minIdle = 4

// maxKeptIn is the largest handshake input buffer a reused worker keeps
// (a server's first flight with its certificate chain is a few KB).
const maxKeptIn = 64 << 10

// Pool keeps the handshake coroutines of one event loop for reuse. Each
// handshake runs crypto/tls on a coroutine of its own (Session.Handshake);
// without a Pool that is a new goroutine per handshake, whose stack grows
// from its starting size to crypto/tls's depth, copied at each doubling.
// A coroutine whose handshake finished goes back to the Pool and runs the
// next handshake on the stack it already has. A coroutine whose handshake
// was aborted midway ends instead.
//
// The zero Pool is ready to use. A Pool is not safe for concurrent use:
// it belongs to the loop that drives its sessions, which calls Close when
// it exits (idle coroutines are goroutines until then).
type Pool struct {
	idle    []*worker
	busy    int // handshakes in progress on p's coroutines
	started int // coroutines started (tests)
	closed  bool
}

// NewClient is the package's NewClient with p's coroutines: the session
// must be driven by p's loop. A nil Pool gives each handshake a coroutine
// of its own.
func (p *Pool) NewClient(cfg *tls.Config) *Session {
	s := NewClient(cfg)
	s.x.pool = p
	return s
}

// Close ends p's idle coroutines; coroutines of handshakes in progress
// end with their handshake. Later handshakes get coroutines of their own.
// Idempotent.
func (p *Pool) Close() {
	p.closed = true
	for i, w := range p.idle {
		w.stop()
		p.idle[i] = nil
	}
	p.idle = nil
}

// get returns an idle worker, or a new one.
func (p *Pool) get() *worker {
	if p != nil {
		p.busy++
		if n := len(p.idle); n > 0 {
			w := p.idle[n-1]
			p.idle[n-1] = nil
			p.idle = p.idle[:n-1]
			return w
		}
		p.started++
	}
	w := &worker{pool: p}
	if p != nil && p.closed {
		w.pool = nil
	}
	w.next, w.stop = iter.Pull(w.run)
	return w
}

// put takes back the worker of a finished handshake: idle, or ended if
// p has enough (see minIdle), ending others that are now too many.
func (p *Pool) put(w *worker) {
	p.busy--
	keep := max(minIdle, p.busy)
	if p.closed || len(p.idle) >= keep {
		w.stop()
	} else {
		p.idle = append(p.idle, w)
	}
	for len(p.idle) > keep {
		n := len(p.idle) - 1
		p.idle[n].stop()
		p.idle[n] = nil
		p.idle = p.idle[:n]
	}
}

// lost accounts for a worker that will not come back: its handshake was
// aborted, or its coroutine ended.
func (p *Pool) lost() {
	if p != nil {
		p.busy--
	}
}

// worker is one handshake coroutine and the state of the handshake it
// runs, kept with it so that a reused worker allocates neither.
type worker struct {
	next func() (struct{}, bool)
	stop func()
	pool *Pool // nil: one handshake, then the coroutine ends
	s    *Session
	hs   hsState
}

// run is the coroutine: it runs the handshake of w.s, then (in a Pool)
// parks until it is given the next one.
func (w *worker) run(yield func(struct{}) bool) {
	for {
		hs := &w.hs
		hs.yield = yield
		hs.err = w.s.x.conn.Handshake()
		hs.yield = nil
		hs.done = true
		w.s = nil
		if w.pool == nil || !yield(struct{}{}) {
			return
		}
	}
}

// start readies w's handshake state for s's handshake.
func (w *worker) start(s *Session) *hsState {
	w.s = s
	in := w.hs.in[:0]
	if cap(in) > maxKeptIn {
		in = nil
	}
	w.hs = hsState{in: in, w: w}
	return &w.hs
}

// parkPad is the stack a handshake coroutine keeps in use under its
// yield while it waits for the server. The GC halves the stack of a
// goroutine that uses less than a quarter of it; a handshake parked in
// the middle of crypto/tls uses little of the stack crypto/tls grew, so
// without this every GC would halve the stacks of a storm's parked
// handshakes, and each would grow its stack again, copying it, when it
// resumes. (An idle coroutine in a Pool parks without it: its stack may
// shrink.) 4 KB keeps a quarter of the 16 KB stack a TLS 1.3 handshake
// grows (ML-KEM key generation is its deepest point) in use; 8 KB would
// push the parked depth past 16 KB and double every stack.
const parkPad = 4 << 10

// park yields with parkPad bytes of frame under the yield.
//
//go:noinline
func park(yield func(struct{}) bool) bool {
	var pad [parkPad]byte
	ok := yield(struct{}{})
	if !ok {
		pad[0] = 1 // read below: the frame must exist
	}
	return ok && pad[0] == 0
}
