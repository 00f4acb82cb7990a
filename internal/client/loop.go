package client

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/pmdeflate"

	"github.com/wsplan/wsplan/internal/proto"
)

const (
	// eventBatch is how many epoll events one epoll_wait returns at most;
	// a large batch amortises the call over many connections.
	eventBatch = 1024
	// readBufSize is the per-loop read buffer shared by all its connections.
	readBufSize = 256 << 10
	// ProgressBatch is how many finished units a loop accumulates before
	// publishing them to Progress.Done.
	ProgressBatch = 256
	// MaxTick bounds the interval of a loop's timer checks (timeouts,
	// progress), and so how late a timeout can be noticed.
	MaxTick = 100 * time.Millisecond
	// minTick is the shortest timer-check interval.
	minTick = time.Millisecond
)

// Epoll interest sets of a connection. Edge-triggered: a socket is read
// until a short read, and written until the data is out or EAGAIN, so no
// readiness is left unconsumed; and unlike level-triggered interest, the
// kernel does not poll every reported socket again at the next epoll_wait.
// A short read says no more data, not no end of stream: when the peer's
// FIN came with the last data, one event reports both (EPOLLRDHUP set),
// and the socket is read on until it says EOF.
const (
	EvIn    = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET
	evInOut = EvIn | unix.EPOLLOUT
	evOut   = unix.EPOLLOUT | unix.EPOLLET
)

// Command kinds sent to a loop.
const (
	cmdRun = iota + 1
	cmdStop
	cmdClose
)

// command is a request from a caller goroutine to a loop, queued under
// loop.mu and announced through the loop's eventfd.
type command struct {
	kind  int
	phase int64         // the phase to run (cmdRun) or stop (cmdStop)
	start func(l *Loop) // cmdRun: begins the phase's run on the loop
}

// phaseResult is a loop's share of a phase, sent when the phase ends there.
type phaseResult struct {
	phase   int64
	part    Result // the kind's result type, this loop's share
	stopped bool   // cut short by cmdStop or Close
	rc      ReconnectStats
}

// LoopRun is a phase running on a loop: the one interface the protocol
// layer calls. Kinds embed BaseRun for the hooks they do not need.
type LoopRun interface {
	// ID is the phase's number.
	ID() int64
	// OnData handles a chunk of a data message on c.
	OnData(l *Loop, c *Conn, ev *Event, now int64)
	// OnPong handles a pong on c, with its payload (valid during the call).
	OnPong(l *Loop, c *Conn, payload []byte)
	// OnMessage handles an application message a protocol decoded on c
	// (valid during the call; raw connections get OnData instead).
	OnMessage(l *Loop, c *Conn, m *proto.Message, now int64)
	// Lost charges a dropped open connection; it runs after the socket is
	// closed, with the flags c had. (A connection still in its handshake
	// is its dialer's: see attemptFailed.)
	Lost(l *Loop, c *Conn, flags uint8, reason Reason)
	// Tick runs the timer checks (see Loop.SetTick).
	Tick(l *Loop, now int64)
	// WakeAt is the loop clock of the next pump; < 0 = none.
	WakeAt() int64
	// Pump runs the timetable when WakeAt has come.
	Pump(l *Loop, now int64)
	// Resume runs when c's queued output is written and its socket is
	// writable again.
	Resume(l *Loop, c *Conn)
	// Frame returns bytes [off:] of c's pending data frame masked with key
	// (conn.flags fDataPend), in the loop's write buffer.
	Frame(l *Loop, key uint32, off int) []byte
	// Finish ends the run here (stopped: cut short) and reports its share
	// with l.Finished.
	Finish(l *Loop, stopped bool, now int64)
}

// BaseRun gives a LoopRun no-op hooks (all but Lost and Finish, which
// every kind must think about).
type BaseRun struct{ phase int64 }

// NewBaseRun returns the BaseRun of phase number id (PhaseEnv.ID).
func NewBaseRun(id int64) BaseRun { return BaseRun{id} }

