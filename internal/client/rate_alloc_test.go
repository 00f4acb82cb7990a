package client

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// rateRig drives one loop's rate phase synchronously over a socketpair, on
// a fake clock: each step advances the clock by `per` messages' worth of
// time, pumps (the loop writes the messages due, batched), plays an
// allocation-free echo server on the peer end, and feeds the echoes back
// to the loop. The whole per-message path runs — pacing, marker, masking,
// write, decode, verification, histogram — without epoll_wait.
type rateRig struct {
	l       *Loop
	c       *Conn
	peer    int
	payload int
	per     int   // messages per step
	period  int64 // ns between two messages
	now     int64 // fake loop clock
	in, out []byte
}

const rigRate = 10000 // messages per second: a timeline second is 10,000 messages

func newRateRig(tb testing.TB, payload, per int) *rateRig {
	tb.Helper()
	l, c, peer := loopPair(tb)
	p := MakePayload(payload, false)
	flen := frameHeaderLen(payload) + payload
	r := &rateRig{l: l, c: c, peer: peer, payload: payload, per: per, period: int64(time.Second / rigRate),
		in: make([]byte, per*flen), out: make([]byte, 0, per*(flen+10))}
	l.rateStart(&rateJob{
		phase:       1,
		slots:       1,
		first:       0,
		total:       1,
		pacer:       Pacer{Rate: rigRate, Duration: time.Hour},
		start:       l.epoch.Add(time.Hour), // t = 0 in the fake clock's future: nothing is due yet
		drain:       int64(time.Second),
		hdr:         AppendClientHeader(nil, OpBinary, payload, 0),
		payload:     p,
		verify:      true,
		batch:       DefaultRateBatch,
		maxInflight: 1000,
		loopMax:     1 << 30,
		lateAfter:   int64(time.Millisecond),
	})
	if rr, ok := l.ph.(*rateRun); !ok || rr.part.Sent != 0 {
		tb.Fatal("rateStart sent early or ended")
	}
	r.now = l.ph.(*rateRun).start - r.period
	tb.Cleanup(func() {
		if l.ph != nil {
			l.rateFinish(true, r.now)
			<-l.results
		}
		l.shutdown()
		unix.Close(r.peer)
	})
	return r
}

// step sends r.per messages and completes their echoes.
func (r *rateRig) step(tb testing.TB) {
	r.now += int64(r.per) * r.period
	r.l.ratePump(r.now)
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
		h, hn, err := parseFrameHeader(b)
		if err != nil || hn == 0 || !h.masked || int(h.length) != r.payload {
			tb.Fatalf("bad client frame %+v %v", h, err)
		}
		out = append(out, 0x80|OpBinary)
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
			out[m+i] ^= h.key[i&3]
		}
		b = b[hn+r.payload:]
	}
	if _, err := unix.Write(r.peer, out); err != nil {
		tb.Fatal(err)
	}
	// The loop: read and decode the echoes, 100 µs after the last send.
	got := 0
	for got < len(out) {
		k, e := rawRead(r.c.fd, r.l.rbuf)
		if e != 0 {
			tb.Fatalf("client read: %v", e)
		}
		got += k
		r.l.feed(r.c, r.l.rbuf[:k], r.now+100_000)
	}
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
		before := r.l.ph.(*rateRun).part
		allocs := testing.AllocsPerRun(1000, func() { r.step(t) })
		if allocs != 0 {
			t.Errorf("%d per step: %v allocations per step, want 0", per, allocs)
		}
		p := r.l.ph.(*rateRun).part
		if want := int64(1001 * per); p.Sent-before.Sent != want || p.Recv-before.Recv != want || p.Failed != 0 || p.Late != 0 {
			t.Errorf("%d per step: sent %d recv %d failed %d late %d; want %d, %d, 0, 0 (errors %v)",
				per, p.Sent-before.Sent, p.Recv-before.Recv, p.Failed, p.Late, want, want, p.Errors)
		}
		if n := r.l.ph.(*rateRun).gate.Late.TotalCount(); n != p.Sent {
			t.Errorf("%d per step: send_late holds %d, want every message sent (%d)", per, n, p.Sent)
		}
		if lat := r.l.ph.(*rateRun).tl.cur.Max(); lat < 100_000 || lat > 100_000+int64(per)*r.period+1000 {
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
			if p := r.l.ph.(*rateRun).part; p.Failed != 0 || p.Recv != p.Sent {
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
		l, _, peer := loopPair(t)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		l.rateStart(&rateJob{phase: 1, slots: 1, total: 1, pacer: Pacer{Rate: 1, Duration: d}, start: l.epoch.Add(time.Hour),
			hdr: AppendClientHeader(nil, OpBinary, 64, 0), payload: MakePayload(64, false), batch: DefaultRateBatch, maxInflight: 16, loopMax: 16})
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("duration %v: starting allocated %d bytes, want < 1 MiB", d, got)
		}
		r := l.ph.(*rateRun)
		start := r.start
		for s := int64(0); s < 5; s++ {
			r.tl.Second(start + s*int64(time.Second) + 1)
		}
		if len(r.tl.Seconds) != 5 || cap(r.tl.Seconds) > 8 {
			t.Errorf("duration %v: timeline of %d seconds (capacity %d) after 5 s, want 5", d, len(r.tl.Seconds), cap(r.tl.Seconds))
		}
		l.rateFinish(true, start+5*int64(time.Second))
		<-l.results
		l.shutdown()
		unix.Close(peer)
	}
}
