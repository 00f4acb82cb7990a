package wstls

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"
)

// Session states.
const (
	modeNew       uint8 = iota // NewClient returned it
	modeHandshake              // Handshake has begun
	modeFast                   // established; this package's record layer
	modeStd                    // established; crypto/tls's record layer (a suite the fast path lacks)
	modeDead                   // failed or aborted
)

var (
	// ErrHandshakeDone is returned by Handshake on an established session.
	ErrHandshakeDone = errors.New("wstls: handshake already done")
	// ErrNotEstablished is returned by the steady-state methods before the
	// handshake has completed.
	ErrNotEstablished = errors.New("wstls: handshake not complete")
	errAborted        = errors.New("wstls: session aborted")
)

// State describes an established session.
type State struct {
	Version            uint16 // tls.VersionTLS12 or tls.VersionTLS13
	CipherSuite        uint16
	DidResume          bool        // the handshake resumed a cached session
	ServerName         string      // SNI sent
	NegotiatedProtocol string      // ALPN
	Group              tls.CurveID // the key exchange group; 0 when none was made (a resumed TLS 1.2 session)
	// Fast is true when this package's record layer protects application
	// data (every AEAD suite); false when crypto/tls's does (CBC suites of
	// TLS 1.2), which costs allocations per record.
	Fast bool
}

// Session is the client side of one TLS connection, driven by an event
// loop that owns the socket: the loop reads ciphertext and hands it in,
// and writes what the session returns. A Session is not safe for
// concurrent use; it belongs to the loop that owns the connection.
//
// Life cycle: Handshake (repeatedly, until done) → Feed/Next or ReadPlain,
// Seal, Close → Abort to release. Abort must be called on a session whose
// handshake is in progress and will not be finished, to end the handshake
// coroutine.
type Session struct {
	// Steady state first: the fields every message touches share a few
	// cache lines (at thousands of connections they are cold).
	mode     uint8
	inSync   bool // crypto/tls has seen every record so far (TLS 1.3 tickets can go to it)
	keyUpd   bool // TLS 1.3: the peer asked for a KeyUpdate; send one before the next record
	noFast   bool // tests and benchmarks: keep crypto/tls as the record layer
	version  uint16
	in       []byte // fed ciphertext, borrowed from the caller
	stash    []byte // owned: an incomplete record, or handshake leftovers
	stashOff int
	plain    []byte // plaintext not yet returned by ReadPlain
	rd, wr   halfConn
	st       *suite
	nonce    [12]byte // the nonce of the record being sealed or opened
	aad      [13]byte // TLS 1.2 additional data of that record
	state    State
	hsTime   time.Duration
	err      error // sticky failure
	x        *withStd
}

// withStd is what a Session keeps while crypto/tls takes part: during the
// handshake, while TLS 1.3 tickets may still come (with a session cache),
// and for good on a suite the fast record layer lacks (modeStd). An
// established session on the fast path has none: a connection keeps no
// handshake state.
type withStd struct {
	cfg     *tls.Config
	pool    *Pool // the handshake's coroutines; nil = one of its own
	conn    *tls.Conn
	hs      *hsState // nil outside the handshake
	out     []byte   // the in-memory conn's output (ciphertext to write)
	src     []byte   // a ticket record being handed to crypto/tls
	scratch []byte   // sync phase copy of a record; crypto/tls plaintext
	one     [1]byte
}

// hsState is a Session's state during the handshake only. It lives in
// the worker that runs the handshake, and is reused with it.
type hsState struct {
	w       *worker // the coroutine running the handshake; nil once it ended or was handed back
	yield   func(struct{}) bool
	done    bool                    // crypto/tls's Handshake returned
	err     error                   // what it returned
	offered *tls.ClientSessionState // the cached session crypto/tls offered, if any
	in      []byte                  // ciphertext handed in, owned
	off     int                     // bytes of in given to crypto/tls
	rt      recTracker
	head    [43]byte // the server's first bytes: ServerHello's random (TLS 1.2)
	headN   int
	crand   [32]byte // ClientHello's random
	crandN  int
	kl      keyLog
	start   time.Time
}

