package clienttest

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/testserver"
)

// A kind's package proves its per-message path allocates nothing by
// driving its run on a driven loop (DrivenLoop) and playing the server on
// the socket pair's other end: ZeroAllocs counts, EchoShapes and
// EchoPeer play an echoing server. internal/client's own tests keep a
// copy of these (alloc_test.go): they cannot import this package.

// ZeroAllocs fails tb unless step allocates nothing on average over runs
// runs (testing.AllocsPerRun, which runs step once more to warm up);
// what names one step in the message ("echo", "published message").
// Warm the path up (free lists, buffers) before calling it.
func ZeroAllocs(tb testing.TB, what string, runs int, step func()) {
	tb.Helper()
	if allocs := testing.AllocsPerRun(runs, step); allocs != 0 {
		tb.Errorf("%.2f allocations per %s, want 0", allocs, what)
	}
}

// EchoShape is one way a server's echo of a message arrives: the pieces
// the server writes, in turn, each read by the client before the next.
type EchoShape struct {
	Name   string
	Writes func(echo []byte) [][]byte
}

// EchoShapes are the shapes a per-message test runs its echoes in: one
// frame, two fragments with a ping between them, and a frame whose
// header is split over three reads.
var EchoShapes = []EchoShape{
	{"one frame", func(p []byte) [][]byte { return [][]byte{testserver.ServerFrame(true, client.OpBinary, p)} }},
	{"fragmented with ping", func(p []byte) [][]byte {
		h := len(p) / 2
		return [][]byte{bytes.Join([][]byte{
			testserver.ServerFrame(false, client.OpBinary, p[:h]),
			testserver.ServerFrame(true, client.OpPing, []byte("ping")),
			testserver.ServerFrame(true, 0x0, p[h:]), // continuation
		}, nil)}
	}},
	{"split header", func(p []byte) [][]byte {
		f := testserver.ServerFrame(true, client.OpBinary, p)
		return [][]byte{f[:1], f[1:3], f[3:]}
	}},
}

// EchoPeer is the server end of a driven loop's connection that echoes
// each message in one EchoShape.
type EchoPeer struct {
	L      *client.Loop
	C      *client.Conn
	FD     int      // the socket pair's other end
	in     []byte   // what the peer reads the client's frame into
	writes [][]byte // what the peer writes back per message, in order
}

// NewEchoPeer returns the peer of l's connection c (DrivenLoop) that
// answers each message of payload bytes with echo in shape's pieces.
func NewEchoPeer(l *client.Loop, c *client.Conn, fd int, echo []byte, shape EchoShape) *EchoPeer {
	return &EchoPeer{L: l, C: c, FD: fd, in: make([]byte, len(echo)+64), writes: shape.Writes(echo)}
}

// RoundTrip plays the server for one message: it reads the client's
// frame, writes the echo in its pieces and lets the client read each.
func (p *EchoPeer) RoundTrip(tb testing.TB) {
	if _, err := unix.Read(p.FD, p.in); err != nil {
		tb.Fatal(err)
	}
	for _, w := range p.writes {
		if _, err := unix.Write(p.FD, w); err != nil {
			tb.Fatal(err)
		}
		p.L.ReadFrames(p.C)
	}
}
