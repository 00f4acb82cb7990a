package rate

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
)

// rateRig drives one loop's rate phase synchronously over a socketpair, on
// a fake clock: each step advances the clock by `per` messages' worth of
// time, pumps (the loop writes the messages due, batched), plays an
// allocation-free echo server on the peer end, and feeds the echoes back
// to the loop. The whole per-message path runs — pacing, marker, masking,
// write, decode, verification, histogram — without epoll_wait.
type rateRig struct {
	l       *client.Loop
	c       *client.Conn
	peer    int
	payload int
	per     int   // messages per step
	period  int64 // ns between two messages
	now     int64 // fake loop clock
	in, out []byte
	rbuf    []byte // what the loop reads the echoes into
}

const rigRate = 10000 // messages per second: a timeline second is 10,000 messages

func newRateRig(tb testing.TB, payload, per int) *rateRig {
	tb.Helper()
	l, c, peer := clienttest.DrivenLoop(tb)
	p := client.MakePayload(payload, false)
	hdr := client.AppendClientHeader(nil, client.OpBinary, payload, 0)
	flen := len(hdr) + payload
	r := &rateRig{l: l, c: c, peer: peer, payload: payload, per: per, period: int64(time.Second / rigRate),
		in: make([]byte, per*flen), out: make([]byte, 0, per*(flen+10)), rbuf: make([]byte, 64<<10)}
	begin(l, &job{
		phase:       1,
		slots:       1,
		first:       0,
		total:       1,
		pacer:       client.Pacer{Rate: rigRate, Duration: time.Hour},
		start:       l.Epoch().Add(time.Hour), // t = 0 in the fake clock's future: nothing is due yet
		drain:       int64(time.Second),
		hdr:         hdr,
		payload:     p,
		verify:      true,
		batch:       client.DefaultPacedBatch,
		maxInflight: 1000,
		loopMax:     1 << 30,
		lateAfter:   int64(time.Millisecond),
	})
	if rr, ok := l.Run().(*run); !ok || rr.part.Sent != 0 {
		tb.Fatal("begin sent early or ended")
	}
	r.now = r.run().start - r.period
	return r
}

// run returns the rig's rate run.
func (r *rateRig) run() *run { return r.l.Run().(*run) }

// step sends r.per messages and completes their echoes.
func (r *rateRig) step(tb testing.TB) {
	r.now += int64(r.per) * r.period
	r.run().Pump(r.l, r.now)
	// The peer: read the client's frames, unmask them into server frames.
	n := 0
	for n < len(r.in) {
		k, err := unix.Read(r.peer, r.in[n:])
		if err != nil {
			tb.Fatalf("peer read: %v (got %d of %d bytes)", err, n, len(r.in))
		}
		n += k
	}
	out := r.out[:0]
	for b := r.in; len(b) > 0; {
		hn, key, ok := clientHeader(b, r.payload)
		if !ok {
			tb.Fatalf("bad client frame % x", b[:min(len(b), 14)])
		}
		out = append(out, 0x80|client.OpBinary)
		switch {
		case r.payload < 126:
			out = append(out, byte(r.payload))
		default:
			out = append(out, 126)
			out = binary.BigEndian.AppendUint16(out, uint16(r.payload))
		}
		m := len(out)
		out = append(out, b[hn:hn+r.payload]...)
		for i := range r.payload {
			out[m+i] ^= key[i&3]
		}
		b = b[hn+r.payload:]
	}
	if _, err := unix.Write(r.peer, out); err != nil {
		tb.Fatal(err)
	}
	// The loop: read and decode the echoes, 100 µs after the last send.
	got := 0
	for got < len(out) {
		k, err := unix.Read(int(r.c.FD()), r.rbuf)
		if err != nil {
			tb.Fatalf("client read: %v", err)
		}
		got += k
		r.l.Feed(r.c, r.rbuf[:k], r.now+100_000)
	}
}

// clientHeader parses the header of a masked, final binary client frame
// of n payload bytes (n < 65536) at the start of b: its length and mask
// key; ok false for any other frame.
func clientHeader(b []byte, n int) (hn int, key [4]byte, ok bool) {
	if len(b) < 2 || b[0] != 0x80|client.OpBinary || b[1]&0x80 == 0 {
		return 0, key, false
	}
	switch l := int(b[1] & 0x7f); {
	case l < 126 && l == n:
		hn = 2
	case l == 126 && len(b) >= 4 && int(binary.BigEndian.Uint16(b[2:])) == n:
		hn = 4
	default:
		return 0, key, false
	}
	if len(b) < hn+4+n {
		return 0, key, false
	}
	copy(key[:], b[hn:hn+4])
	return hn + 4, key, true
}