func (b *BaseRun) ID() int64                                   { return b.phase }
func (*BaseRun) OnData(*Loop, *Conn, *Event, int64)            {}
func (*BaseRun) OnPong(*Loop, *Conn, []byte)                   {}
func (*BaseRun) OnMessage(*Loop, *Conn, *proto.Message, int64) {}
func (*BaseRun) Tick(*Loop, int64)                             {}
func (*BaseRun) WakeAt() int64                                 { return -1 }
func (*BaseRun) Pump(*Loop, int64)                             {}
func (*BaseRun) Resume(*Loop, *Conn)                           {}
func (*BaseRun) Frame(*Loop, uint32, int) []byte               { return nil }

// Finished ends the run in progress and sends the loop's share.
func (l *Loop) Finished(phase int64, part Result, stopped bool) {
	l.ph = nil
	l.SetTick(0)
	res := phaseResult{phase: phase, part: part, stopped: stopped}
	if l.rc != nil {
		res.rc = l.rc.stats()
	}
	l.results <- res
}

// Loop is one event loop: a goroutine locked to its OS thread, with its own
// epoll fd, owning a set of connections. Everything below mu is touched only
// by the loop goroutine (and by tests that drive a loop synchronously).
//
// How a loop is organised:
//   - Callers reach it only through post (a command queue plus an eventfd
//     in the epoll set) and read its answers from results, one per phase.
//   - The protocol layer is phase-agnostic: readFrames/feed decode the
//     server stream (answering pings, dropping closed connections), and
//     sendControl/flush write control frames and pending output.
//   - A phase is a LoopRun (dialRun here, the kinds' runs in their packages) that
//     the protocol layer calls back into through one interface: onData for
//     message chunks, onPong, lost for dropped connections, tick for
//     timers, resume when a socket is writable again, frame for a pending
//     data frame, finish. The protocol layer names no kind.
//   - Timed phases (rate, hold) also have a wake time, the loop clock of
//     their next timetable event: epoll_pwait2 sleeps until exactly then
//     (nanosecond timeouts; epoll_wait's whole milliseconds would make
//     every paced message up to 1 ms late), and the loop calls their pump.
type Loop struct {
	cl      *Client
	id      int
	EpollFD int
	evfd    int

	mu      sync.Mutex
	cmds    []command
	quit    bool // the loop is exiting: post refuses commands
	results chan phaseResult
	done    chan struct{}
	counts  *loopCounts // read by Live and the caller's slot distribution

	events []unix.EpollEvent
	ts     unix.Timespec // epollWait's timeout
	byFD   []*Conn       // fd -> connection
	open   []*Conn       // open WebSocket connections
	gen    uint32
	rbuf   []byte
	// peerShut is set while ReadFrames handles an event that says the
	// peer shut its side (EPOLLRDHUP): a short read does not end it.
	peerShut  bool
	WriteBuf  []byte
	cbuf      []byte // control frames and upgrade requests
	tin       []byte // TLS: ciphertext read; made on first use
	tout      []byte // TLS: sealed records to write
	tpend     int    // TLS: bytes at the start of tout that the next write sends first (a handshake's last flight)
	tpool     hsPool // TLS: the handshakes' coroutines, reused
	ibuf      []byte // permessage-deflate: the inflated message
	FrameConn *Conn  // the connection whose pending data frame flush or spill asks the run for (loopRun.frame)

	inflater pmdeflate.Inflater // shared by the loop's compressed connections
	Deflater pmdeflate.Deflater
	rng      *rand.ChaCha8
	epoch    time.Time
	extFree  []*connExt

	// Per-loop copies of the targets' socket addresses: unix.Connect
	// writes into a Sockaddr, so loops must not share them.
	targets    []unix.Sockaddr
	src4, src6 []unix.Sockaddr

	// What the protocol reaches of the loop (its scratch, the messages it
	// decoded, the connection served), and when its keepalives are next
	// due (protocol.go); protoNext 0 = raw messages.
	penv      proto.Env
	plink     protoLink
	protoNext int64

	// The phase running here, at most one at a time.
	ph        LoopRun
	rc        *reconnector // brings dropped connections back (Options.Reconnect); nil = none
	tickEvery int64        // ns; 0 = no timers
	nextTick  int64
	cmdTmp    []command
	ev        Event // the data event being handled (see feed)
	evz       Event // an inflated message's event (see onData)

	// Data bytes received: as the frames carried them (compressed or not)
	// and as payload (inflated); runs read them at their start and end.
	wireIn, payloadIn int64
	wakes             int64 // epoll waits returned: wake-ups (runs read it at their start and end)
	stopping          bool  // a cmdClose arrived

	// Batched reads (rxstamp.go): a paced phase's loop sleeps through
	// arrivals until its next wake-up, and its reads carry kernel
	// receive timestamps.
	batching bool
	more     bool // the last epoll_wait filled the event batch: more may be ready
	rxs      rxStamps
}

