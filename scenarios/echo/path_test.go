package echo

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
)

// pathRig drives an echo run on a driven loop (no loop goroutine) over a
// socket pair: the test plays the server on the peer end, so the whole
// per-message path of the kind runs — decode, verify, record, mask, read
// and write system calls — without the network or epoll_wait.
type pathRig struct {
	l      *client.Loop
	c      *client.Conn
	peer   int
	in     []byte   // what the peer reads the client's frame into
	writes [][]byte // what the peer writes back per message, in order
}

func newPathRig(tb testing.TB, payload int, writes func(echo []byte) [][]byte) *pathRig {
	tb.Helper()
	l, c, peer := clienttest.DrivenLoop(tb)
	p := client.MakePayload(payload, false)
	r := &pathRig{l: l, c: c, peer: peer, in: make([]byte, payload+64), writes: writes(p)}
	pool := &tokenPool{}
	pool.meas.Store(1 << 40)
	begin(l, &job{phase: 1, slots: 1, hdr: client.AppendClientHeader(nil, client.OpBinary, len(p), 0), payload: p,
		op: client.OpBinary, verify: true, timeout: int64(1 << 62), pool: pool, batch: 1 << 40})
	if e, ok := l.Run().(*run); !ok || e.inflight != 1 {
		tb.Fatal("begin sent no message")
	}
	return r
}

// echo returns the rig's echo run.
func (r *pathRig) echo() *run { return r.l.Run().(*run) }

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
	{"one frame", func(p []byte) [][]byte { return [][]byte{clienttest.ServerFrame(true, client.OpBinary, p)} }},
	{"fragmented with ping", func(p []byte) [][]byte {
		h := len(p) / 2
		return [][]byte{bytes.Join([][]byte{
			clienttest.ServerFrame(false, client.OpBinary, p[:h]),
			clienttest.ServerFrame(true, client.OpPing, []byte("ping")),
			clienttest.ServerFrame(true, 0x0, p[h:]), // continuation
		}, nil)}
	}},
	{"split header", func(p []byte) [][]byte {
		f := clienttest.ServerFrame(true, client.OpBinary, p)
		return [][]byte{f[:1], f[1:3], f[3:]}
	}},
}

// TestEchoPathAllocs proves the echo kind's per-message path allocates
// nothing in steady state, whatever shape the echo arrives in.
func TestEchoPathAllocs(t *testing.T) {
	for _, shape := range pathShapes {
		t.Run(shape.name, func(t *testing.T) {
			r := newPathRig(t, 1024, shape.writes)
			for range 10 { // warm up: ext free list, buffers
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

// BenchmarkEchoPath measures one echo through the kind's per-message
// path (including the peer's read and write system calls on the
// socketpair).
func BenchmarkEchoPath(b *testing.B) {
	for _, shape := range pathShapes {
		b.Run(shape.name, func(b *testing.B) {
			r := newPathRig(b, 1024, shape.writes)
			b.ReportAllocs()
			for b.Loop() {
				r.roundTrip(b)
			}
			if r.echo().part.Failed != 0 {
				b.Fatalf("failures: %v", r.echo().part.Errors)
			}
		})
	}
}
