package client

import (
	"crypto/x509"
	"errors"
	"io"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/wstls"

	"github.com/wsplan/wsplan/internal/proto"
)

// tlsReadBuf is the size of a loop's ciphertext read buffer: one read
// takes many 16 KiB records.
const tlsReadBuf = 256 << 10

// connSec is what a TLS or compressed connection keeps beyond a plain one:
// its TLS session (wstls: crypto/tls's handshake, an allocation-free
// record layer), ciphertext the socket did not take, and its inflate state.
// Loops share every buffer; per connection only this struct, the session
// and the inflate history (with server context takeover) remain.
type connSec struct {
	tls        *wstls.Session // nil = plain TCP
	out        []byte         // sealed records not yet written, before any other output
	proto      *proto.Conn    // the protocol's state (protocol.go); nil = raw messages
	Deflate    bool           // permessage-deflate was negotiated
	WindowBits uint8          // negotiated client_max_window_bits (8..15), for pre-computed frames
	dec        pmdeflate.Decompressor
}

// errTLSSeal stands for a Seal failure where a write's errno is expected.
const errTLSSeal = syscall.EPROTO

// Write writes b to c: directly on a plain connection; sealed on a TLS one,
// where it always takes all of b (records cannot be sealed again, so
// whatever the socket refuses is kept as ciphertext in c.sec.out and
// written first when the socket is writable; it registers EPOLLOUT for
// it). len(b) must be > 0.
func (l *Loop) Write(c *Conn, b []byte) (int, syscall.Errno) {
	if c.Sec == nil {
		return rawWrite(c.fd, b)
	}
	if p := c.Sec.proto; p != nil {
		p.LastSent = l.Now() // the protocol's keepalives count from it
	}
	if c.Sec.tls == nil {
		return rawWrite(c.fd, b)
	}
	s := c.Sec
	// After the handshake's last flight (l.tpend bytes of l.tout), so that
	// both leave in one write.
	ct, err := s.tls.Seal(l.tout[:l.tpend], b)
	l.tpend = 0
	l.tout = ct[:0]
	if err != nil {
		return 0, errTLSSeal
	}
	if len(s.out) > 0 {
		s.out = append(s.out, ct...)
		return len(b), 0
	}
	n, e := rawWrite(c.fd, ct)
	if e != 0 {
		if !WouldBlock(e) {
			return 0, e
		}
		n = 0
	}
	if n < len(ct) {
		s.out = append(s.out, ct[n:]...)
		l.WantOut(c)
	}
	return len(b), 0
}

// flushSealed writes c's pending ciphertext and reports whether all of it
// is out (false also when the connection was lost).
func (l *Loop) flushSealed(c *Conn) bool {
	s := c.Sec
	if s == nil || len(s.out) == 0 {
		return true
	}
	n, e := rawWrite(c.fd, s.out)
	if e != 0 {
		if !WouldBlock(e) {
			l.Drop(c, Reason("write: "+e.Error()))
		}
		return false
	}
	s.out = s.out[:copy(s.out, s.out[n:])]
	if len(s.out) > 0 {
		return false
	}
	if cap(s.out) > 64<<10 {
		s.out = nil // a burst's buffer; steady state needs little
	}
	if c.state < StateOpen {
		// During the handshake nothing else waits for the socket.
		c.Flags &^= FlagWantOut
		if err := EpollCtl(l.EpollFD, unix.EPOLL_CTL_MOD, c.fd, c.gen, EvIn); err != nil {
			l.Drop(c, Reason("epoll_ctl: "+ErrnoText(err)))
			return false
		}
	}
	return true
}

// closeNotify sends a TLS connection's close_notify, best effort (the
// socket is closed right after): the polite end a server expects.
func (l *Loop) closeNotify(c *Conn) {
	if c.Sec == nil || c.Sec.tls == nil || len(c.Sec.out) > 0 {
		return
	}
	ct, err := c.Sec.tls.Close(l.tout[:0])
	l.tout = ct[:0]
	if err == nil && len(ct) > 0 {
		_, _ = rawWrite(c.fd, ct) // best effort, as above
	}
}

// dropSec releases c's TLS session and inflate state (the socket is
// closing).
func dropSec(c *Conn) {
	s := c.Sec
	if s == nil {
		return
	}
	if s.tls != nil {
		s.tls.Abort()
	}
	s.dec.Discard()
	c.Sec = nil
}

// hsPool is a loop's TLS handshake coroutines (loop.tpool; the loop
// closes it when it exits).
type hsPool = wstls.Pool

// startTLS begins the TLS handshake of a connection whose TCP connect just
// completed.
func (l *Loop) startTLS(c *Conn, t *target) {
	c.state = stTLS
	c.Sec = &connSec{tls: l.tpool.NewClient(t.tls)}
	if err := EpollCtl(l.EpollFD, unix.EPOLL_CTL_MOD, c.fd, c.gen, EvIn); err != nil {
		l.attemptFailed(c, Reason("epoll_ctl: "+ErrnoText(err)))
		return
	}
	l.handshakeStep(c, nil)
}