// TestRatePathAllocs proves a rate message's whole path allocates nothing
// in steady state: one message a step, and four due at once (batched into
// one write, echoed in one read). Allocations happen at most once per
// timeline second per loop (the timeline growing, a finished second's
// histogram merged into the phase's): 1 in rigRate messages here, which
// AllocsPerRun rounds away; BenchmarkRatePath reports the exact average.
func TestRatePathAllocs(t *testing.T) {
	for _, per := range []int{1, 4} {
		r := newRateRig(t, 1024, per)
		for range 20 {
			r.step(t)
		}
		before := r.run().part
		clienttest.ZeroAllocs(t, fmt.Sprintf("step of %d messages", per), 1000, func() { r.step(t) })
		p := r.run().part
		if want := int64(1001 * per); p.Sent-before.Sent != want || p.Recv-before.Recv != want || p.Failed != 0 || p.Late != 0 {
			t.Errorf("%d per step: sent %d recv %d failed %d late %d; want %d, %d, 0, 0 (errors %v)",
				per, p.Sent-before.Sent, p.Recv-before.Recv, p.Failed, p.Late, want, want, p.Errors)
		}
		if n := r.run().gate.Late.TotalCount(); n != p.Sent {
			t.Errorf("%d per step: send_late holds %d, want every message sent (%d)", per, n, p.Sent)
		}
		rr := r.run()
		rr.tl.Roll(rr.part.Latency.Histogram) // the second so far: its latencies into the phase's
		if lat := rr.part.Latency.Max(); lat < 100_000 || lat > 100_000+int64(per)*r.period+1000 {
			t.Errorf("%d per step: latency up to %d ns, want 100 µs after the last send", per, lat)
		}
	}
}

// BenchmarkRatePath measures one message through the rate path
// (including the peer's system calls on the socketpair).
func BenchmarkRatePath(b *testing.B) {
	for _, per := range []int{1, 4} {
		b.Run(map[int]string{1: "one a write", 4: "four a write"}[per], func(b *testing.B) {
			r := newRateRig(b, 1024, per)
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				r.step(b)
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N*per), "cpu-ns/msg")
			if p := r.run().part; p.Failed != 0 || p.Recv != p.Sent {
				b.Fatalf("sent %d recv %d failed %d: %v", p.Sent, p.Recv, p.Failed, p.Errors)
			}
		})
	}
}

// TestRateMemoryFollowsTimeRun: a phase's duration allocates nothing ahead
// (a 1000 h phase starts with the same few hundred KiB as a 1 s one), and
// the timeline grows one summary point per second run.
func TestRateMemoryFollowsTimeRun(t *testing.T) {
	for _, d := range []time.Duration{time.Second, 1000 * time.Hour} {
		l, _, _ := clienttest.DrivenLoop(t)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		begin(l, &job{phase: 1, slots: 1, total: 1, pacer: client.Pacer{Rate: 1, Duration: d}, start: l.Epoch().Add(time.Hour),
			hdr: client.AppendClientHeader(nil, client.OpBinary, 64, 0), payload: client.MakePayload(64, false), batch: client.DefaultPacedBatch, maxInflight: 16, loopMax: 16})
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("duration %v: starting allocated %d bytes, want < 1 MiB", d, got)
		}
		r := l.Run().(*run)
		start := r.start
		for s := int64(0); s < 5; s++ {
			r.tl.Second(start + s*int64(time.Second) + 1)
		}
		if len(r.tl.Seconds) != 5 || cap(r.tl.Seconds) > 8 {
			t.Errorf("duration %v: timeline of %d seconds (capacity %d) after 5 s, want 5", d, len(r.tl.Seconds), cap(r.tl.Seconds))
		}
		r.Finish(l, true, start+5*int64(time.Second))
		l.TakeShare()
	}
}

// TestRateSlackBatches: with a slack, a pump writes every message due by
// then, the next wake-up is not before the slack, each message's lateness
// is recorded from its own schedule, and the latency still counts from the
// schedule.
func TestRateSlackBatches(t *testing.T) {
	r := newRateRig(t, 64, 1)
	rr := r.run()
	rr.gate = client.NewPacedWake(time.Millisecond)
	// 10 messages due (1 ms at 10,000/s): one pump writes them all.
	r.now = rr.start + 10*r.period - 1
	rr.Pump(r.l, r.now)
	if rr.part.Sent != 10 {
		t.Fatalf("one pump after 1 ms sent %d, want 10", rr.part.Sent)
	}
	if w := rr.WakeAt(); w != r.now+int64(time.Millisecond) {
		t.Errorf("next wake at %d, want the pump + slack %d", w, r.now+int64(time.Millisecond))
	}
	h := rr.gate.Late
	if h.TotalCount() != 10 {
		t.Fatalf("send_late holds %d, want 10", h.TotalCount())
	}
	// Message k was due at k·100 µs, k = 0…9; all written at 1 ms − 1 ns
	// (the histogram keeps 3 significant digits).
	lo, hi := time.Duration(h.Min()), time.Duration(h.Max())
	if lo < 99*time.Microsecond || lo > 101*time.Microsecond || hi < 999*time.Microsecond || hi > 1001*time.Microsecond {
		t.Errorf("send lateness in [%v, %v], want [100µs, 1ms]", lo, hi)
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
