package client

import (
	"testing"
	"time"
)

// TestTimelineSeconds: echoes count in the second they completed, each
// second keeps its own latency summary, the phase's histogram gets every
// latency once rolled, and times before the start count in second 0.
func TestTimelineSeconds(t *testing.T) {
	all := NewHistogram()
	tl := NewTimeline(int64(10 * time.Second))
	s := int64(time.Second)
	for _, e := range []struct{ at, lat int64 }{
		{9 * s, 5},              // before the start: second 0
		{10 * s, 1000},          // second 0
		{10*s + s - 1, 3000},    // second 0, its last ns
		{11 * s, 7000},          // second 1
		{13*s + s/2, 100_000},   // second 3 (2 stays empty)
		{13*s + s/2, 200_000},   // second 3
		{13*s + s/2, 4_000_000}, // second 3
	} {
		_, sec := tl.Second(e.at)
		sec.Sent++
		tl.Echo(e.at, e.lat, all)
	}
	tl.Roll(all)
	if len(tl.Seconds) != 4 {
		t.Fatalf("%d seconds: %+v", len(tl.Seconds), tl.Seconds)
	}
	for i, w := range []PacedSecond{
		{Sent: 3, Recv: 3, P50: 1000, P99: 3000, Max: 3000},
		{Sent: 1, Recv: 1, P50: 7000, P99: 7000, Max: 7000},
		{},
		{Sent: 3, Recv: 3, P50: 200_000, P99: 4_000_000, Max: 4_000_000},
	} {
		g := tl.Seconds[i]
		// HDR values are exact to 3 significant digits.
		near := func(a, b time.Duration) bool { return a >= b && a <= b+b/500 }
		if g.Sent != w.Sent || g.Recv != w.Recv || !near(g.P50, w.P50) || !near(g.P99, w.P99) || !near(g.Max, w.Max) {
			t.Errorf("second %d: %+v, want %+v", i, g, w)
		}
	}
	if all.TotalCount() != 7 || tl.cur.TotalCount() != 0 {
		t.Errorf("phase histogram holds %d, current second %d; want 7, 0", all.TotalCount(), tl.cur.TotalCount())
	}
}

// BenchmarkTimelineEcho is what the timeline adds to an echo: counting it
// in its second and recording its latency there (a roll every second of
// loop time: one echo per 2 µs here), against recording the latency
// straight into the phase's histogram.
func BenchmarkTimelineEcho(b *testing.B) {
	b.Run("timeline", func(b *testing.B) {
		all := NewHistogram()
		tl := NewTimeline(0)
		now := int64(0)
		for b.Loop() {
			now += 2000
			_, s := tl.Second(now)
			s.Sent++
			tl.Echo(now, 1_000_000+now%1_000_000, all)
		}
	})
	b.Run("histogram only", func(b *testing.B) {
		all := NewHistogram()
		now := int64(0)
		for b.Loop() {
			now += 2000
			Record(all, 1_000_000+now%1_000_000)
		}
	})
}