// NewClient returns a client session. cfg is used read-only and may be
// shared by many sessions (a ClientSessionCache in it is shared too, which
// is what resumption needs); it must set ServerName or InsecureSkipVerify,
// as for tls.Client.
func NewClient(cfg *tls.Config) *Session {
	return &Session{x: &withStd{cfg: cfg}}
}

// Handshake advances the TLS handshake. Call it first with in == nil
// when the TCP connection is established, then with each piece of
// ciphertext read from the socket, until done. It appends what must be
// written to the socket to dst and returns it (even with an error: it may
// hold an alert worth sending). in is copied; the caller may reuse it.
//
// The handshake is crypto/tls's (certificate verification, SNI,
// resumption, TLS 1.2 and 1.3 as cfg says), run as a coroutine that is
// resumed here on the caller's goroutine: no goroutine runs concurrently
// with the caller, and none is left once the handshake ends or Abort is
// called.
func (s *Session) Handshake(dst, in []byte) (out []byte, done bool, err error) {
	switch s.mode {
	case modeNew:
		x := s.x
		w := x.pool.get()
		hs := w.start(s)
		hs.start = time.Now()
		x.hs = hs
		cfg := x.cfg.Clone()
		hs.kl.next = x.cfg.KeyLogWriter
		cfg.KeyLogWriter = &hs.kl
		if cfg.ClientSessionCache != nil {
			cfg.ClientSessionCache = &cacheSpy{inner: cfg.ClientSessionCache, hs: hs}
		}
		x.conn = tls.Client((*memConn)(s), cfg)
		s.mode = modeHandshake
	case modeHandshake:
	case modeDead:
		return dst, false, s.err
	default:
		return dst, true, ErrHandshakeDone
	}
	x, hs := s.x, s.x.hs
	if hs.off == len(hs.in) {
		hs.in, hs.off = hs.in[:0], 0
	}
	hs.in = append(hs.in, in...)
	x.out = dst
	first := hs.crandN == 0
	_, alive := hs.w.next()
	out, x.out = x.out, nil
	if hello := out[len(dst):]; first && len(hello) >= 43 && hello[0] == recHandshake && hello[5] == 1 {
		// ClientHello: record header, handshake header, version, random.
		hs.crandN = copy(hs.crand[:], hello[11:43])
	}
	if !hs.done {
		if alive {
			return out, false, nil
		}
		hs.err = errAborted // the coroutine ended without finishing
	}
	w := hs.w
	hs.w = nil
	if hs.err != nil {
		s.fail(fmt.Errorf("tls handshake: %w", hs.err))
		err = s.err
	} else {
		s.hsTime = time.Since(hs.start)
		if err = s.established(hs); err != nil {
			s.fail(err)
		}
	}
	if alive && x.pool != nil {
		x.pool.put(w) // hs is w's: done with only now
	} else {
		x.pool.lost()
	}
	if err != nil {
		return out, false, err
	}
	return out, true, nil
}

// HandshakeTime is the wall time from the first Handshake call to the
// completed handshake: the TLS share of a connection's setup, apart from
// TCP connect (before it) and the WebSocket upgrade (after it).
func (s *Session) HandshakeTime() time.Duration { return s.hsTime }

// State describes the established session; zero before.
func (s *Session) State() State { return s.state }

// Abort ends the session without a close_notify: it stops a handshake in
// progress (ending its coroutine) and drops all state. Idempotent.
func (s *Session) Abort() {
	if s.x != nil && s.x.hs != nil && s.x.hs.w != nil {
		w := s.x.hs.w
		s.x.hs.w = nil
		w.stop()
		s.x.pool.lost()
	}
	if s.mode != modeDead {
		s.fail(errAborted)
	}
}

// fail makes err sticky and releases what the session holds.
func (s *Session) fail(err error) {
	s.mode = modeDead
	s.err = err
	s.x = nil
	s.stash, s.plain, s.in = nil, nil, nil
	s.rd, s.wr = halfConn{}, halfConn{}
}

// Idle drops the session's record ciphers (with AES-GCM about 1.5 KB of
// key schedules and tables), for a connection that may stay idle: they are
// made again from the keys it keeps when it next seals or opens a record
// (once, allocating). It also lets go of buffers no record needs. Any
// time after the handshake; a no-op on a session without the fast record
// layer or still taking TLS 1.3 tickets.
func (s *Session) Idle() {
	if s.mode != modeFast || s.inSync {
		return
	}
	s.rd.aead, s.wr.aead = nil, nil
	if s.stashOff == len(s.stash) {
		s.stash, s.stashOff = nil, 0
	}
}

