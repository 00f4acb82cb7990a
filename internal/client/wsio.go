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

// ReadFrames reads what the socket has and decodes it: one read, unless
// the read filled the buffer (then the socket may hold more, and with
// edge-triggered epoll no new event would say so).
func (l *Loop) ReadFrames(c *Conn) {
	if c.Sec != nil && c.Sec.tls != nil {
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
			if !WouldBlock(e) {
				l.Drop(c, Reason("read: "+e.Error()))
			}
			return
		}
		if n == 0 {
			l.Drop(c, ReasonEOF)
			return
		}
		if off > 0 {
			c.ext.pend = c.ext.pend[:0]
			if c.ext.idle() {
				l.putExt(c)
			}
		}
		l.feed(c, l.rbuf[:off+n], at)
		if (n < len(l.rbuf)-off && !l.peerShut) || c.state < stGreeting {
			return
		}
	}
}

// feed decodes b, a piece of c's input stream, and acts on it. now is
// when b arrived: the read's clock, or on a stamped connection the
// kernel's receive time (rxstamp.go), which may be well before the read;
// a run that writes in response takes l.now() for the write's time.
func (l *Loop) feed(c *Conn, b []byte, now int64) {
	for len(b) > 0 {
		// The event is decoded into a loop field: a pointer to a local
		// passed to an interface method (onData) would escape, one
		// allocation per event.
		var n int
		var err error
		l.ev, n, err = c.dec.next(b)
		ev := &l.ev
		if err != nil {
			l.Drop(c, Reason("protocol: "+err.Error()))
			return
		}
		if n == 0 {
			x := l.GetExt(c)
			x.pend = append(x.pend[:0], b...)
			return
		}
		b = b[n:]
		switch ev.Kind {
		case EventData:
			l.onData(c, ev, now)
		case evControl:
			l.onControl(c, ev.Op, ev.Data)
		}
		if c.state < stGreeting {
			return
		}
	}
}

// onData handles a chunk of a data message. A compressed message is
// inflated (whole, at its end) before anyone sees it: with server context
// takeover every one must be, even those nobody checks.
func (l *Loop) onData(c *Conn, ev *Event, now int64) {
	if ev.comp {
		l.wireIn += int64(len(ev.Data))
		out, err := c.Sec.dec.Feed(l.ibuf[:0], ev.Data, ev.End)
		if err != nil {
			l.Drop(c, Reason("inflate: "+err.Error()))
			return
		}
		if !ev.End {
			return
		}
		l.ibuf = out[:0]
		l.payloadIn += int64(len(out))
		l.evz = Event{Kind: EventData, Op: ev.Op, End: true, Data: out, Total: int64(len(out))}
		ev = &l.evz
	} else {
		l.wireIn += int64(len(ev.Data))
		l.payloadIn += int64(len(ev.Data))
	}
	if s := ProtoOf(c); s != nil {
		l.protoData(c, s, ev, now) // whole messages, through the protocol
		return
	}
	if c.Skip > 0 {
		if ev.End {
			c.Skip--
		}
		return
	}
	if r := l.ph; r != nil {
		r.OnData(l, c, ev, now)
	}
	// Without a phase, a message nobody asked for; it is ignored.
}

