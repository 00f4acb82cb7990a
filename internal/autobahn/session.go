package autobahn

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"sync"
	"time"
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