// newLoop creates a loop's epoll and eventfd; run starts it.
func newLoop(cl *Client, id int) (*Loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, errors.Join(errors.New("client: epoll_create1"), err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, errors.Join(errors.New("client: eventfd"), err)
	}
	if err := EpollCtl(epfd, unix.EPOLL_CTL_ADD, int32(evfd), 0, unix.EPOLLIN); err != nil {
		unix.Close(evfd)
		unix.Close(epfd)
		return nil, errors.Join(errors.New("client: epoll_ctl eventfd"), err)
	}
	var seed [32]byte
	for i := 0; i < 4; i++ {
		binary.LittleEndian.PutUint64(seed[8*i:], rand.Uint64())
	}
	l := &Loop{
		cl:      cl,
		id:      id,
		EpollFD: epfd,
		evfd:    evfd,
		results: make(chan phaseResult, 1),
		done:    make(chan struct{}),
		counts:  &loopCounts{},
		events:  make([]unix.EpollEvent, eventBatch),
		rbuf:    make([]byte, readBufSize),
		cbuf:    make([]byte, 0, 1024),
		rng:     rand.NewChaCha8(seed),
		epoch:   time.Now(),
	}
	if cl.proto != nil {
		l.protoNext = int64(proto.TickEvery)
	}
	for _, t := range cl.targets {
		l.targets = append(l.targets, cloneSockaddr(t.sa))
	}
	for _, s := range cl.src4 {
		l.src4 = append(l.src4, cloneSockaddr(s))
	}
	for _, s := range cl.src6 {
		l.src6 = append(l.src6, cloneSockaddr(s))
	}
	return l, nil
}

// Now is the loop clock: monotonic ns since the loop was created. It costs
// one vDSO clock read (time.Since), never a system call.
func (l *Loop) Now() int64 { return int64(time.Since(l.epoch)) }

// post queues a command and wakes the loop. It returns false if the loop
// has exited (or is exiting) and will not run it.
func (l *Loop) post(cmd command) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.quit {
		return false
	}
	l.cmds = append(l.cmds, cmd)
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	// The only possible failure is EAGAIN when the counter is about to
	// overflow, which needs 2^64 unread wake-ups: the loop is awake anyway.
	_, _ = unix.Write(l.evfd, one[:])
	return true
}

// run is the loop goroutine.
func (l *Loop) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer preciseTimers()()
	defer close(l.done)
	defer loopsAlive.Add(-1)
	defer l.tpool.Close()
	raw := rawWaits()
	now := l.Now() // read once per iteration, after the events
	for {
		timeout := int64(-1)
		if at, ok := l.deadline(); ok {
			timeout = max(0, at-now)
		}
		if l.batching && timeout > 0 && timeout <= rawWaitMax && !l.more {
			// Sleep through arrivals: what comes waits in the socket,
			// stamped by the kernel, until the wake-up.
			l.sleep(timeout)
			timeout = 0
		}
		n, err := epollWait(l.EpollFD, l.events, timeout, raw, &l.ts)
		l.wakes++
		l.more = n == len(l.events)
		if l.batching {
			l.rxs.calibrate(l.epoch)
		}
		if err != nil && err != unix.EINTR {
			// epoll_wait fails only for a bad epfd or events buffer, which
			// would be a bug here; stop rather than spin.
			l.shutdown()
			return
		}
		for i := 0; i < n; i++ {
			ev := &l.events[i]
			if ev.Pad == 0 {
				l.drainCommands()
				continue
			}
			fd := int(ev.Fd)
			if fd >= len(l.byFD) {
				continue
			}
			c := l.byFD[fd]
			if c == nil || c.gen != uint32(ev.Pad) {
				continue // stale: the fd was closed (and maybe reused) in this batch
			}
			l.handle(c, ev.Events)
		}
		now = l.Now()
		if l.protoNext > 0 && now >= l.protoNext {
			l.protoKeepalive(now)
			l.protoNext = now + int64(proto.TickEvery)
		}
		if l.tickEvery > 0 && now >= l.nextTick {
			l.tick(now)
			l.nextTick = now + l.tickEvery
		}
		if r := l.ph; r != nil {
			if w := r.WakeAt(); w >= 0 && (now >= w || n > 0 && dueEarly(r, now)) {
				r.Pump(l, now)
				now = l.Now() // the pump's writes take time; wake on time
			}
		}
		if rc := l.rc; rc != nil {
			if w := rc.wakeAt(); w >= 0 && now >= w {
				rc.pump(l, now)
				now = l.Now()
			}
		}
		if l.stopping {
			l.shutdown()
			return
		}
	}
}

