package autobahn

import (
	"encoding/binary"
	"unicode/utf8"
)

// What the server sends, as the session receives it: frames checked
// against RFC 6455 and 7692 (reserved bits, opcodes, fragmentation,
// UTF-8 failing fast, close codes), messages and pongs recorded as
// events, the closing handshake answered, and the case finished once its
// expected events are in.

// processFrame checks one frame from the server (a violation fails the
// connection with its reason) and hands it on by opcode.
func (s *session) processFrame(f rxFrame) {
	bad := ""
	// RSV1 marks a compressed message: only on its first frame, and only
	// with permessage-deflate negotiated (RFC 7692 6).
	rsv1OK := s.pmd != nil && f.rsv == 4 && (f.op == opText || f.op == opBinary) && !s.inMsg
	switch {
	case f.rsv != 0 && !rsv1OK:
		bad = "RSV != 0 and no extension negotiated"
	case f.masked:
		bad = "masked server-to-client frame"
	case f.op > 7 && !f.fin:
		bad = "fragmented control frame"
	case f.op > 7 && len(f.payload) > 125:
		bad = "control frame with payload length > 125 octets"
	case f.op > 7 && f.op != opClose && f.op != opPing && f.op != opPong:
		bad = "control frame using reserved opcode"
	case f.op == opClose && len(f.payload) == 1:
		bad = "received close control frame with payload len 1"
	case f.op > 2 && f.op < 8:
		bad = "data frame using reserved opcode"
	case f.op == opCont && !s.inMsg:
		bad = "received continuation data frame outside fragmented message"
	case f.op > 0 && f.op < 3 && s.inMsg:
		bad = "received non-continuation data frame while inside fragmented message"
	case f.long:
		bad = "invalid data frame length (not using minimal length encoding)"
	}
	if bad != "" {
		s.protocolViolation(closeProtocolError, bad)
		// Keep reading for the close reply, but drop the frame itself
		// unless it is the close.
		if f.op != opClose {
			return
		}
	}
	switch f.op {
	case opClose:
		s.onCloseFrame(f.payload)
	case opPing:
		if s.state == stateOpen {
			s.write(fr(opPong, string(f.payload)).encode(), 0, false)
		}
	case opPong:
		s.received = append(s.received, event{kind: "pong", payload: f.payload})
		s.finishWhenDone()
	case opCont, opText, opBinary:
		s.onDataFrame(f)
	}
}

// onDataFrame adds a data frame to the message being received, checking
// its UTF-8 as it comes (uncompressed text), and records the message when
// its last frame is in (inflated if compressed).
func (s *session) onDataFrame(f rxFrame) {
	if !s.inMsg {
		s.inMsg = true
		s.msgOp = f.op
		s.msgBuf = nil
		s.checked = 0
		s.msgCompressed = f.rsv == 4
	}
	s.msgBuf = append(s.msgBuf, f.payload...)
	if s.msgOp == opText && !s.msgCompressed {
		n, ok := validPrefix(s.msgBuf[s.checked:])
		s.checked += n
		if !ok {
			s.protocolViolationPayload("encountered invalid UTF-8 while processing text message")
			return
		}
	}
	if !f.fin {
		return
	}
	s.inMsg = false
	if s.msgCompressed {
		out, err := s.pmd.inflate(s.msgBuf)
		if err != nil {
			s.protocolViolation(closeProtocolError, "compressed message does not inflate: "+err.Error())
			return
		}
		s.msgBuf = out
		if s.msgOp == opText && !utf8.Valid(out) {
			s.protocolViolationPayload("encountered invalid UTF-8 while processing text message")
			return
		}
		s.checked = len(out)
	}
	if s.msgOp == opText && s.checked != len(s.msgBuf) {
		s.protocolViolationPayload("UTF-8 text message payload ended within Unicode code point")
		return
	}
	if s.failedByMe {
		return
	}
	ev := event{kind: "message", payload: s.msgBuf, binary: s.msgOp == opBinary}
	s.msgBuf = nil
	if s.c.onMessage != nil {
		s.c.onMessage(s, ev)
		return
	}
	s.received = append(s.received, ev)
	s.finishWhenDone()
}

