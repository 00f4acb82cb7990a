package wstls

// The in-memory net.Conn crypto/tls runs the handshake on, and what it
// needs to hand crypto/tls exactly the records that belong to it.

import (
	"crypto/tls"
	"encoding/binary"
	"net"
	"time"
)

// wouldBlock is what the in-memory conn returns to crypto/tls when it has
// no more ciphertext: a temporary net.Error, after which crypto/tls keeps
// the partial record and stays usable (crypto/tls/conn.go readRecordOrCCS).
type wouldBlock struct{}

func (wouldBlock) Error() string   { return "wstls: no more ciphertext" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

var errWouldBlock net.Error = wouldBlock{}

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
		hs := s.x.hs
		for hs.off == len(hs.in) {
			if hs.yield == nil || !park(hs.yield) {
				return 0, errAborted
			}
		}
		b := hs.in[hs.off:]
		if len(b) > len(p) {
			b = b[:len(p)]
		}
		n := hs.rt.take(b)
		if hs.headN < len(hs.head) {
			hs.headN += copy(hs.head[hs.headN:], b[:n])
		}
		copy(p, b[:n])
		hs.off += n
		return n, nil
	case modeFast:
		x := s.x
		if len(x.src) == 0 {
			return 0, errWouldBlock
		}
		n := copy(p, x.src)
		x.src = x.src[n:]
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
	m.x.out = append(m.x.out, p...)
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
	hs    *hsState
}

func (c *cacheSpy) Get(key string) (*tls.ClientSessionState, bool) {
	cs, ok := c.inner.Get(key)
	c.hs.offered = cs
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