// slackRun is a run whose wake-ups a timer slack delays past its next due
// message (pacedWake): dueAt is the loop clock that message is due.
type slackRun interface{ DueAt() int64 }

// dueEarly reports whether r has a message due by now although its
// (slack-delayed) wake-up has not come: a loop awake anyway, for an echo,
// then pumps at once, so that one wake-up serves the sends too and the
// message leaves as early as it can.
func dueEarly(r LoopRun, now int64) bool {
	s, ok := r.(slackRun)
	return ok && now >= s.DueAt()
}

// deadline returns the loop clock of the next timer event, if any.
func (l *Loop) deadline() (int64, bool) {
	at, ok := int64(0), false
	if l.tickEvery > 0 {
		at, ok = l.nextTick, true
	}
	if l.protoNext > 0 && (!ok || l.protoNext < at) {
		at, ok = l.protoNext, true
	}
	if r := l.ph; r != nil {
		if w := r.WakeAt(); w >= 0 && (!ok || w < at) {
			at, ok = w, true
		}
	}
	if rc := l.rc; rc != nil {
		if w := rc.wakeAt(); w >= 0 && (!ok || w < at) {
			at, ok = w, true
		}
	}
	return at, ok
}

// drainCommands runs the queued commands.
func (l *Loop) drainCommands() {
	var buf [8]byte
	// The eventfd is non-blocking; EAGAIN just means another wake-up
	// already reset the counter.
	_, _ = rawRead(int32(l.evfd), buf[:])
	l.mu.Lock()
	l.cmdTmp, l.cmds = l.cmds, l.cmdTmp[:0]
	l.mu.Unlock()
	for i := range l.cmdTmp {
		cmd := &l.cmdTmp[i]
		switch cmd.kind {
		case cmdRun:
			cmd.start(l)
		case cmdStop:
			if r := l.ph; r != nil && r.ID() == cmd.phase {
				r.Finish(l, true, l.Now())
			}
		case cmdClose:
			l.stopping = true
		}
		*cmd = command{}
	}
}

// SetTick arms (every > 0) or disarms the loop's timer checks.
func (l *Loop) SetTick(every time.Duration) {
	if every <= 0 {
		l.tickEvery = 0
		return
	}
	l.tickEvery = int64(min(max(every, minTick), MaxTick))
	l.nextTick = l.Now() + l.tickEvery
}

// tick runs the timer checks of the phase in progress.
func (l *Loop) tick(now int64) {
	if r := l.ph; r != nil {
		r.Tick(l, now)
	}
}

