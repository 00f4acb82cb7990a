package autobahn

import (
	"encoding/binary"
	"runtime"
	"time"
)

// What cases call on a session (Autobahn's protocol API): expected
// outcomes, frames and messages written (whole, fragmented, chopped,
// compressed), the closing handshake started or the connection failed or
// dropped, and how its loss is recorded. session.go runs the session;
// session_receive.go handles what the server sends.

// expect adds an acceptable outcome.
func (s *session) expect(v Verdict, evs ...event) {
	s.expected = append(s.expected, outcome{verdict: v, events: evs})
}

// send writes frames in order.
func (s *session) send(fs ...frame) {
	for _, f := range fs {
		s.write(f.encode(), f.chop, f.sync)
	}
}

// sendMessage writes a message, in one frame or in fragments of size
// fragSize (Autobahn's sendMessage with fragmentSize).
func (s *session) sendMessage(p string, binaryMsg bool, fragSize int) {
	op := opText
	if binaryMsg {
		op = opBinary
	}
	if fragSize <= 0 || len(p) <= fragSize {
		s.send(fr(op, p))
		return
	}
	// The frames go out in one write, as Autobahn's sendMessage queues
	// them without sync.
	var b []byte
	for i := 0; i < len(p); i += fragSize {
		end := min(i+fragSize, len(p))
		f := fr(opCont, p[i:end])
		if i == 0 {
			f.op = op
		}
		f.fin = end == len(p)
		b = append(b, f.encode()...)
	}
	s.write(b, 0, false)
}

// sendCompressed sends one compressed message (RSV1 on its first frame),
// its compressed payload cut into frames of frag bytes when frag > 0
// (Autobahn's autoFragmentSize).
func (s *session) sendCompressed(msg []byte, binaryMsg bool, frag int) {
	p, err := s.pmd.compress(msg)
	if err != nil {
		s.result = "client could not compress: " + err.Error()
		s.sendClose(closeNormal, "")
		return
	}
	op := opText
	if binaryMsg {
		op = opBinary
	}
	if frag <= 0 {
		frag = len(p)
	}
	for i := 0; i == 0 || i < len(p); i += frag {
		end := min(i+frag, len(p))
		f := frame{op: opCont, fin: end == len(p), payload: p[i:end]}
		if i == 0 {
			f.op, f.rsv = op, 4
		}
		s.send(f)
	}
}

// write puts b on the wire, in chops of chop bytes if chop > 0, each chop
// (or the whole, when sync) followed by a short pause.
func (s *session) write(b []byte, chop int, sync bool) {
	if s.state == stateClosed {
		return
	}
	_ = s.conn.SetWriteDeadline(s.deadline) // an error shows up in Write
	put := func(p []byte) {
		if _, err := s.conn.Write(p); err != nil && s.writeErr == nil {
			s.writeErr = err
		}
	}
	switch {
	case chop > 0:
		for i := 0; i < len(b); i += chop {
			put(b[i:min(i+chop, len(b))])
			pause()
		}
	case sync:
		put(b)
		pause()
	default:
		put(b)
	}
}

// pause waits queuedWriteDelay between chopped writes. It yields instead
// of sleeping: a timer sleep lasts 50 µs-1 ms here, which would make the
// 16384 chops of 9.5.1 take seconds instead of Autobahn's fraction.
func pause() {
	end := time.Now().Add(queuedWriteDelay)
	for time.Now().Before(end) {
		runtime.Gosched()
	}
}

// sendClose starts the closing handshake with a code (Autobahn's public
// sendClose); code < 0 sends a close frame without a body.
func (s *session) sendClose(code int, reason string) {
	s.sendCloseFrame(code, []byte(reason), false)
}

// sendCloseFrame writes a close frame unless the handshake is already under
// way. code < 0 sends no code (and no reason).
func (s *session) sendCloseFrame(code int, reason []byte, isReply bool) {
	if s.state != stateOpen {
		return
	}
	var p []byte
	if code >= 0 {
		p = binary.BigEndian.AppendUint16(nil, uint16(code))
		p = append(p, reason...)
	}
	s.write(fr(opClose, string(p)).encode(), 0, false)
	s.localCloseCode = code
	s.closedByMe = !isReply
	s.state = stateClosing
	if s.closedByMe {
		s.closeHSTimer = s.after(closeHandshakeTimeout, func() {
			s.wasClean = false
			s.wasNotCleanReason = "peer did not respond (in time) in closing handshake"
			s.dropConnection()
		})
	}
}

// killAfter fails the connection after d if it is still up (Autobahn's
// killAfter: with failByDrop off this sends close 1001).
func (s *session) killAfter(d time.Duration) {
	s.after(d, func() {
		s.killed = s.state == stateOpen // else the closing handshake is already under way
		s.failConnection(closeGoingAway, "Going Away")
	})
}

// closeAfter starts the closing handshake after d (a close frame without
// a code, as Autobahn's sendClose() without arguments).
func (s *session) closeAfter(d time.Duration) {
	s.after(d, func() { s.sendClose(-1, "") })
}

// continueLater runs fn after d if the connection is still up.
func (s *session) continueLater(d time.Duration, fn func()) { s.after(d, fn) }

// failConnection starts the closing handshake with code and reason, unless
// it is under way or over.
func (s *session) failConnection(code int, reason string) {
	if s.state == stateClosed {
		return
	}
	s.failedByMe = true
	if s.state != stateClosing {
		s.sendCloseFrame(code, []byte(reason), false)
	}
}

// dropConnection closes the TCP connection without a closing handshake.
func (s *session) dropConnection() {
	if s.state == stateClosed {
		return
	}
	s.droppedByMe = true
	s.state = stateClosed
	_ = s.conn.Close() // we are abandoning the connection; nothing to report
}

// protocolViolation fails the connection with code, the first violation's
// reason kept for the result.
func (s *session) protocolViolation(code int, reason string) {
	if s.violation == "" {
		s.violation = reason
	}
	s.failConnection(code, reason)
}

// connectionLost records the end of the TCP connection and why.
func (s *session) connectionLost(err error) {
	if s.dropTimer != nil {
		s.dropTimer.cancelled = true
	}
	s.state = stateClosed
	s.lostErr = err
	if !s.wasClean && !s.droppedByMe && s.wasNotCleanReason == "" {
		s.wasNotCleanReason = "peer dropped the TCP connection without previous WebSocket closing handshake"
	}
}

// dropped reports whether the server dropped TCP without a closing
// handshake (no close frame from it, nothing dropped by the client): how
// a dying server's connections end.
func (s *session) dropped() bool {
	return s.lostErr != nil && !s.gotClose && !s.droppedByMe && !s.wasClean
}
