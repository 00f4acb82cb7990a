package wstls

import (
	"crypto/cipher"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"slices"
	"time"
)

// Record layer limits (RFC 8446 §5.1-5.2, RFC 5246 §6.2).
const (
	recordHeaderLen = 5
	maxPlaintext    = 16384
	maxCipher13     = maxPlaintext + 256
	maxCipher12     = maxPlaintext + 2048
	tagLen          = 16 // AES-GCM and ChaCha20-Poly1305
)

// TLS record content types.
const (
	recAlert     = 21
	recHandshake = 22
	recAppData   = 23
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

// wouldBlock is what the in-memory conn returns to crypto/tls when it has
// no more ciphertext: a temporary net.Error, after which crypto/tls keeps
// the partial record and stays usable (crypto/tls/conn.go readRecordOrCCS).
type wouldBlock struct{}

func (wouldBlock) Error() string   { return "wstls: no more ciphertext" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

var errWouldBlock net.Error = wouldBlock{}

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

// halfConn is one direction of the fast record layer.
type halfConn struct {
	aead   cipher.AEAD
	seq    uint64
	iv     [12]byte
	nonce  [12]byte // scratch, kept here so that it does not escape per record
	aad    [13]byte // TLS 1.2 additional data scratch
	secret []byte   // TLS 1.3 traffic secret, for KeyUpdate
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

// set13 installs a TLS 1.3 traffic secret.
func (h *halfConn) set13(st suite, secret []byte) error {
	a, iv, err := trafficKeys13(st, secret)
	if err != nil {
		return err
	}
	h.aead, h.secret, h.seq = a, secret, 0
	copy(h.iv[:], iv)
	return nil
}

// setNonce computes the per-record nonce: iv XOR the sequence number
// (RFC 8446 §5.3, RFC 7905 §2).
func (h *halfConn) setNonce() {
	h.nonce = h.iv
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], h.seq)
	for i := range seq {
		h.nonce[4+i] ^= seq[i]
	}
}

// setAAD12 computes TLS 1.2's additional data for a record of typ with n
// bytes of plaintext.
func (h *halfConn) setAAD12(typ byte, n int) {
	binary.BigEndian.PutUint64(h.aad[:8], h.seq)
	h.aad[8] = typ
	h.aad[9], h.aad[10] = 3, 3
	binary.BigEndian.PutUint16(h.aad[11:], uint16(n))
}

// Feed hands in ciphertext read from the socket. The session borrows ct
// (and may decrypt it in place) until Next or ReadPlain reports that it
// needs more input; only then may the caller reuse it.
func (s *Session) Feed(ct []byte) {
	if len(s.in) > 0 { // the caller did not drain the last piece
		s.stash = append(s.stash, s.in...)
	}
	s.in = ct
}

// Next returns the next piece of plaintext, valid until the next call on
// the session. It returns (nil, nil) when the ciphertext fed so far is
// used up (a partial record is kept), io.EOF after the peer's
// close_notify, and any other error when the connection must be dropped.
func (s *Session) Next() ([]byte, error) {
	if len(s.plain) > 0 {
		p := s.plain
		s.plain = nil
		return p, nil
	}
	switch s.mode {
	case modeFast:
	case modeStd:
		return s.nextStd()
	case modeDead:
		return nil, s.err
	default:
		return nil, ErrNotEstablished
	}
	for {
		rec, err := s.nextRecord()
		if err != nil || rec == nil {
			if err != nil {
				s.fail(err)
			}
			return nil, err
		}
		var plain []byte
		var typ byte
		if s.inSync {
			plain, typ, err = s.openSync(rec)
		} else {
			plain, typ, err = s.open(rec)
		}
		if err != nil {
			s.fail(err)
			return nil, err
		}
		switch typ {
		case recAppData:
			if len(plain) > 0 {
				return plain, nil
			}
		case recAlert:
			if err := s.alert(plain); err != nil {
				return nil, err
			}
		case recHandshake:
			if err := s.postHandshake(plain); err != nil {
				s.fail(err)
				return nil, err
			}
		default:
			err := fmt.Errorf("tls: unexpected record type %d", typ)
			s.fail(err)
			return nil, err
		}
	}
}

// ReadPlain copies plaintext into dst. It returns 0, nil when the
// ciphertext fed so far is used up (see Feed), io.EOF after the peer's
// close_notify, and any other error when the connection must be dropped.
func (s *Session) ReadPlain(dst []byte) (int, error) {
	if len(s.plain) == 0 {
		p, err := s.Next()
		if err != nil || p == nil {
			return 0, err
		}
		s.plain = p
	}
	n := copy(dst, s.plain)
	s.plain = s.plain[n:]
	return n, nil
}

// nextStd is Next on crypto/tls's record layer.
func (s *Session) nextStd() ([]byte, error) {
	if s.scratch == nil {
		s.scratch = make([]byte, maxPlaintext)
	}
	n, err := s.conn.Read(s.scratch[:cap(s.scratch)])
	if err != nil {
		if err == error(errWouldBlock) {
			return nil, nil
		}
		if err != io.EOF {
			err = fmt.Errorf("tls: %w", err)
		}
		s.fail(err)
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	return s.scratch[:n], nil
}

// recordLen returns the length of the record at the start of b (header
// included), or the header length if b does not hold a whole header.
func (s *Session) recordLen(b []byte) (int, error) {
	if len(b) < recordHeaderLen {
		return recordHeaderLen, nil
	}
	n := int(binary.BigEndian.Uint16(b[3:5]))
	if n > s.maxRec {
		return 0, fmt.Errorf("tls: oversized record of %d bytes", n)
	}
	return recordHeaderLen + n, nil
}

// nextRecord returns the next complete record of the input (the stash
// first, then the borrowed piece), or nil when none is complete; an
// incomplete tail goes to the stash.
func (s *Session) nextRecord() ([]byte, error) {
	if s.stashOff < len(s.stash) {
		for {
			b := s.stash[s.stashOff:]
			need, err := s.recordLen(b)
			if err != nil {
				return nil, err
			}
			if len(b) >= need {
				s.stashOff += need
				return b[:need], nil
			}
			if len(s.in) == 0 {
				return nil, nil
			}
			k := min(need-len(b), len(s.in))
			s.stash = append(s.stash, s.in[:k]...)
			s.in = s.in[k:]
		}
	}
	s.stash, s.stashOff = s.stash[:0], 0
	if len(s.in) == 0 {
		return nil, nil
	}
	need, err := s.recordLen(s.in)
	if err != nil {
		return nil, err
	}
	if len(s.in) >= need {
		rec := s.in[:need]
		s.in = s.in[need:]
		if len(s.in) == 0 {
			s.in = nil // do not keep the caller's buffer alive
		}
		return rec, nil
	}
	s.stash = append(s.stash, s.in...)
	s.in = nil
	return nil, nil
}

// open decrypts a record in place and returns its plaintext and (inner)
// content type.
func (s *Session) open(rec []byte) ([]byte, byte, error) {
	h := &s.rd
	body := rec[recordHeaderLen:]
	var plain []byte
	var err error
	if s.version == tls.VersionTLS13 {
		if rec[0] != recAppData {
			return nil, 0, fmt.Errorf("tls: unexpected record type %d", rec[0])
		}
		h.setNonce()
		plain, err = h.aead.Open(body[:0], h.nonce[:], body, rec[:recordHeaderLen])
		if err != nil {
			return nil, 0, errors.New("tls: bad record MAC")
		}
		h.seq++
		i := len(plain) - 1
		for i >= 0 && plain[i] == 0 {
			i--
		}
		if i < 0 {
			return nil, 0, errors.New("tls: record without content type")
		}
		return plain[:i], plain[i], nil
	}
	typ := rec[0]
	if s.st.explicit {
		if len(body) < 8+tagLen {
			return nil, 0, errors.New("tls: bad record MAC")
		}
		h.nonce = h.iv
		copy(h.nonce[4:], body[:8])
		body = body[8:]
	} else {
		if len(body) < tagLen {
			return nil, 0, errors.New("tls: bad record MAC")
		}
		h.setNonce()
	}
	h.setAAD12(typ, len(body)-tagLen)
	plain, err = h.aead.Open(body[:0], h.nonce[:], body, h.aad[:])
	if err != nil {
		return nil, 0, errors.New("tls: bad record MAC")
	}
	h.seq++
	return plain, typ, nil
}

// openSync opens a record while crypto/tls is still in step: a record of
// NewSessionTicket messages goes to crypto/tls (which stores the ticket
// in the ClientSessionCache) and is reported as an empty handshake record;
// anything else ends the sync phase and is returned as open would.
func (s *Session) openSync(rec []byte) ([]byte, byte, error) {
	s.scratch = append(s.scratch[:0], rec...)
	plain, typ, err := s.open(s.scratch)
	if err != nil {
		return nil, 0, err
	}
	if typ == recHandshake && onlyTickets(plain) {
		s.src = rec
		n, err := s.conn.Read(s.one[:])
		s.src = nil
		switch {
		case n != 0:
			return nil, 0, errors.New("tls: session ticket record carried data")
		case err != error(errWouldBlock):
			return nil, 0, fmt.Errorf("tls: session ticket: %w", err)
		}
		return nil, recHandshake, nil
	}
	s.inSync = false
	s.conn = nil
	return plain, typ, nil
}

// onlyTickets reports whether b is a sequence of whole NewSessionTicket
// messages.
func onlyTickets(b []byte) bool {
	for len(b) > 0 {
		if len(b) < 4 || b[0] != 4 {
			return false
		}
		n := 4 + (int(b[1])<<16 | int(b[2])<<8 | int(b[3]))
		if n > len(b) {
			return false
		}
		b = b[n:]
	}
	return true
}

// alert handles an alert record: close_notify is io.EOF, TLS 1.2 warnings
// are skipped, anything else ends the session.
func (s *Session) alert(b []byte) error {
	if len(b) != 2 {
		s.fail(errors.New("tls: malformed alert"))
		return s.err
	}
	if b[1] == 0 {
		s.fail(io.EOF)
		return io.EOF
	}
	if s.version == tls.VersionTLS12 && b[0] == 1 {
		return nil
	}
	s.fail(fmt.Errorf("tls: peer sent alert %d", b[1]))
	return s.err
}

// postHandshake handles handshake messages after the handshake: TLS 1.3
// KeyUpdate (answered when asked) and late NewSessionTickets (dropped:
// crypto/tls is no longer in step to take them); TLS 1.2 HelloRequest
// (ignored: renegotiation is refused, which RFC 5246 §7.4.1.1 allows).
func (s *Session) postHandshake(b []byte) error {
	for len(b) > 0 {
		if len(b) < 4 {
			return errors.New("tls: malformed handshake message")
		}
		n := 4 + (int(b[1])<<16 | int(b[2])<<8 | int(b[3]))
		if n > len(b) {
			return errors.New("tls: fragmented handshake message")
		}
		msg := b[:n]
		b = b[n:]
		switch {
		case s.version == tls.VersionTLS13 && msg[0] == 4: // NewSessionTicket
		case s.version == tls.VersionTLS13 && msg[0] == 24 && n == 5: // KeyUpdate
			secret, err := nextSecret13(s.st, s.rd.secret)
			if err != nil {
				return err
			}
			if err := s.rd.set13(s.st, secret); err != nil {
				return err
			}
			if msg[4] == 1 {
				s.keyUpd = true
			}
		case s.version == tls.VersionTLS12 && msg[0] == 0: // HelloRequest
		default:
			return fmt.Errorf("tls: unexpected handshake message %d", msg[0])
		}
	}
	return nil
}

// Seal appends plain, protected as application-data records, to dst and
// returns it: the bytes to write to the socket, in order. plain must not
// overlap dst's spare capacity. With enough capacity in dst it allocates
// nothing.
func (s *Session) Seal(dst, plain []byte) ([]byte, error) {
	switch s.mode {
	case modeFast:
	case modeStd:
		s.out = dst
		_, err := s.conn.Write(plain)
		out := s.out
		s.out = nil
		if err != nil {
			err = fmt.Errorf("tls: %w", err)
			s.fail(err)
		}
		return out, err
	case modeDead:
		return dst, s.err
	default:
		return dst, ErrNotEstablished
	}
	if s.keyUpd {
		s.keyUpd = false
		dst = s.sealRecord(dst, recHandshake, []byte{24, 0, 0, 1, 0})
		secret, err := nextSecret13(s.st, s.wr.secret)
		if err == nil {
			err = s.wr.set13(s.st, secret)
		}
		if err != nil {
			s.fail(err)
			return dst, err
		}
	}
	for len(plain) > 0 {
		n := min(len(plain), maxPlaintext)
		dst = s.sealRecord(dst, recAppData, plain[:n])
		plain = plain[n:]
	}
	return dst, nil
}

// Close appends a close_notify alert to dst and returns it: the polite
// end of the session (the caller writes it, then closes the socket when
// the peer's close_notify or EOF arrives, or at once).
func (s *Session) Close(dst []byte) ([]byte, error) {
	switch s.mode {
	case modeFast:
		return s.sealRecord(dst, recAlert, []byte{1, 0}), nil // warning, close_notify
	case modeStd:
		s.out = dst
		err := s.conn.CloseWrite()
		out := s.out
		s.out = nil
		return out, err
	case modeDead:
		return dst, s.err
	}
	return dst, ErrNotEstablished
}

// Overhead is the number of bytes Seal adds to a record of plaintext at
// most (header, explicit nonce, content type, tag): size write buffers
// with it.
const Overhead = recordHeaderLen + 8 + 1 + tagLen

// sealRecord appends one protected record.
func (s *Session) sealRecord(dst []byte, typ byte, data []byte) []byte {
	h := &s.wr
	start := len(dst)
	dst = slices.Grow(dst, len(data)+Overhead)
	hdrEnd := start + recordHeaderLen
	switch {
	case s.version == tls.VersionTLS13:
		// Header (outer type application data), then data || type, sealed
		// in place with the header as additional data.
		dst = dst[:hdrEnd+len(data)+1]
		hdr := dst[start:hdrEnd]
		hdr[0], hdr[1], hdr[2] = recAppData, 3, 3
		binary.BigEndian.PutUint16(hdr[3:], uint16(len(data)+1+tagLen))
		body := dst[hdrEnd:]
		copy(body, data)
		body[len(data)] = typ
		h.setNonce()
		h.seq++
		sealed := h.aead.Seal(body[:0], h.nonce[:], body, hdr)
		return dst[:hdrEnd+len(sealed)]
	case s.st.explicit:
		// TLS 1.2 GCM: header, explicit nonce (the sequence number), data.
		dst = dst[:hdrEnd+8+len(data)]
		hdr := dst[start:hdrEnd]
		hdr[0], hdr[1], hdr[2] = typ, 3, 3
		binary.BigEndian.PutUint16(hdr[3:], uint16(8+len(data)+tagLen))
		binary.BigEndian.PutUint64(dst[hdrEnd:], h.seq)
		h.nonce = h.iv
		copy(h.nonce[4:], dst[hdrEnd:hdrEnd+8])
		body := dst[hdrEnd+8:]
		copy(body, data)
		h.setAAD12(typ, len(data))
		h.seq++
		sealed := h.aead.Seal(body[:0], h.nonce[:], body, h.aad[:])
		return dst[:hdrEnd+8+len(sealed)]
	default:
		// TLS 1.2 ChaCha20-Poly1305 (RFC 7905): no explicit nonce.
		dst = dst[:hdrEnd+len(data)]
		hdr := dst[start:hdrEnd]
		hdr[0], hdr[1], hdr[2] = typ, 3, 3
		binary.BigEndian.PutUint16(hdr[3:], uint16(len(data)+tagLen))
		body := dst[hdrEnd:]
		copy(body, data)
		h.setNonce()
		h.setAAD12(typ, len(data))
		h.seq++
		sealed := h.aead.Seal(body[:0], h.nonce[:], body, h.aad[:])
		return dst[:hdrEnd+len(sealed)]
	}
}

// memConn is the net.Conn crypto/tls runs on: reads come from the
// ciphertext the loop handed in, writes go to Session.out.
type memConn Session

// Read gives crypto/tls ciphertext. During the handshake it never passes
// the end of the record crypto/tls is reading, so that every record
// after the handshake is left to the session; when there is nothing to
// give, it suspends the handshake coroutine until the next Handshake call.
func (m *memConn) Read(p []byte) (int, error) {
	s := (*Session)(m)
	switch s.mode {
	case modeHandshake:
		for s.hs.off == len(s.hs.in) {
			if s.hs.yield == nil || !s.hs.yield(struct{}{}) {
				return 0, errAborted
			}
		}
		b := s.hs.in[s.hs.off:]
		if len(b) > len(p) {
			b = b[:len(p)]
		}
		n := s.hs.rt.take(b)
		if s.hs.headN < len(s.hs.head) {
			s.hs.headN += copy(s.hs.head[s.hs.headN:], b[:n])
		}
		copy(p, b[:n])
		s.hs.off += n
		return n, nil
	case modeFast:
		if len(s.src) == 0 {
			return 0, errWouldBlock
		}
		n := copy(p, s.src)
		s.src = s.src[n:]
		return n, nil
	case modeStd:
		if s.stashOff < len(s.stash) {
			n := copy(p, s.stash[s.stashOff:])
			s.stashOff += n
			return n, nil
		}
		if len(s.in) == 0 {
			return 0, errWouldBlock
		}
		n := copy(p, s.in)
		s.in = s.in[n:]
		return n, nil
	}
	return 0, net.ErrClosed
}

// Write collects crypto/tls's output.
func (m *memConn) Write(p []byte) (int, error) {
	m.out = append(m.out, p...)
	return len(p), nil
}

// Close is a no-op: the loop owns the socket.
func (m *memConn) Close() error { return nil }

// LocalAddr is unknown to the session.
func (m *memConn) LocalAddr() net.Addr { return memAddr{} }

// RemoteAddr is unknown to the session.
func (m *memConn) RemoteAddr() net.Addr { return memAddr{} }

// SetDeadline is a no-op: the loop enforces the handshake timeout (Abort).
func (m *memConn) SetDeadline(time.Time) error { return nil }

// SetReadDeadline is a no-op.
func (m *memConn) SetReadDeadline(time.Time) error { return nil }

// SetWriteDeadline is a no-op.
func (m *memConn) SetWriteDeadline(time.Time) error { return nil }

type memAddr struct{}

func (memAddr) Network() string { return "wstls" }
func (memAddr) String() string  { return "wstls" }

// recTracker follows record boundaries in the server's byte stream.
type recTracker struct {
	hdr  [recordHeaderLen]byte
	hdrN int
	left int // body bytes left in the current record
}

// take returns how many bytes at the start of b belong to the current
// record (never past its end) and moves past them.
func (t *recTracker) take(b []byte) int {
	n := 0
	for n < len(b) && t.hdrN < recordHeaderLen {
		t.hdr[t.hdrN] = b[n]
		t.hdrN++
		n++
		if t.hdrN == recordHeaderLen {
			t.left = int(binary.BigEndian.Uint16(t.hdr[3:]))
			if t.left == 0 {
				t.hdrN = 0
				return n
			}
		}
	}
	if t.hdrN < recordHeaderLen {
		return n
	}
	k := min(t.left, len(b)-n)
	t.left -= k
	if t.left == 0 {
		t.hdrN = 0
	}
	return n + k
}

// cacheSpy passes a ClientSessionCache through, noting which session
// crypto/tls offers: a resumed TLS 1.2 session's master secret is in it.
type cacheSpy struct {
	inner tls.ClientSessionCache
	s     *Session
}

func (c *cacheSpy) Get(key string) (*tls.ClientSessionState, bool) {
	cs, ok := c.inner.Get(key)
	c.s.hs.offered = cs
	return cs, ok
}

func (c *cacheSpy) Put(key string, cs *tls.ClientSessionState) { c.inner.Put(key, cs) }

// resumedMaster returns the master secret of a TLS 1.2 client session,
// read from its serialised form (crypto/tls ticket.go, SessionState.Bytes:
// version(2) type(1) cipher_suite(2) created_at(8) secret<1..255> ...), or
// nil if it is not one; the session then stays on crypto/tls's records.
func resumedMaster(cs *tls.ClientSessionState, suite uint16) []byte {
	if cs == nil {
		return nil
	}
	_, st, err := cs.ResumptionState()
	if err != nil || st == nil {
		return nil
	}
	b, err := st.Bytes()
	if err != nil || len(b) < 14 {
		return nil
	}
	if binary.BigEndian.Uint16(b) != tls.VersionTLS12 || b[2] != 2 || binary.BigEndian.Uint16(b[3:]) != suite {
		return nil
	}
	n := int(b[13])
	if n != 48 || len(b) < 14+n { // RFC 5246 §8.1: 48 bytes
		return nil
	}
	return append([]byte(nil), b[14:14+n]...)
}
