package client

import (
	"fmt"
	"math"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestPacerPace(t *testing.T) {
	full := Pacer{Rate: 100, Duration: time.Second}                        // a message every 10 ms
	ramp := Pacer{Rate: 100, Ramp: time.Second, Duration: 2 * time.Second} // 50 in the ramp, then 100/s
	slow := Pacer{Rate: 0.1, Duration: 30 * time.Second}                   // one message every 10 s
	cases := []struct {
		name    string
		p       Pacer
		elapsed time.Duration
		sent    int64
		phase   float64
		wait    time.Duration
		stop    bool
	}{
		// Happy: on time.
		{"first is due at once", full, 0, 0, 0, 0, false},
		{"next is one period later", full, 0, 1, 0, 10 * ms, false},
		{"half way to the next", full, 15 * ms, 2, 0, 5 * ms, false},
		{"exactly due", full, 20 * ms, 2, 0, 0, false},
		{"phase shifts the timetable", full, 0, 0, 0.5, 5 * ms, false},
		{"phase shifts every message", full, 10 * ms, 1, 0.25, 2500 * time.Microsecond, false},
		{"fractional rate waits 10 s", slow, time.Second, 1, 0, 9 * time.Second, false},
		{"fractional rate with a phase", slow, 0, 0, 0.3, 3 * time.Second, false},
		{"ramp starts slowly", ramp, 0, 1, 0, time.Duration(math.Sqrt(2*1.0/100) * 1e9), false},
		{"ramp: 50 messages by its end", ramp, time.Second, 50, 0, 0, false},
		{"after the ramp: full rate", ramp, time.Second, 51, 0, 10 * ms, false},
		// Sad: behind, catching up; the end.
		{"behind: send at once", full, 500 * ms, 3, 0, 0, false},
		{"far behind: still at once", full, 990 * ms, 0, 0.9, 0, false},
		{"last message", full, 990 * ms, 99, 0, 0, false},
		{"stop after the last", full, 990 * ms, 100, 0, 0, true},
		{"stop even when early", full, 0, 100, 0, 0, true},
		{"phase puts the last late in the period", full, 995 * ms, 99, 0.6, time.Millisecond, false},
		{"phase: stop after the last", full, 999 * ms, 100, 0.6, 0, true},
		{"fractional: 3 in 30 s", slow, 25 * time.Second, 3, 0, 0, true},
		{"fractional: the third is due", slow, 25 * time.Second, 2, 0, 0, false},
		{"ramp: stop at the end", ramp, 2 * time.Second, 150, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wait, stop := c.p.Pace(c.elapsed, c.sent, c.phase)
			if stop != c.stop || (!stop && absDur(wait-c.wait) > time.Microsecond) {
				t.Errorf("Pace(%v, %d, %v) = %v, %v; want %v, %v", c.elapsed, c.sent, c.phase, wait, stop, c.wait, c.stop)
			}
		})
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func TestPacerDue(t *testing.T) {
	full := Pacer{Rate: 100, Duration: time.Second}
	ramp := Pacer{Rate: 100, Ramp: time.Second, Duration: 2 * time.Second}
	cases := []struct {
		p       Pacer
		elapsed time.Duration
		phase   float64
		want    int64
	}{
		{full, -ms, 0, 0},
		{full, 0, 0, 1},
		{full, 0, 0.5, 0},
		{full, 5 * ms, 0.5, 1},
		{full, 9 * ms, 0, 1},
		{full, 10 * ms, 0, 2},
		{full, 999 * ms, 0, 100},
		{full, time.Second, 0, 100},     // nothing is due at the end itself
		{full, time.Hour, 0, 100},       // nor after
		{full, time.Hour, 0.999, 100},   // the last at 999.99 ms
		{ramp, 999 * ms, 0, 50},         // credit 49.9: messages 0…49
		{ramp, time.Second, 0, 51},      // message 50 at exactly 1 s
		{ramp, 2 * time.Second, 0, 150}, // 50 + 100
		{Pacer{Rate: 0.1, Duration: 10 * time.Second}, time.Hour, 0.5, 1},
		{Pacer{Rate: 1e-12, Duration: time.Hour}, time.Hour, 0.5, 0}, // not even one
	}
	for _, c := range cases {
		if got := c.p.Due(c.elapsed, c.phase); got != c.want {
			t.Errorf("%+v.Due(%v, %v) = %d, want %d", c.p, c.elapsed, c.phase, got, c.want)
		}
	}
}

// TestPacerExpected: what a span of the timetable has due on average over
// phases, the ramp's triangle included; nothing outside [0, Duration). It
// agrees with Due averaged over many phases.
func TestPacerExpected(t *testing.T) {
	full := Pacer{Rate: 100, Duration: 2500 * ms}
	ramp := Pacer{Rate: 100, Ramp: time.Second, Duration: 2 * time.Second}
	cases := []struct {
		p        Pacer
		from, to time.Duration
		want     float64
	}{
		{full, 0, time.Second, 100},
		{full, time.Second, 2 * time.Second, 100},
		{full, 2 * time.Second, 3 * time.Second, 50}, // the phase ends at 2.5 s
		{ramp, 0, time.Second, 50},                   // the ramp's triangle
		{ramp, 500 * ms, time.Second, 37.5},
		{ramp, time.Second, 2 * time.Second, 100},

		{full, 3 * time.Second, 4 * time.Second, 0}, // after the end
		{full, -time.Second, 0, 0},                  // before the start
		{full, time.Second, time.Second, 0},         // empty
		{full, 2 * time.Second, time.Second, 0},     // reversed
	}
	for _, c := range cases {
		if got := c.p.Expected(c.from, c.to); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%+v.Expected(%v, %v) = %v, want %v", c.p, c.from, c.to, got, c.want)
		}
	}
	// Over phases spread evenly, the messages due agree with Expected.
	const n = 1000
	for _, p := range []Pacer{full, ramp} {
		var due int64
		for i := range n {
			ph := float64(i) / n
			due += p.Due(1500*ms-1, ph) - p.Due(500*ms-1, ph)
		}
		if want := n * p.Expected(500*ms, 1500*ms); math.Abs(float64(due)-want) > 0.01*want {
			t.Errorf("%+v: %d due over %d phases in [0.5 s, 1.5 s), Expected says %v", p, due, n, want)
		}
	}
}

// TestPacerAgrees checks, over many times and phases, that Due and At say
// the same thing: message k is due by t exactly when At(k) <= t < Duration.
func TestPacerAgrees(t *testing.T) {
	for _, p := range []Pacer{
		{Rate: 200, Duration: 10 * time.Second},
		{Rate: 3, Ramp: 2 * time.Second, Duration: 7 * time.Second},
		{Rate: 0.37, Duration: time.Minute},
		{Rate: 1e6, Duration: 50 * ms},
	} {
		for _, phase := range []float64{0, 1.0 / 3, 0.5, 0.999999} {
			for i := range 2000 {
				el := time.Duration(float64(p.Duration) * 1.1 * float64(i) / 2000)
				k := p.Due(el, phase)
				if k > 0 && (p.At(k-1, phase) > el || p.At(k-1, phase) >= p.Duration) {
					t.Fatalf("%+v phase %v: Due(%v) = %d but At(%d) = %v", p, phase, el, k, k-1, p.At(k-1, phase))
				}
				if at := p.At(k, phase); at <= el && at < p.Duration {
					t.Fatalf("%+v phase %v: Due(%v) = %d but At(%d) = %v is due too", p, phase, el, k, k, at)
				}
			}
		}
	}
}

// TestCursorOrder walks a timetable with the cursor and checks that it
// visits every message of every connection once, in time order, and that
// the connections' sends are spread evenly over the period.
func TestCursorOrder(t *testing.T) {
	for _, ramp := range []time.Duration{0, 300 * ms} {
		t.Run(fmt.Sprint("ramp=", ramp), func(t *testing.T) {
			p := Pacer{Rate: 10, Ramp: ramp, Duration: time.Second}
			// This loop has connections 3…7 of 10 (another loop has the rest).
			cu := Cursor{Pacer: p, First: 3, Total: 10, Conns: 5}
			counts := make([]int64, cu.Conns)
			last := time.Duration(-1)
			for cu.At() < p.Duration {
				at := cu.At()
				if at < last {
					t.Fatalf("event (%d, %d) at %v before the previous at %v", cu.k, cu.Index, at, last)
				}
				if cu.k != counts[cu.Index] {
					t.Fatalf("event (%d, %d): connection's message %d expected", cu.k, cu.Index, counts[cu.Index])
				}
				last = at
				counts[cu.Index]++
				cu.Advance()
			}
			for j, n := range counts {
				if want := p.Total(cu.Phase(j)); n != want {
					t.Errorf("connection %d: %d events, want %d", j, n, want)
				}
			}
			if ramp == 0 {
				// Phases 0.3…0.7 of a 100 ms period: 30, 40, … 70 ms.
				for j := range cu.Conns {
					if got, want := p.At(0, cu.Phase(j)), time.Duration(30+10*j)*ms; absDur(got-want) > time.Microsecond {
						t.Errorf("connection %d: first message at %v, want %v", j, got, want)
					}
				}
			}
		})
	}
}

// TestCursorSeek: after seek(t) the cursor is at the first event after t,
// as if it had walked there.
func TestCursorSeek(t *testing.T) {
	for _, p := range []Pacer{
		{Rate: 10, Duration: 3 * time.Second},
		{Rate: 7, Ramp: time.Second, Duration: 3 * time.Second},
		{Rate: 1000, Duration: time.Second},
	} {
		walk := Cursor{Pacer: p, First: 2, Total: 9, Conns: 4}
		for step := 0; walk.At() < p.Duration; step++ {
			at := walk.At()
			for _, el := range []time.Duration{at - 1, at - time.Microsecond} {
				if el < 0 {
					continue
				}
				sk := Cursor{Pacer: p, First: 2, Total: 9, Conns: 4}
				sk.Seek(el)
				if sk.k != walk.k || sk.Index != walk.Index {
					t.Fatalf("%+v: seek(%v) = (%d, %d), want (%d, %d)", p, el, sk.k, sk.Index, walk.k, walk.Index)
				}
			}
			walk.Advance()
		}
	}
}

func TestMarkerRoundTrip(t *testing.T) {
	b := make([]byte, MarkerLen+3)
	for _, c := range []struct {
		seq uint64
		at  int64
	}{{0, 0}, {1, 5000}, {1<<40 + 7, int64(time.Hour)}, {math.MaxUint64, math.MaxInt64}} {
		PutMarker(b, c.seq, c.at)
		if seq, at := ReadMarker(b); seq != c.seq || at != c.at {
			t.Errorf("marker (%d, %d) read back as (%d, %d)", c.seq, c.at, seq, at)
		}
	}
}

// TestPacingAllocs: the pacer, the cursor and the marker allocate nothing.
func TestPacingAllocs(t *testing.T) {
	p := Pacer{Rate: 200, Ramp: time.Second, Duration: 10 * time.Second}
	cu := Cursor{Pacer: p, First: 0, Total: 1000, Conns: 1000}
	var b [MarkerLen]byte
	el := time.Duration(0)
	allocs := testing.AllocsPerRun(10000, func() {
		el += 37 * time.Microsecond
		_ = p.Due(el, 0.25)
		_, _ = p.Pace(el, 3, 0.25)
		cu.Advance()
		_ = cu.At()
		PutMarker(b[:], 42, int64(el))
		_, _ = ReadMarker(b[:])
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run, want 0", allocs)
	}
}

func BenchmarkPacerPace(b *testing.B) {
	p := Pacer{Rate: 200, Duration: time.Hour}
	b.ReportAllocs()
	var sent int64
	el := time.Duration(0)
	for b.Loop() {
		el += 5 * time.Millisecond
		if wait, _ := p.Pace(el, sent, 0.37); wait == 0 {
			sent++
		}
	}
}

func BenchmarkPacerDue(b *testing.B) {
	for _, p := range []Pacer{{Rate: 200, Duration: time.Hour}, {Rate: 200, Ramp: time.Hour, Duration: 2 * time.Hour}} {
		b.Run(fmt.Sprint("ramp=", p.Ramp), func(b *testing.B) {
			b.ReportAllocs()
			el := time.Duration(0)
			var n int64
			for b.Loop() {
				el += 5 * time.Millisecond
				n += p.Due(el, 0.37)
			}
			if n == 0 {
				b.Fatal("nothing due")
			}
		})
	}
}

// BenchmarkCursor is the scheduler's cost per timetable event.
func BenchmarkCursor(b *testing.B) {
	cu := Cursor{Pacer: Pacer{Rate: 200, Duration: 1 << 62}, Total: 10000, Conns: 10000}
	b.ReportAllocs()
	for b.Loop() {
		_ = cu.At()
		cu.Advance()
	}
}

func BenchmarkMarker(b *testing.B) {
	var buf [MarkerLen]byte
	b.ReportAllocs()
	var sum uint64
	for i := 0; b.Loop(); i++ {
		PutMarker(buf[:], uint64(i), int64(i)*7)
		seq, at := ReadMarker(buf[:])
		sum += seq + uint64(at)
	}
	if sum == 0 {
		b.Fatal("marker read back nothing")
	}
}