// protocolViolationPayload fails the connection with 1007 (invalid
// payload data), dropping the message being received.
func (s *session) protocolViolationPayload(reason string) {
	if s.violation == "" {
		s.violation = reason
	}
	s.inMsg = false
	s.msgBuf = nil
	s.failConnection(closeInvalidPayload, reason)
}

// onCloseFrame checks the server's close frame (code, UTF-8 reason),
// answers it unless the client closed first, and waits for the server to
// drop TCP.
func (s *session) onCloseFrame(p []byte) {
	s.gotClose = true
	code := -1
	var reason []byte
	if len(p) > 1 {
		code = int(binary.BigEndian.Uint16(p))
		reason = p[2:]
	}
	s.remoteCloseCode = code
	if code >= 0 && !validCloseCode(code) {
		s.protocolViolation(closeProtocolError, "invalid close code")
	}
	if !utf8.Valid(reason) {
		s.protocolViolation(closeInvalidPayload, "invalid close reason (non-UTF-8 payload)")
	}
	switch s.state {
	case stateClosing:
		if s.closeHSTimer != nil {
			s.closeHSTimer.cancelled = true
		}
		s.wasClean = true
	case stateOpen:
		s.wasClean = true
		s.sendCloseFrame(closeNormal, nil, true)
	}
	if s.dropTimer != nil {
		s.dropTimer.cancelled = true
	}
	s.dropTimer = s.after(serverConnectionDropTimeout, func() {
		s.wasClean = false
		s.wasNotCleanReason = "server did not drop TCP connection (in time)"
		s.dropConnection()
	})
}

// finishWhenDone starts the closing handshake once the received events
// match every expected outcome, when the case expects the client to close.
func (s *session) finishWhenDone() {
	for _, o := range s.expected {
		if !equalEvents(s.received, o.events) {
			return
		}
	}
	if s.expClose.closedByMe && !s.c.suppressClose {
		s.sendClose(s.expClose.codes[0], "")
	}
}

// validCloseCode reports whether a server may send code (RFC 6455 7.4:
// 1000-1003 and 1007-1014 defined, 3000-4999 registered or private).
func validCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}

// validPrefix validates b as the continuation of a UTF-8 text, failing fast:
// it returns how many bytes form complete valid code points and false as
// soon as a byte makes the text invalid whatever follows. An incomplete but
// so far valid code point at the end is not an error.
func validPrefix(b []byte) (int, bool) {
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			i += size
			continue
		}
		// Invalid or incomplete: valid only if the rest is a proper prefix.
		if !properPrefix(b[i:]) {
			return i, false
		}
		return i, true
	}
	return i, true
}

// properPrefix reports whether b (1-3 bytes) can begin a valid UTF-8
// sequence (RFC 3629 table: no overlongs, surrogates or > U+10FFFF).
func properPrefix(b []byte) bool {
	if len(b) == 0 || len(b) > 3 {
		return false
	}
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xbf)
	switch {
	case c >= 0xc2 && c <= 0xdf:
		need = 2
	case c == 0xe0:
		need, lo = 3, 0xa0
	case c >= 0xe1 && c <= 0xec, c == 0xee, c == 0xef:
		need = 3
	case c == 0xed:
		need, hi = 3, 0x9f
	case c == 0xf0:
		need, lo = 4, 0x90
	case c >= 0xf1 && c <= 0xf3:
		need = 4
	case c == 0xf4:
		need, hi = 4, 0x8f
	default:
		return false
	}
	if len(b) >= need {
		return false
	}
	for i := 1; i < len(b); i++ {
		l, h := byte(0x80), byte(0xbf)
		if i == 1 {
			l, h = lo, hi
		}
		if b[i] < l || b[i] > h {
			return false
		}
	}
	return true
}
