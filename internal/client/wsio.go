package client

import (
	"encoding/binary"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/proto"
)

// The loop's WebSocket stream, below every kind: reading and decoding the
// server's frames (answering pings, handling its close, dropping a
// connection that failed), writing control frames and a connection's
// pending output in order. It names no kind: runs see data through
// loopRun.onData and pongs through loopRun.onPong.

// readFrames reads what the socket has and decodes it: one read, unless
// the read filled the buffer (then the socket may hold more, and with
// edge-triggered epoll no new event would say so).
func (l *loop) readFrames(c *conn) {
	if c.sec != nil && c.sec.tls != nil {
		l.readSealed(c)
		return
	}
	for {
		off := 0
		if c.ext != nil && len(c.ext.pend) > 0 {
			off = copy(l.rbuf, c.ext.pend)
		}
		n, at, e := l.read(c, l.rbuf[off:])
		if e != 0 {
			if !wouldBlock(e) {
				l.lost(c, Reason("read: "+e.Error()))
			}
			return
		}
		if n == 0 {
			l.lost(c, ReasonEOF)
			return
		}
		if off > 0 {
			c.ext.pend = c.ext.pend[:0]
			if c.ext.idle() {
				l.putExt(c)
			}
		}
		l.feed(c, l.rbuf[:off+n], at)
		if n < len(l.rbuf)-off || c.state < stGreeting {
			return
		}
	}
}

// feed decodes b, a piece of c's input stream, and acts on it. now is
// when b arrived: the read's clock, or on a stamped connection the
// kernel's receive time (rxstamp.go), which may be well before the read;
// a run that writes in response takes l.now() for the write's time.
func (l *loop) feed(c *conn, b []byte, now int64) {
	for len(b) > 0 {
		// The event is decoded into a loop field: a pointer to a local
		// passed to an interface method (onData) would escape, one
		// allocation per event.
		var n int
		var err error
		l.ev, n, err = c.dec.next(b)
		ev := &l.ev
		if err != nil {
			l.lost(c, Reason("protocol: "+err.Error()))
			return
		}
		if n == 0 {
			x := l.getExt(c)
			x.pend = append(x.pend[:0], b...)
			return
		}
		b = b[n:]
		switch ev.kind {
		case evData:
			l.onData(c, ev, now)
		case evControl:
			l.onControl(c, ev.op, ev.data)
		}
		if c.state < stGreeting {
			return
		}
	}
}

// onData handles a chunk of a data message. A compressed message is
// inflated (whole, at its end) before anyone sees it: with server context
// takeover every one must be, even those nobody checks.
func (l *loop) onData(c *conn, ev *event, now int64) {
	if ev.comp {
		l.wireIn += int64(len(ev.data))
		out, err := c.sec.dec.Feed(l.ibuf[:0], ev.data, ev.end)
		if err != nil {
			l.lost(c, Reason("inflate: "+err.Error()))
			return
		}
		if !ev.end {
			return
		}
		l.ibuf = out[:0]
		l.payloadIn += int64(len(out))
		l.evz = event{kind: evData, op: ev.op, end: true, data: out, total: int64(len(out))}
		ev = &l.evz
	} else {
		l.wireIn += int64(len(ev.data))
		l.payloadIn += int64(len(ev.data))
	}
	if s := protoOf(c); s != nil {
		l.protoData(c, s, ev, now) // whole messages, through the protocol
		return
	}
	if c.skip > 0 {
		if ev.end {
			c.skip--
		}
		return
	}
	if r := l.ph; r != nil {
		r.onData(l, c, ev, now)
	}
	// Without a phase, a message nobody asked for; it is ignored.
}

// onControl answers pings and handles a server's close.
func (l *loop) onControl(c *conn, op byte, payload []byte) {
	switch op {
	case opPing:
		l.sendControl(c, opPong, payload)
	case opPong:
		if r := l.ph; r != nil {
			r.onPong(l, c, payload)
		}
	case opClose:
		reason := ReasonServerClose
		if len(payload) >= 2 {
			code := binary.BigEndian.Uint16(payload)
			reason = ReasonServerClose + Reason(" "+itoa(int(code)))
			if c.state == stGreeting {
				if w := serverWords(payload[2:]); w != "" {
					reason += Reason(": " + w) // why the greeting ended, in the server's words
				}
			}
			if n, ok := l.cl.proto.(proto.CloseNamer); ok && protoOf(c) != nil {
				if r, refused := n.CloseReason(code, payload[2:]); r != "" {
					reason = Reason(r) // the protocol's own name for its code
					if refused {
						reason = refuse(c, Reason(r))
					}
				}
			}
			payload = payload[:2]
		} else {
			payload = nil
		}
		if c.flags&(fDataPend|fWantOut|fClosing) == 0 {
			l.cbuf = appendControl(l.cbuf[:0], opClose, payload, uint32(l.rng.Uint64()))
			// Best effort reply: the connection is dropped right after.
			_, _ = l.write(c, l.cbuf)
		}
		l.drop(c, reason, true)
	}
}

// lost drops a connection that failed, charging the failure to the phase
// that was using it.
func (l *loop) lost(c *conn, reason Reason) { l.drop(c, reason, byPeer(reason)) }

