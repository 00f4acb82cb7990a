package client

import "testing"

func TestNativeBucket(t *testing.T) {
	for _, v := range []float64{1e-6, 0.000123, 0.001, 0.0015, 0.01, 0.5, 1, 1.0001, 2, 3, 100} {
		i := NativeBucket(v)
		lo, hi := NativeUpper(i-1), NativeUpper(i)
		if !(v > lo*(1-1e-12) && v <= hi*(1+1e-12)) {
			t.Errorf("%g: bucket %d = (%g, %g]", v, i, lo, hi)
		}
	}
	if NativeBucket(1) != 0 || NativeBucket(2) != 8 || NativeBucket(0.5) != -8 {
		t.Errorf("powers of two sit on their bucket's upper bound: 1→%d 2→%d 0.5→%d", NativeBucket(1), NativeBucket(2), NativeBucket(0.5))
	}
}

// TestLivePublish: loops publish differences of their running totals; a
// shard's snapshot adds to the merged one, histograms exactly.
func TestLivePublish(t *testing.T) {
	var l Live
	var a, b LiveCounts
	l.publish(&a, LiveCounts{Sent: 10, Recv: 8})
	l.publish(&b, LiveCounts{Sent: 5, Late: 1})
	l.publish(&a, LiveCounts{Sent: 30, Recv: 29, Failed: 1, Lost: 2})
	h := NewHistogram()
	for _, v := range []int64{1e6, 1e6, 2e6, 50e6} {
		record(h, v)
	}
	l.observe(h)
	s := l.Snapshot()
	if s.Sent != 35 || s.Recv != 29 || s.Failed != 1 || s.Lost != 2 || s.Late != 1 || s.Latency.Count != 4 {
		t.Fatalf("snapshot %+v", s)
	}
	if n := s.Latency.Buckets[NativeBucket(0.001)]; n != 2 {
		t.Errorf("1ms bucket %d, want 2: %v", n, s.Latency.Buckets)
	}
	l.SetShard(1, "b", LiveSnapshot{Sent: 100, Latency: s.Latency})
	m := l.Snapshot()
	if m.Sent != 135 || m.Latency.Count != 8 || m.Latency.Buckets[NativeBucket(0.05)] != 2 {
		t.Errorf("merged %+v", m)
	}
	if sh := l.Shards(); len(sh) != 2 || sh[1].Name != "b" || sh[1].Sent != 100 {
		t.Errorf("shards %+v", sh)
	}
	var none *Live
	none.publish(&a, LiveCounts{Sent: 1}) // no Live: nothing, no panic
}
