package autobahn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"sync"
	"time"
	"unicode/utf8"
)

// Timeouts of Autobahn's fuzzing client (its WebSocketClientFactory
// defaults): how long the client waits for the server's answer to its close
// frame, and for the server to drop the TCP connection once the closing
// handshake is done (RFC 6455 7.1.1: the server closes TCP first).
const (
	closeHandshakeTimeout       = time.Second
	serverConnectionDropTimeout = time.Second
	// queuedWriteDelay separates chopped and synced writes, as Autobahn's
	// _QUEUED_WRITE_DELAY does, so that they tend to leave as separate
	// TCP segments.
	queuedWriteDelay = 10 * time.Microsecond
)

// Connection states of the client (RFC 6455 4-7).
type connState int

const (
	stateOpen connState = iota
	stateClosing
	stateClosed
)

// event is one thing the client observed and records for comparison with
// a case's expected outcomes: a complete message, a pong, or a case's own
// "timeout" marker (6.4.x).
type event struct {
	kind    string // "message", "pong", "timeout"
	payload []byte
	binary  bool
}

func message(p string) event    { return event{kind: "message", payload: []byte(p)} }
func binMessage(p string) event { return event{kind: "message", payload: []byte(p), binary: true} }
func pong(p string) event       { return event{kind: "pong", payload: []byte(p)} }
func timeoutMark(tag string) event {
	return event{kind: "timeout", payload: []byte(tag)}
}

func (e event) equal(o event) bool {
	return e.kind == o.kind && e.binary == o.binary && bytes.Equal(e.payload, o.payload)
}

func equalEvents(a, b []event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].equal(b[i]) {
			return false
		}
	}
	return true
}

// outcome is one acceptable sequence of events and the verdict it earns.
type outcome struct {
	verdict Verdict
	events  []event
}

// closeExpect is Autobahn's expectedClose.
type closeExpect struct {
	closedByMe   bool  // the client (wsplan) is expected to start the closing handshake
	codes        []int // acceptable close codes from the server (no code is always acceptable)
	requireClean bool  // the closing handshake must complete and the server must drop TCP
	// wrongEndpointFatal: when the wrong side closes, the case fails
	// (UTF-8 cases: the server did not notice the invalid payload).
	wrongEndpointFatal bool
}

// input is what the reader goroutine and the timers hand to the session's
// loop.
type input struct {
	f   *rxFrame
	err error
	fn  func()
}

// session runs one case on one connection. Like Autobahn's Twisted
// protocol it is single-threaded: one loop goroutine handles received
// frames, timers and writes; one reader goroutine only parses frames.
type session struct {
	c        *Case
	conn     net.Conn
	br       *bufio.Reader
	deadline time.Time

	mu    sync.Mutex
	queue []input
	ready chan struct{}

	timers []*time.Timer

	state    connState
	received []event
	expected []outcome
	expClose closeExpect

	// Autobahn's verdict fields.
	behavior      Verdict
	result        string
	closeBehavior string
	resultClose   string

	// Close bookkeeping, as in Autobahn's WebSocketProtocol.
	closedByMe        bool
	failedByMe        bool
	droppedByMe       bool
	wasClean          bool
	wasNotCleanReason string
	localCloseCode    int // -1: none sent
	remoteCloseCode   int // -1: no close frame, or one without a code
	gotClose          bool
	closeHSTimer      *timerRef
	dropTimer         *timerRef

	// Receive state.
	inMsg   bool
	msgOp   byte
	msgBuf  []byte
	checked int // msgBuf[:checked] is known valid UTF-8 up to a code point end

	// permessage-deflate, when the server accepted the case's offer.
	pmd           *deflater
	msgCompressed bool
	deflateNext   func(ev event) // 12.x/13.x: check an echo, send the next message

	violation string // first protocol violation by the server that the client saw
	lostErr   error  // why the read side ended, if the server ended it
	writeErr  error
	timedOut  bool
	timeout   time.Duration // the case timeout, for the observed text
	progress  string        // how far a long case got (9.7, 9.8, 12.x, 13.x), for the observed text
	count     int           // messages sent so far (9.7, 9.8)
	killed    bool
}

// timerRef lets a pending timer be cancelled from the loop.
type timerRef struct{ cancelled bool }

func newSession(c *Case, conn net.Conn, br *bufio.Reader, deadline time.Time) *session {
	return &session{
		c: c, conn: conn, br: br, deadline: deadline,
		ready:           make(chan struct{}, 1),
		behavior:        Failed,
		result:          "Actual events differ from any expected.",
		closeBehavior:   closeFailed,
		resultClose:     "TCP connection was dropped without close handshake",
		localCloseCode:  -1,
		remoteCloseCode: -1,
	}
}

func (s *session) push(in input) {
	s.mu.Lock()
	s.queue = append(s.queue, in)
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

func (s *session) drain() []input {
	s.mu.Lock()
	q := s.queue
	s.queue = nil
	s.mu.Unlock()
	return q
}

// run plays the case until the connection is closed or ctx ends, then
// computes the verdict. It returns only once the reader goroutine and
// every timer are gone.
func (s *session) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			f, err := readFrame(s.br)
			if err != nil {
				s.push(input{err: err})
				return
			}
			s.push(input{f: &f})
		}
	}()

	s.c.open(s)
	for s.state != stateClosed {
		select {
		case <-s.ready:
			for _, in := range s.drain() {
				if s.state == stateClosed {
					break
				}
				switch {
				case in.err != nil:
					s.connectionLost(in.err)
				case in.f != nil:
					s.processFrame(*in.f)
				case in.fn != nil:
					in.fn()
				}
			}
		case <-ctx.Done():
			s.timedOut = true
			s.wasClean = false
			s.wasNotCleanReason = "case timeout"
			s.dropConnection()
		}
	}
	for _, t := range s.timers {
		t.Stop()
	}
	_ = s.conn.Close() // already closed by one side; the error says nothing new
	wg.Wait()
	s.judge()
}

// after runs fn on the loop after d unless the connection is closed by
// then or the returned ref is cancelled.
func (s *session) after(d time.Duration, fn func()) *timerRef {
	ref := &timerRef{}
	s.timers = append(s.timers, time.AfterFunc(d, func() {
		s.push(input{fn: func() {
			if !ref.cancelled && s.state != stateClosed {
				fn()
			}
		}})
	}))
	return ref
}

// --- what cases call (Autobahn's protocol API) ---

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

func (s *session) failConnection(code int, reason string) {
	if s.state == stateClosed {
		return
	}
	s.failedByMe = true
	if s.state != stateClosing {
		s.sendCloseFrame(code, []byte(reason), false)
	}
}

func (s *session) dropConnection() {
	if s.state == stateClosed {
		return
	}
	s.droppedByMe = true
	s.state = stateClosed
	_ = s.conn.Close() // we are abandoning the connection; nothing to report
}

func (s *session) protocolViolation(code int, reason string) {
	if s.violation == "" {
		s.violation = reason
	}
	s.failConnection(code, reason)
}

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

// --- receiving ---

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

func (s *session) protocolViolationPayload(reason string) {
	if s.violation == "" {
		s.violation = reason
	}
	s.inMsg = false
	s.msgBuf = nil
	s.failConnection(closeInvalidPayload, reason)
}

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