// readHandshake hands the ciphertext the socket has to the TLS handshake.
func (l *Loop) readHandshake(c *Conn) {
	if l.tin == nil {
		l.tin = make([]byte, tlsReadBuf)
	}
	for c.state == stTLS {
		n, e := rawRead(c.fd, l.tin)
		if e != 0 {
			if !WouldBlock(e) {
				l.attemptFailed(c, Reason("read: "+e.Error()))
			}
			return
		}
		if n == 0 {
			l.attemptFailed(c, ReasonHandshakeEOF)
			return
		}
		l.handshakeStep(c, l.tin[:n])
		if n < len(l.tin) {
			return
		}
	}
}

// handshakeStep advances the TLS handshake with in (nil to start it),
// writes what it says, and sends the upgrade request once it is done: the
// handshake's last flight (the client's Finished) and the request leave
// in one write.
func (l *Loop) handshakeStep(c *Conn, in []byte) {
	out, done, err := c.Sec.tls.Handshake(l.tout[:0], in)
	l.tout = out[:0]
	if done && err == nil {
		l.tlsDone(c)
		l.tpend = len(out)
		l.sendRequest(c)
		l.tpend = 0
		return
	}
	if len(out) > 0 {
		if len(c.Sec.out) > 0 {
			c.Sec.out = append(c.Sec.out, out...)
		} else {
			n, e := rawWrite(c.fd, out)
			if e != 0 && !WouldBlock(e) {
				l.attemptFailed(c, Reason("write: "+e.Error()))
				return
			}
			if e != 0 {
				n = 0
			}
			if n < len(out) {
				c.Sec.out = append(c.Sec.out, out[n:]...)
				l.WantOut(c)
			}
		}
	}
	if err != nil {
		l.attemptFailed(c, tlsReason(err))
	}
}

// tlsDone records c's completed TLS handshake; the upgrade request is next.
func (l *Loop) tlsDone(c *Conn) {
	x := c.ext
	x.tlsAt = l.Now()
	if x.tlsAt == 0 {
		x.tlsAt = 1
	}
	x.dialer.tlsDone(c.Sec.tls.State())
	c.state = stSending
}

// tlsReason is the failure reason of a TLS error, with as few distinct
// texts as possible (they are Errors keys): a certificate problem by its
// kind, anything else by crypto/tls's message.
func tlsReason(err error) Reason {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknown):
		return "tls: x509: certificate signed by unknown authority"
	case errors.As(err, &host):
		return "tls: x509: certificate is not valid for the server name"
	case errors.As(err, &invalid):
		return Reason("tls: " + invalid.Error())
	}
	msg := strings.TrimPrefix(err.Error(), "tls handshake: ")
	if !strings.HasPrefix(msg, "tls: ") {
		msg = "tls: " + msg
	}
	return Reason(msg)
}

// readSealed reads what a TLS connection's socket has, decrypts it and
// hands the plaintext on: to the upgrade response while it is awaited,
// then to the frame decoder. A connection it opens (the 101 response)
// drops its record ciphers until it is used (wstls.Session.Idle): after a
// storm, a TLS connection keeps little more than a plain one.
func (l *Loop) readSealed(c *Conn) {
	if c.state != stReceiving {
		l.readRecords(c)
		return
	}
	s := c.Sec.tls
	l.readRecords(c)
	if c.state == StateOpen && c.Sec != nil && c.Sec.tls == s {
		s.Idle()
	}
}

// readRecords is readSealed's loop.
func (l *Loop) readRecords(c *Conn) {
	if l.tin == nil {
		l.tin = make([]byte, tlsReadBuf)
	}
	s := c.Sec.tls
	for {
		n, at, e := l.read(c, l.tin)
		if e != 0 {
			if !WouldBlock(e) {
				l.Drop(c, Reason("read: "+e.Error()))
			}
			return
		}
		if n == 0 {
			if c.state >= stGreeting {
				l.Drop(c, ReasonEOF)
			} else {
				l.Drop(c, ReasonHandshakeEOF)
			}
			return
		}
		s.Feed(l.tin[:n])
		for {
			p, err := s.Next()
			if err != nil {
				if errors.Is(err, io.EOF) {
					l.Drop(c, ReasonEOF)
				} else {
					l.Drop(c, tlsReason(err))
				}
				return
			}
			if p == nil {
				break
			}
			switch c.state {
			case stReceiving:
				l.responseBytes(c, p)
			case stGreeting, StateOpen:
				off := 0
				if c.ext != nil && len(c.ext.pend) > 0 {
					off = copy(l.rbuf, c.ext.pend)
					c.ext.pend = c.ext.pend[:0]
					if c.ext.idle() {
						l.putExt(c)
					}
				}
				k := copy(l.rbuf[off:], p)
				l.feed(c, l.rbuf[:off+k], at)
			}
			if c.state < stReceiving {
				return
			}
		}
		if n < len(l.tin) && !l.peerShut {
			return
		}
	}
}
