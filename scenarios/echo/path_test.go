package echo

import (
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
)

// newPathPeer drives an echo run on a driven loop (no loop goroutine)
// over a socket pair whose other end echoes in shape: the whole
// per-message path of the kind runs — decode, verify, record, mask, read
// and write system calls — without the network or epoll_wait.
func newPathPeer(tb testing.TB, payload int, shape clienttest.EchoShape) *clienttest.EchoPeer {
	tb.Helper()
	l, c, fd := clienttest.DrivenLoop(tb)
	p := client.MakePayload(payload, false)
	pool := &tokenPool{}
	pool.meas.Store(1 << 40)
	begin(l, &job{phase: 1, slots: 1, hdr: client.AppendClientHeader(nil, client.OpBinary, len(p), 0), payload: p,
		op: client.OpBinary, verify: true, timeout: int64(1 << 62), pool: pool, batch: 1 << 40})
	if e, ok := l.Run().(*run); !ok || e.inflight != 1 {
		tb.Fatal("begin sent no message")
	}
	return clienttest.NewEchoPeer(l, c, fd, p, shape)
}

// TestEchoPathAllocs proves the echo kind's per-message path allocates
// nothing in steady state, whatever shape the echo arrives in.
func TestEchoPathAllocs(t *testing.T) {
	for _, shape := range clienttest.EchoShapes {
		t.Run(shape.Name, func(t *testing.T) {
			peer := newPathPeer(t, 1024, shape)
			for range 10 { // warm up: ext free list, buffers
				peer.RoundTrip(t)
			}
			e := peer.L.Run().(*run)
			before := e.part.Success
			clienttest.ZeroAllocs(t, "echo", 1000, func() { peer.RoundTrip(t) })
			if got := e.part.Success - before; got != 1001 {
				t.Errorf("%d successful echoes, want 1001 (errors %v)", got, e.part.Errors)
			}
			if e.part.Failed != 0 {
				t.Errorf("failures: %v", e.part.Errors)
			}
		})
	}
}

// BenchmarkEchoPath measures one echo through the kind's per-message
// path (including the peer's read and write system calls on the
// socketpair).
func BenchmarkEchoPath(b *testing.B) {
	for _, shape := range clienttest.EchoShapes {
		b.Run(shape.Name, func(b *testing.B) {
			peer := newPathPeer(b, 1024, shape)
			b.ReportAllocs()
			for b.Loop() {
				peer.RoundTrip(b)
			}
			if e := peer.L.Run().(*run); e.part.Failed != 0 {
				b.Fatalf("failures: %v", e.part.Errors)
			}
		})
	}
}