// shutdown ends any phase, says goodbye on every connection and releases
// the loop's fds. After it, post refuses commands.
func (l *Loop) shutdown() {
	l.mu.Lock()
	l.quit = true
	l.cmds = nil
	l.mu.Unlock()
	if r := l.ph; r != nil {
		r.Finish(l, true, l.Now())
	}
	for fd, c := range l.byFD {
		if c == nil {
			continue
		}
		if c.state == StateOpen && c.Flags&(FlagDataPend|FlagWantOut) == 0 {
			l.cbuf = appendControl(l.cbuf[:0], OpClose, []byte{0x03, 0xe8}, uint32(l.rng.Uint64())) // 1000: normal closure
			// Best effort: the connection is closed right after either way.
			_, _ = l.Write(c, l.cbuf)
			l.closeNotify(c)
		}
		l.CloseFD(c)
		l.byFD[fd] = nil
	}
	l.open = nil
	l.counts.open.Store(0)
	unix.Close(l.evfd)
	unix.Close(l.EpollFD)
}

// register adds c to the fd table and to epoll.
func (l *Loop) register(c *Conn, events uint32) error {
	l.gen++
	if l.gen == 0 { // 0 marks the eventfd
		l.gen = 1
	}
	c.gen = l.gen
	if err := EpollCtl(l.EpollFD, unix.EPOLL_CTL_ADD, c.fd, c.gen, events); err != nil {
		return err
	}
	fd := int(c.fd)
	if fd >= len(l.byFD) {
		n := max(2*len(l.byFD), fd+1, 1024)
		byFD := make([]*Conn, n)
		copy(byFD, l.byFD)
		l.byFD = byFD
	}
	l.byFD[fd] = c
	return nil
}

// CloseFD closes c's socket (which also removes it from epoll) and, if it
// was open, takes it off the open list.
func (l *Loop) CloseFD(c *Conn) {
	if c.state == StateOpen {
		last := l.open[len(l.open)-1]
		l.open[c.idx] = last
		last.idx = c.idx
		l.open[len(l.open)-1] = nil
		l.open = l.open[:len(l.open)-1]
		l.counts.open.Add(-1)
		l.cl.conns.Add(-1)
	}
	if int(c.fd) < len(l.byFD) && l.byFD[c.fd] == c {
		l.byFD[c.fd] = nil
	}
	unix.Close(int(c.fd))
	dropSec(c)
	c.state = stClosed
	c.Flags = 0
	l.putExt(c)
}

// addOpen puts a connection that finished its handshake on the open list.
func (l *Loop) addOpen(c *Conn) {
	c.state = StateOpen
	c.idx = int32(len(l.open))
	l.open = append(l.open, c)
	l.counts.open.Add(1)
	l.cl.conns.Add(1)
}

// GetExt returns c's ext, attaching a recycled or new one if needed.
func (l *Loop) GetExt(c *Conn) *connExt {
	if c.ext == nil {
		if n := len(l.extFree); n > 0 {
			c.ext = l.extFree[n-1]
			l.extFree = l.extFree[:n-1]
		} else {
			c.ext = &connExt{}
		}
	}
	return c.ext
}

// putExt detaches c's ext and recycles it.
func (l *Loop) putExt(c *Conn) {
	x := c.ext
	if x == nil {
		return
	}
	c.ext = nil
	if cap(x.pend) > maxStash*2 {
		x.pend = nil // drop a large handshake buffer
	}
	*x = connExt{pend: x.pend[:0], Out: x.Out[:0]}
	if len(l.extFree) < 1024 {
		l.extFree = append(l.extFree, x)
	}
}

// handle dispatches one epoll event.
func (l *Loop) handle(c *Conn, events uint32) {
	if c.Sec != nil && len(c.Sec.out) > 0 && events&unix.EPOLLOUT != 0 {
		// Sealed TLS records precede any other output.
		l.flushSealed(c)
		if c.state == stClosed {
			return
		}
	}
	switch c.state {
	case stConnecting:
		l.onConnected(c)
	case stTLS:
		if events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			l.readHandshake(c)
		}
	case stSending:
		l.sendRequest(c)
	case stReceiving:
		l.readResponse(c)
	case stGreeting, StateOpen:
		if events&unix.EPOLLOUT != 0 && c.Flags&FlagWantOut != 0 {
			l.flush(c)
			if c.state < stGreeting {
				return
			}
		}
		if events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
			l.peerShut = events&(unix.EPOLLRDHUP|unix.EPOLLHUP) != 0
			l.ReadFrames(c)
			l.peerShut = false
		}
	}
}