// drop is lost; peer says that the server closed or reset the connection
// (counted in the loop's PeerCloses unless the client had asked for it).
func (l *loop) drop(c *conn, reason Reason, peer bool) {
	if c.state == stClosed {
		return
	}
	if c.state != stOpen {
		l.attemptFailed(c, reason) // a handshake (or a protocol's greeting): its dialer's
		return
	}
	r := l.ph
	flags := c.flags
	l.closeFD(c)
	// A close frame answering the client's own close is no peer's doing;
	// the end of the stream or a reset while the client waits for that
	// answer is (a dead server's connections end so in a close phase).
	if peer && (flags&fClosing == 0 || !strings.HasPrefix(string(reason), string(ReasonServerClose))) {
		l.counts.peer.add(time.Now().UnixNano())
	}
	if r != nil {
		r.lost(l, c, flags, reason)
	}
	if l.rc != nil && flags&fClosing == 0 {
		l.rc.dropped(l, c, l.now()) // the pool's: it comes back by the policy
	}
}

// appendControl appends a masked control frame.
func appendControl(dst []byte, op byte, payload []byte, key uint32) []byte {
	dst = appendClientHeader(dst, op, len(payload), key)
	n := len(dst)
	dst = append(dst, payload...)
	maskCopy(dst[n:], dst[n:], key, 0)
	return dst
}

// sendControl writes a control frame, or queues it behind pending output.
func (l *loop) sendControl(c *conn, op byte, payload []byte) {
	l.cbuf = appendControl(l.cbuf[:0], op, payload, uint32(l.rng.Uint64()))
	b := l.cbuf
	if c.flags&fWantOut == 0 {
		n, e := l.write(c, b)
		if e != 0 && !wouldBlock(e) {
			l.lost(c, Reason("write: "+e.Error()))
			return
		}
		b = b[n:]
		if len(b) == 0 {
			return
		}
	}
	x := l.getExt(c)
	x.out = append(x.out, b...)
	l.wantOut(c)
}

// wantOut asks epoll for EPOLLOUT on c.
func (l *loop) wantOut(c *conn) {
	if c.flags&fWantOut != 0 {
		return
	}
	c.flags |= fWantOut
	if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, c.gen, evInOut); err != nil {
		l.lost(c, Reason("epoll_ctl: "+errnoText(err)))
	}
}

// flush writes c's pending output in order: the rest of a started data
// frame, queued control frames, then a queued data frame.
func (l *loop) flush(c *conn) {
	if !l.flushSealed(c) {
		return
	}
	for {
		var b []byte
		data := false
		switch {
		case c.flags&fDataPend != 0 && (c.woff > 0 || c.ext == nil || len(c.ext.out) == 0):
			if l.ph != nil {
				l.fc = c
				b = l.ph.frame(l, c.wkey, int(c.woff))
			}
			if b == nil { // cannot happen: runs spill pending frames when they finish
				c.flags &^= fDataPend
				continue
			}
			data = true
		case c.ext != nil && len(c.ext.out) > 0:
			b = c.ext.out
		default:
			c.flags &^= fWantOut
			if c.ext != nil && c.ext.idle() {
				l.putExt(c)
			}
			if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, c.gen, evIn); err != nil {
				l.lost(c, Reason("epoll_ctl: "+errnoText(err)))
				return
			}
			if r := l.ph; r != nil {
				r.resume(l, c) // messages that waited for the socket
			}
			return
		}
		n, e := l.write(c, b)
		if e != 0 {
			if !wouldBlock(e) {
				l.lost(c, Reason("write: "+e.Error()))
			}
			return
		}
		if c.sec != nil && len(c.sec.out) > 0 {
			// A TLS connection took all of b, but the socket did not:
			// the rest waits as ciphertext for the next EPOLLOUT.
			if data {
				c.flags &^= fDataPend
				c.woff = 0
			} else {
				c.ext.out = c.ext.out[:0]
			}
			return
		}
		if data {
			if n < len(b) {
				c.woff += int32(n)
				return
			}
			c.flags &^= fDataPend
			c.woff = 0
			continue
		}
		c.ext.out = c.ext.out[:copy(c.ext.out, c.ext.out[n:])]
		if n < len(b) {
			return
		}
	}
}

// itoa formats a small non-negative integer without fmt.
func itoa(v int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(b[i:])
}

// writeOrQueue writes b, data frames of a run, to c; what the socket does not take is queued for
// flush. It reports whether everything was written.
func (l *loop) writeOrQueue(c *conn, b []byte) bool {
	n, e := l.write(c, b)
	if e != 0 {
		if !wouldBlock(e) {
			l.lost(c, Reason("write: "+e.Error()))
			return false
		}
		n = 0
	}
	if n == len(b) {
		return true
	}
	x := l.getExt(c)
	x.out = append(x.out, b[n:]...)
	l.wantOut(c)
	return false
}

// closeNormal is the close code of a connection that did its job.
const closeNormal = 1000

// closeConn says goodbye on c — a close frame with code and TLS's
// close_notify, best effort: the connection is closed right after — and
// closes it. Queued output is not waited for.
func (l *loop) closeConn(c *conn, code uint16) {
	if c.state == stOpen && c.flags&(fDataPend|fWantOut) == 0 {
		l.cbuf = appendControl(l.cbuf[:0], opClose, []byte{byte(code >> 8), byte(code)}, uint32(l.rng.Uint64()))
		_, _ = l.write(c, l.cbuf) // best effort: the connection is closed right after
		l.closeNotify(c)
	}
	l.closeFD(c)
}

// spill turns c's pending data frame into queued output bytes, so that it
// is finished after the phase (and its frame) is gone.
func (l *loop) spill(r loopRun, c *conn) {
	l.fc = c
	b := r.frame(l, c.wkey, int(c.woff))
	x := l.getExt(c)
	if c.woff > 0 {
		out := make([]byte, 0, len(b)+len(x.out))
		out = append(out, b...)
		x.out = append(out, x.out...)
	} else {
		x.out = append(x.out, b...)
	}
	c.flags &^= fDataPend
	c.woff = 0
}
