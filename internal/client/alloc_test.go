package client

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/testserver"
)

// pathRig drives one loop synchronously (no loop goroutine) over a
// socketpair: the test plays the server on the peer end, so the client's
// whole per-message path runs — decode, verify, record, mask, read and
// write system calls — without the network or epoll_wait.
type pathRig struct {
	l      *Loop
	c      *Conn
	peer   int
	in     []byte   // what the peer reads the client's frame into
	writes [][]byte // what the peer writes back per message, in order
}

// loopPair returns a loop with one open connection whose socket is one end
// of a socketpair, and the other end (the fake server): the per-message
// paths run against real syscalls without a network.
func loopPair(tb testing.TB) (*Loop, *Conn, int) {
	tb.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	// Large buffers, so a message never waits for EPOLLOUT.
	for _, fd := range fds {
		for _, opt := range []int{unix.SO_SNDBUF, unix.SO_RCVBUF} {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, 4<<20); err != nil {
				tb.Fatal(err)
			}
		}
	}
	l, err := newLoop(&Client{}, 0)
	if err != nil {
		tb.Fatal(err)
	}
	c := &Conn{fd: int32(fds[0])}
	if err := l.register(c, unix.EPOLLIN); err != nil {
		tb.Fatal(err)
	}
	l.addOpen(c)
	return l, c, fds[1]
}

// stopOnCleanup ends the loop's run, then the loop, and closes the peer
// of a loopPair when the test ends.
func stopOnCleanup(tb testing.TB, l *Loop, peer int) {
	tb.Cleanup(func() {
		if l.ph != nil {
			l.ph.Finish(l, true, l.Now())
			<-l.results
		}
		l.shutdown()
		unix.Close(peer)
	})
}

// replyRun is a run of no kind for the core's per-message tests: it
// checks every chunk of a message against payload and answers a whole
// message with the next one (frame, pre-masked with key 0) on the same
// connection, as an echo kind would, without one.
type replyRun struct {
	BaseRun
	payload, frame []byte
	part           struct {
		Success, Failed int64
		Errors          Reasons
	}
}

// startReply starts a replyRun on l that sends c its first message.
func startReply(l *Loop, c *Conn, op byte, payload []byte) {
	r := &replyRun{BaseRun: NewBaseRun(1), payload: payload}
	r.frame = append(AppendClientHeader(nil, op, len(payload), 0), payload...)
	l.SetRun(r)
	l.WriteOrQueue(c, r.frame)
}

func (r *replyRun) OnData(l *Loop, c *Conn, ev *Event, _ int64) {
	if ev.Total > int64(len(r.payload)) || !bytes.Equal(ev.Data, r.payload[ev.Total-int64(len(ev.Data)):ev.Total]) {
		c.Flags |= FlagBad
	}
	if !ev.End {
		return
	}
	if c.Flags&FlagBad != 0 || ev.Total != int64(len(r.payload)) {
		r.part.Failed++
		r.part.Errors.Add(ReasonPayloadMismatch)
	} else {
		r.part.Success++
	}
	c.Flags &^= FlagBad
	l.WriteOrQueue(c, r.frame)
}

func (r *replyRun) Lost(_ *Loop, _ *Conn, _ uint8, reason Reason) { r.part.Errors.Add(reason) }

func (r *replyRun) Finish(l *Loop, stopped bool, _ int64) { l.Finished(r.ID(), &idleResult{}, stopped) }

func newPathRig(tb testing.TB, payload int, writes func(echo []byte) [][]byte) *pathRig {
	tb.Helper()
	l, c, peer := loopPair(tb)
	p := MakePayload(payload, false)
	r := &pathRig{l: l, c: c, peer: peer, in: make([]byte, payload+64), writes: writes(p)}
	startReply(l, c, OpBinary, p)
	tb.Cleanup(func() {
		if l.ph != nil {
			l.ph.Finish(l, true, l.Now())
			<-l.results
		}
		l.shutdown()
		unix.Close(r.peer)
	})
	return r
}

// echo returns the rig's run.
func (r *pathRig) echo() *replyRun { return r.l.ph.(*replyRun) }

// roundTrip plays the server for one message: read the client's frame,
// write the echo (in the rig's pieces), let the client read each piece.
// The client answers the echo by sending its next message.
func (r *pathRig) roundTrip(tb testing.TB) {
	if _, err := unix.Read(r.peer, r.in); err != nil {
		tb.Fatal(err)
	}
	for _, w := range r.writes {
		if _, err := unix.Write(r.peer, w); err != nil {
			tb.Fatal(err)
		}
		r.l.ReadFrames(r.c)
	}
}

// Echo shapes for the rig.
var pathShapes = []struct {
	name   string
	writes func(echo []byte) [][]byte
}{
	{"one frame", func(p []byte) [][]byte { return [][]byte{testserver.ServerFrame(true, OpBinary, p)} }},
	{"fragmented with ping", func(p []byte) [][]byte {
		h := len(p) / 2
		return [][]byte{bytes.Join([][]byte{
			testserver.ServerFrame(false, OpBinary, p[:h]),
			testserver.ServerFrame(true, OpPing, []byte("ping")),
			testserver.ServerFrame(true, opContinuation, p[h:]),
		}, nil)}
	}},
	{"split header", func(p []byte) [][]byte {
		f := testserver.ServerFrame(true, OpBinary, p)
		return [][]byte{f[:1], f[1:3], f[3:]}
	}},
}

// TestReplyPathAllocs proves the core's per-message path (a message read
// whole, then the next one written) allocates nothing in steady state,
// whatever shape the echo arrives in. scenarios/echo's TestEchoPathAllocs
// proves the same with the echo kind's run on top.
func TestReplyPathAllocs(t *testing.T) {
	for _, shape := range pathShapes {
		t.Run(shape.name, func(t *testing.T) {
			r := newPathRig(t, 1024, shape.writes)
			for i := 0; i < 10; i++ { // warm up: ext free list, buffers
				r.roundTrip(t)
			}
			before := r.echo().part.Success
			allocs := testing.AllocsPerRun(1000, func() { r.roundTrip(t) })
			if allocs != 0 {
				t.Errorf("%v allocations per echo, want 0", allocs)
			}
			if got := r.echo().part.Success - before; got != 1001 {
				t.Errorf("%d successful echoes, want 1001 (errors %v)", got, r.echo().part.Errors)
			}
			if r.echo().part.Failed != 0 {
				t.Errorf("failures: %v", r.echo().part.Errors)
			}
		})
	}
}

// BenchmarkReplyPath measures one echo through the client's per-message
// path, with a run of no kind on top, (including the peer's read and write system calls on the socketpair).
func BenchmarkReplyPath(b *testing.B) {
	for _, shape := range pathShapes {
		b.Run(shape.name, func(b *testing.B) {
			r := newPathRig(b, 1024, shape.writes)
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				r.roundTrip(b)
			}
			// CPU time, unlike ns/op, does not grow when other
			// processes share the machine.
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			if r.echo().part.Failed != 0 {
				b.Fatalf("failures: %v", r.echo().part.Errors)
			}
		})
	}
}

// processCPU returns the user+system CPU time this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