// onControl answers pings and handles a server's close.
func (l *Loop) onControl(c *Conn, op byte, payload []byte) {
	switch op {
	case OpPing:
		l.SendControl(c, opPong, payload)
	case opPong:
		if r := l.ph; r != nil {
			r.OnPong(l, c, payload)
		}
	case OpClose:
		reason := ReasonServerClose
		if len(payload) >= 2 {
			code := binary.BigEndian.Uint16(payload)
			reason = ReasonServerClose + Reason(" "+Itoa(int(code)))
			if c.state == stGreeting {
				if w := serverWords(payload[2:]); w != "" {
					reason += Reason(": " + w) // why the greeting ended, in the server's words
				}
			}
			if n, ok := l.cl.proto.(proto.CloseNamer); ok && ProtoOf(c) != nil {
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
		if c.Flags&(FlagDataPend|FlagWantOut|FlagClosing) == 0 {
			l.cbuf = appendControl(l.cbuf[:0], OpClose, payload, uint32(l.rng.Uint64()))
			// Best effort reply: the connection is dropped right after.
			_, _ = l.Write(c, l.cbuf)
		}
		l.drop(c, reason, true)
	}
}

// lost drops a connection that failed, charging the failure to the phase
// that was using it.
func (l *Loop) Drop(c *Conn, reason Reason) { l.drop(c, reason, byPeer(reason)) }

// drop is lost; peer says that the server closed or reset the connection
// (counted in the loop's PeerCloses unless the client had asked for it).
func (l *Loop) drop(c *Conn, reason Reason, peer bool) {
	if c.state == stClosed {
		return
	}
	if c.state != StateOpen {
		l.attemptFailed(c, reason) // a handshake (or a protocol's greeting): its dialer's
		return
	}
	r := l.ph
	flags := c.Flags
	// A close frame answering the client's own close is no peer's doing;
	// the end of the stream or a reset while the client waits for that
	// answer is (a dead server's connections end so in a close phase).
	// Counted before the connection leaves Client.Conns: whoever sees the
	// connection gone sees its close counted.
	if peer && (flags&FlagClosing == 0 || !strings.HasPrefix(string(reason), string(ReasonServerClose))) {
		l.counts.peer.add(time.Now().UnixNano())
	}
	l.CloseFD(c)
	if r != nil {
		r.Lost(l, c, flags, reason)
	}
	if l.rc != nil && flags&FlagClosing == 0 {
		l.rc.dropped(l, c, l.Now()) // the pool's: it comes back by the policy
	}
}

// appendControl appends a masked control frame.
func appendControl(dst []byte, op byte, payload []byte, key uint32) []byte {
	dst = AppendClientHeader(dst, op, len(payload), key)
	n := len(dst)
	dst = append(dst, payload...)
	MaskCopy(dst[n:], dst[n:], key, 0)
	return dst
}

// SendControl writes a control frame, or queues it behind pending output.
func (l *Loop) SendControl(c *Conn, op byte, payload []byte) {
	l.cbuf = appendControl(l.cbuf[:0], op, payload, uint32(l.rng.Uint64()))
	b := l.cbuf
	if c.Flags&FlagWantOut == 0 {
		n, e := l.Write(c, b)
		if e != 0 && !WouldBlock(e) {
			l.Drop(c, Reason("write: "+e.Error()))
			return
		}
		b = b[n:]
		if len(b) == 0 {
			return
		}
	}
	x := l.GetExt(c)
	x.Out = append(x.Out, b...)
	l.WantOut(c)
}

// WantOut asks epoll for EPOLLOUT on c.
func (l *Loop) WantOut(c *Conn) {
	if c.Flags&FlagWantOut != 0 {
		return
	}
	c.Flags |= FlagWantOut
	if err := EpollCtl(l.EpollFD, unix.EPOLL_CTL_MOD, c.fd, c.gen, evInOut); err != nil {
		l.Drop(c, Reason("epoll_ctl: "+ErrnoText(err)))
	}
}

// flush writes c's pending output in order: the rest of a started data
// frame, queued control frames, then a queued data frame.
func (l *Loop) flush(c *Conn) {
	if !l.flushSealed(c) {
		return
	}
	for {
		var b []byte
		data := false
		switch {
		case c.Flags&FlagDataPend != 0 && (c.WOff > 0 || c.ext == nil || len(c.ext.Out) == 0):
			if l.ph != nil {
				l.FrameConn = c
				b = l.ph.Frame(l, c.WKey, int(c.WOff))
			}
			if b == nil { // cannot happen: runs spill pending frames when they finish
				c.Flags &^= FlagDataPend
				continue
			}
			data = true
		case c.ext != nil && len(c.ext.Out) > 0:
			b = c.ext.Out
		default:
			c.Flags &^= FlagWantOut
			if c.ext != nil && c.ext.idle() {
				l.putExt(c)
			}
			if err := EpollCtl(l.EpollFD, unix.EPOLL_CTL_MOD, c.fd, c.gen, EvIn); err != nil {
				l.Drop(c, Reason("epoll_ctl: "+ErrnoText(err)))
				return
			}
			if r := l.ph; r != nil {
				r.Resume(l, c) // messages that waited for the socket
			}
			return
		}
		n, e := l.Write(c, b)
		if e != 0 {
			if !WouldBlock(e) {
				l.Drop(c, Reason("write: "+e.Error()))
			}
			return
		}
		if c.Sec != nil && len(c.Sec.out) > 0 {
			// A TLS connection took all of b, but the socket did not:
			// the rest waits as ciphertext for the next EPOLLOUT.
			if data {
				c.Flags &^= FlagDataPend
				c.WOff = 0
			} else {
				c.ext.Out = c.ext.Out[:0]
			}
			return
		}
		if data {
			if n < len(b) {
				c.WOff += int32(n)
				return
			}
			c.Flags &^= FlagDataPend
			c.WOff = 0
			continue
		}
		c.ext.Out = c.ext.Out[:copy(c.ext.Out, c.ext.Out[n:])]
		if n < len(b) {
			return
		}
	}
}

// Itoa formats a small non-negative integer without fmt.
func Itoa(v int) string {
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

// WriteOrQueue writes b, data frames of a run, to c; what the socket does not take is queued for
// flush. It reports whether everything was written.
func (l *Loop) WriteOrQueue(c *Conn, b []byte) bool {
	n, e := l.Write(c, b)
	if e != 0 {
		if !WouldBlock(e) {
			l.Drop(c, Reason("write: "+e.Error()))
			return false
		}
		n = 0
	}
	if n == len(b) {
		return true
	}
	x := l.GetExt(c)
	x.Out = append(x.Out, b[n:]...)
	l.WantOut(c)
	return false
}

// closeNormal is the close code of a connection that did its job.
const CloseNormal = 1000

// CloseConn says goodbye on c — a close frame with code and TLS's
// close_notify, best effort: the connection is closed right after — and
// closes it. Queued output is not waited for.
func (l *Loop) CloseConn(c *Conn, code uint16) {
	if c.state == StateOpen && c.Flags&(FlagDataPend|FlagWantOut) == 0 {
		l.cbuf = appendControl(l.cbuf[:0], OpClose, []byte{byte(code >> 8), byte(code)}, uint32(l.rng.Uint64()))
		_, _ = l.Write(c, l.cbuf) // best effort: the connection is closed right after
		l.closeNotify(c)
	}
	l.CloseFD(c)
}

// Spill turns c's pending data frame into queued output bytes, so that it
// is finished after the phase (and its frame) is gone.
func (l *Loop) Spill(r LoopRun, c *Conn) {
	l.FrameConn = c
	b := r.Frame(l, c.WKey, int(c.WOff))
	x := l.GetExt(c)
	if c.WOff > 0 {
		out := make([]byte, 0, len(b)+len(x.Out))
		out = append(out, b...)
		x.Out = append(out, x.Out...)
	} else {
		x.Out = append(x.Out, b...)
	}
	c.Flags &^= FlagDataPend
	c.WOff = 0
}