// established sets up the record layer after crypto/tls finished the
// handshake, and lets go of the handshake's state.
func (s *Session) established(hs *hsState) error {
	x := s.x
	x.hs = nil
	cs := x.conn.ConnectionState()
	s.state = State{
		Version:            cs.Version,
		CipherSuite:        cs.CipherSuite,
		DidResume:          cs.DidResume,
		ServerName:         cs.ServerName,
		NegotiatedProtocol: cs.NegotiatedProtocol,
		Group:              cs.CurveID,
	}
	s.version = cs.Version
	// Records that arrived with the last handshake flight (TLS 1.3
	// tickets, early application data) were not given to crypto/tls.
	if rest := hs.in[hs.off:]; len(rest) > 0 {
		s.stash = append(s.stash[:0], rest...)
	}
	s.stashOff = 0
	st, ok := suiteFor(cs.Version, cs.CipherSuite)
	if cs.Version == tls.VersionTLS12 && cs.DidResume {
		// A resumed TLS 1.2 handshake logs no master secret: it is the
		// resumed session's.
		hs.kl.master = resumedMaster(hs.offered, cs.CipherSuite)
	}
	if !ok || s.noFast {
		s.mode = modeStd
		return nil
	}
	s.st = st
	switch cs.Version {
	case tls.VersionTLS13:
		if hs.kl.clientApp == nil || hs.kl.serverApp == nil {
			return errors.New("wstls: no TLS 1.3 traffic secrets from crypto/tls")
		}
		if err := s.rd.set13(st, hs.kl.serverApp); err != nil {
			return err
		}
		if err := s.wr.set13(st, hs.kl.clientApp); err != nil {
			return err
		}
		// Tickets come after the handshake in TLS 1.3: crypto/tls takes
		// them as long as it has seen every record (until the first
		// application data), so that resumption works.
		s.inSync = x.cfg.ClientSessionCache != nil && !x.cfg.SessionTicketsDisabled
	case tls.VersionTLS12:
		// ServerHello: record header, handshake header, version, random.
		if hs.headN < len(hs.head) || hs.head[0] != recHandshake || hs.head[5] != 2 || hs.crandN != len(hs.crand) || hs.kl.master == nil {
			// Not a plain ServerHello first, or no secret: crypto/tls
			// keeps the records.
			s.mode = modeStd
			return nil
		}
		ck, sk, civ, siv := keyBlock12(st, hs.kl.master, hs.crand[:], hs.head[11:43])
		if err := s.wr.set12(st, ck, civ); err != nil {
			return err
		}
		if err := s.rd.set12(st, sk, siv); err != nil {
			return err
		}
		// Each side's Finished was record 0 under these keys.
		s.wr.seq, s.rd.seq = 1, 1
	default:
		return fmt.Errorf("wstls: unexpected version %#x", cs.Version)
	}
	s.state.Fast = true
	s.mode = modeFast
	if !s.inSync {
		s.x = nil
		return nil
	}
	return s.takeTickets()
}

// takeTickets hands crypto/tls the tickets that came with the server's
// last handshake flight (crypto/tls servers send them there), so that the
// next connection can resume at once, before this one reads anything.
// It stops at the first record that is not tickets, leaving it for Next.
func (s *Session) takeTickets() error {
	for s.inSync {
		b := s.stash[s.stashOff:]
		need, err := s.recordLen(b)
		if err != nil || len(b) < need {
			return nil // Next reports it, or waits for the rest
		}
		rec := b[:need]
		s.x.scratch = append(s.x.scratch[:0], rec...)
		plain, typ, err := s.open(s.x.scratch)
		if err != nil {
			return nil // Next fails on it again
		}
		s.rd.seq-- // peeked, not consumed: Next opens it again
		if typ != recHandshake || !onlyTickets(plain) {
			return nil
		}
		s.stashOff += need
		if _, _, err := s.openSync(rec); err != nil {
			return err
		}
	}
	return nil
}
