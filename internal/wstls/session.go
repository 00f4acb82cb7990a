package wstls

import (
	"crypto/tls"
	"errors"
	"fmt"
	"iter"
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
	DidResume          bool   // the handshake resumed a cached session
	ServerName         string // SNI sent
	NegotiatedProtocol string // ALPN
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
	version  uint16
	maxRec   int
	in       []byte // fed ciphertext, borrowed from the caller
	stash    []byte // owned: an incomplete record, or handshake leftovers
	stashOff int
	plain    []byte // plaintext not yet returned by ReadPlain
	rd, wr   halfConn
	st       suite

	out     []byte // the in-memory conn's output (ciphertext to write)
	src     []byte // a ticket record being handed to crypto/tls
	scratch []byte // sync phase copy of a record; crypto/tls plaintext
	one     [1]byte
	err     error // sticky failure
	cfg     *tls.Config
	conn    *tls.Conn // nil once the fast path no longer needs it
	hs      *hsState  // nil outside the handshake
	hsTime  time.Duration
	state   State
	noFast  bool // tests and benchmarks: keep crypto/tls as the record layer
}

// hsState is a Session's state during the handshake only.
type hsState struct {
	next    func() (struct{}, bool)
	stop    func()
	yield   func(struct{}) bool
	err     error
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
	return &Session{cfg: cfg}
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
		s.hs = &hsState{start: time.Now()}
		cfg := s.cfg.Clone()
		s.hs.kl.next = s.cfg.KeyLogWriter
		cfg.KeyLogWriter = &s.hs.kl
		if cfg.ClientSessionCache != nil {
			cfg.ClientSessionCache = &cacheSpy{inner: cfg.ClientSessionCache, s: s}
		}
		s.conn = tls.Client((*memConn)(s), cfg)
		s.hs.next, s.hs.stop = iter.Pull(s.runHandshake)
		s.mode = modeHandshake
	case modeHandshake:
	case modeDead:
		return dst, false, s.err
	default:
		return dst, true, ErrHandshakeDone
	}
	if s.hs.off == len(s.hs.in) {
		s.hs.in, s.hs.off = s.hs.in[:0], 0
	}
	s.hs.in = append(s.hs.in, in...)
	s.out = dst
	first := s.hs.crandN == 0
	_, more := s.hs.next()
	out, s.out = s.out, nil
	if hello := out[len(dst):]; first && len(hello) >= 43 && hello[0] == recHandshake && hello[5] == 1 {
		// ClientHello: record header, handshake header, version, random.
		s.hs.crandN = copy(s.hs.crand[:], hello[11:43])
	}
	if more {
		return out, false, nil
	}
	s.hs.next, s.hs.stop = nil, nil
	if s.hs.err != nil {
		s.fail(fmt.Errorf("tls handshake: %w", s.hs.err))
		return out, false, s.err
	}
	s.hsTime = time.Since(s.hs.start)
	err = s.established()
	s.hs = nil
	if err != nil {
		s.fail(err)
		return out, false, err
	}
	return out, true, nil
}

// runHandshake is the handshake coroutine.
func (s *Session) runHandshake(yield func(struct{}) bool) {
	s.hs.yield = yield
	s.hs.err = s.conn.Handshake()
	s.hs.yield = nil
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
	if s.hs != nil && s.hs.stop != nil {
		s.hs.stop()
		s.hs.next, s.hs.stop = nil, nil
	}
	if s.mode != modeDead {
		s.fail(errAborted)
	}
}

// fail makes err sticky and releases what the session holds.
func (s *Session) fail(err error) {
	s.mode = modeDead
	s.err = err
	s.conn = nil
	s.hs = nil
	s.stash, s.scratch, s.plain, s.in, s.src = nil, nil, nil, nil, nil
	s.rd, s.wr = halfConn{}, halfConn{}
}

// established sets up the record layer after crypto/tls finished the
// handshake.
func (s *Session) established() error {
	cs := s.conn.ConnectionState()
	s.state = State{
		Version:            cs.Version,
		CipherSuite:        cs.CipherSuite,
		DidResume:          cs.DidResume,
		ServerName:         cs.ServerName,
		NegotiatedProtocol: cs.NegotiatedProtocol,
	}
	s.version = cs.Version
	// Records that arrived with the last handshake flight (TLS 1.3
	// tickets, early application data) were not given to crypto/tls.
	s.stash = append(s.stash[:0], s.hs.in[s.hs.off:]...)
	s.stashOff = 0
	st, ok := suiteFor(cs.Version, cs.CipherSuite)
	if cs.Version == tls.VersionTLS12 && cs.DidResume {
		// A resumed TLS 1.2 handshake logs no master secret: it is the
		// resumed session's.
		s.hs.kl.master = resumedMaster(s.hs.offered, cs.CipherSuite)
	}
	if !ok || s.noFast {
		s.mode = modeStd
		return nil
	}
	s.st = st
	s.maxRec = maxCipher12
	switch cs.Version {
	case tls.VersionTLS13:
		s.maxRec = maxCipher13
		if s.hs.kl.clientApp == nil || s.hs.kl.serverApp == nil {
			return errors.New("wstls: no TLS 1.3 traffic secrets from crypto/tls")
		}
		if err := s.rd.set13(st, s.hs.kl.serverApp); err != nil {
			return err
		}
		if err := s.wr.set13(st, s.hs.kl.clientApp); err != nil {
			return err
		}
		// Tickets come after the handshake in TLS 1.3: crypto/tls takes
		// them as long as it has seen every record (until the first
		// application data), so that resumption works.
		s.inSync = s.cfg.ClientSessionCache != nil && !s.cfg.SessionTicketsDisabled
	case tls.VersionTLS12:
		// ServerHello: record header, handshake header, version, random.
		if s.hs.headN < len(s.hs.head) || s.hs.head[0] != recHandshake || s.hs.head[5] != 2 || s.hs.crandN != len(s.hs.crand) || s.hs.kl.master == nil {
			// Not a plain ServerHello first, or no secret: crypto/tls
			// keeps the records.
			s.mode = modeStd
			return nil
		}
		ck, sk, civ, siv := keyBlock12(st, s.hs.kl.master, s.hs.crand[:], s.hs.head[11:43])
		var err error
		if s.wr.aead, err = st.newAEAD(ck); err != nil {
			return err
		}
		if s.rd.aead, err = st.newAEAD(sk); err != nil {
			return err
		}
		copy(s.wr.iv[:], civ)
		copy(s.rd.iv[:], siv)
		// Each side's Finished was record 0 under these keys.
		s.wr.seq, s.rd.seq = 1, 1
	default:
		return fmt.Errorf("wstls: unexpected version %#x", cs.Version)
	}
	s.state.Fast = true
	s.mode = modeFast
	if !s.inSync {
		s.conn = nil
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
		s.scratch = append(s.scratch[:0], rec...)
		plain, typ, err := s.open(s.scratch)
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
