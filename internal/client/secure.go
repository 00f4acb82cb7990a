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
	tls     *wstls.Session // nil = plain TCP
	out     []byte         // sealed records not yet written, before any other output
	proto   *proto.Conn    // the protocol's state (protocol.go); nil = raw messages
	deflate bool           // permessage-deflate was negotiated
	bits    uint8          // negotiated client_max_window_bits (8..15), for pre-computed frames
	dec     pmdeflate.Decompressor
}

// errTLSSeal stands for a Seal failure where a write's errno is expected.
const errTLSSeal = syscall.EPROTO

// write writes b to c: directly on a plain connection; sealed on a TLS one,
// where it always takes all of b (records cannot be sealed again, so
// whatever the socket refuses is kept as ciphertext in c.sec.out and
// written first when the socket is writable; it registers EPOLLOUT for
// it). len(b) must be > 0.
func (l *loop) write(c *conn, b []byte) (int, syscall.Errno) {
	if c.sec == nil {
		return rawWrite(c.fd, b)
	}
	if p := c.sec.proto; p != nil {
		p.LastSent = l.now() // the protocol's keepalives count from it
	}
	if c.sec.tls == nil {
		return rawWrite(c.fd, b)
	}
	s := c.sec
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
		if !wouldBlock(e) {
			return 0, e
		}
		n = 0
	}
	if n < len(ct) {
		s.out = append(s.out, ct[n:]...)
		l.wantOut(c)
	}
	return len(b), 0
}

// flushSealed writes c's pending ciphertext and reports whether all of it
// is out (false also when the connection was lost).
func (l *loop) flushSealed(c *conn) bool {
	s := c.sec
	if s == nil || len(s.out) == 0 {
		return true
	}
	n, e := rawWrite(c.fd, s.out)
	if e != 0 {
		if !wouldBlock(e) {
			l.lost(c, Reason("write: "+e.Error()))
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
	if c.state < stOpen {
		// During the handshake nothing else waits for the socket.
		c.flags &^= fWantOut
		if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, c.gen, evIn); err != nil {
			l.lost(c, Reason("epoll_ctl: "+errnoText(err)))
			return false
		}
	}
	return true
}

// closeNotify sends a TLS connection's close_notify, best effort (the
// socket is closed right after): the polite end a server expects.
func (l *loop) closeNotify(c *conn) {
	if c.sec == nil || c.sec.tls == nil || len(c.sec.out) > 0 {
		return
	}
	ct, err := c.sec.tls.Close(l.tout[:0])
	l.tout = ct[:0]
	if err == nil && len(ct) > 0 {
		_, _ = rawWrite(c.fd, ct) // best effort, as above
	}
}

// dropSec releases c's TLS session and inflate state (the socket is
// closing).
func dropSec(c *conn) {
	s := c.sec
	if s == nil {
		return
	}
	if s.tls != nil {
		s.tls.Abort()
	}
	s.dec.Discard()
	c.sec = nil
}

// hsPool is a loop's TLS handshake coroutines (loop.tpool; the loop
// closes it when it exits).
type hsPool = wstls.Pool

// startTLS begins the TLS handshake of a connection whose TCP connect just
// completed.
func (l *loop) startTLS(c *conn, t *target) {
	c.state = stTLS
	c.sec = &connSec{tls: l.tpool.NewClient(t.tls)}
	if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, c.gen, evIn); err != nil {
		l.attemptFailed(c, Reason("epoll_ctl: "+errnoText(err)))
		return
	}
	l.handshakeStep(c, nil)
}

// readHandshake hands the ciphertext the socket has to the TLS handshake.
func (l *loop) readHandshake(c *conn) {
	if l.tin == nil {
		l.tin = make([]byte, tlsReadBuf)
	}
	for c.state == stTLS {
		n, e := rawRead(c.fd, l.tin)
		if e != 0 {
			if !wouldBlock(e) {
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
func (l *loop) handshakeStep(c *conn, in []byte) {
	out, done, err := c.sec.tls.Handshake(l.tout[:0], in)
	l.tout = out[:0]
	if done && err == nil {
		l.tlsDone(c)
		l.tpend = len(out)
		l.sendRequest(c)
		l.tpend = 0
		return
	}
	if len(out) > 0 {
		if len(c.sec.out) > 0 {
			c.sec.out = append(c.sec.out, out...)
		} else {
			n, e := rawWrite(c.fd, out)
			if e != 0 && !wouldBlock(e) {
				l.attemptFailed(c, Reason("write: "+e.Error()))
				return
			}
			if e != 0 {
				n = 0
			}
			if n < len(out) {
				c.sec.out = append(c.sec.out, out[n:]...)
				l.wantOut(c)
			}
		}
	}
	if err != nil {
		l.attemptFailed(c, tlsReason(err))
	}
}

// tlsDone records c's completed TLS handshake; the upgrade request is next.
func (l *loop) tlsDone(c *conn) {
	x := c.ext
	x.tlsAt = l.now()
	if x.tlsAt == 0 {
		x.tlsAt = 1
	}
	x.dialer.tlsDone(c.sec.tls.State())
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
func (l *loop) readSealed(c *conn) {
	if c.state != stReceiving {
		l.readRecords(c)
		return
	}
	s := c.sec.tls
	l.readRecords(c)
	if c.state == stOpen && c.sec != nil && c.sec.tls == s {
		s.Idle()
	}
}

// readRecords is readSealed's loop.
func (l *loop) readRecords(c *conn) {
	if l.tin == nil {
		l.tin = make([]byte, tlsReadBuf)
	}
	s := c.sec.tls
	for {
		n, at, e := l.read(c, l.tin)
		if e != 0 {
			if !wouldBlock(e) {
				l.lost(c, Reason("read: "+e.Error()))
			}
			return
		}
		if n == 0 {
			if c.state >= stGreeting {
				l.lost(c, ReasonEOF)
			} else {
				l.lost(c, ReasonHandshakeEOF)
			}
			return
		}
		s.Feed(l.tin[:n])
		for {
			p, err := s.Next()
			if err != nil {
				if errors.Is(err, io.EOF) {
					l.lost(c, ReasonEOF)
				} else {
					l.lost(c, tlsReason(err))
				}
				return
			}
			if p == nil {
				break
			}
			switch c.state {
			case stReceiving:
				l.responseBytes(c, p)
			case stGreeting, stOpen:
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
		if n < len(l.tin) {
			return
		}
	}
}
