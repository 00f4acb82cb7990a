package procstat

import (
	"testing"
	"time"
)

// TestSeriesOver: the CPU of a part of a window, linear between readings,
// and only where readings cover it. The happy half reads spans inside the
// series; the sad half spans it cannot say anything about (before, after,
// reversed, too few readings) and a cumulative time that went down.
func TestSeriesOver(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// 1 s at 20% of a core (waiting 80%), then 1 s at 100%, then 1 s at
	// 50% (waiting 50%).
	s := Series{{at(0), 0, 0}, {at(1000), ms(200), ms(800)}, {at(2000), ms(1200), ms(800)}, {at(3000), ms(1700), ms(1300)}}
	tests := []struct {
		name      string
		s         Series
		from, to  int
		cpu, wall time.Duration
		wait      time.Duration
	}{
		{"one interval", s, 1000, 2000, ms(1000), ms(1000), 0},
		{"the whole series", s, 0, 3000, ms(1700), ms(3000), ms(1300)},
		{"inside an interval, linear", s, 1250, 1750, ms(500), ms(500), 0},
		{"across a reading", s, 1500, 2500, ms(750), ms(1000), ms(250)},
		{"before the first reading is not covered", s, -1000, 1000, ms(200), ms(1000), ms(800)},
		{"after the last reading is not covered", s, 2500, 4000, ms(250), ms(500), ms(250)},

		{"entirely before", s, -2000, -1000, 0, 0, 0},
		{"entirely after", s, 3500, 4000, 0, 0, 0},
		{"reversed", s, 2000, 1000, 0, 0, 0},
		{"empty span", s, 1000, 1000, 0, 0, 0},
		{"one reading only", Series{{at(0), ms(5), 0}}, 0, 1000, 0, 0, 0},
		{"no readings", nil, 0, 1000, 0, 0, 0},
		{"cumulative time went down", Series{{at(0), ms(500), ms(500)}, {at(1000), ms(100), ms(100)}}, 0, 1000, 0, ms(1000), 0},
	}
	for _, tt := range tests {
		cpu, wait, wall := tt.s.Over(at(tt.from), at(tt.to))
		if d := cpu - tt.cpu; d < -time.Microsecond || d > time.Microsecond || wall != tt.wall {
			t.Errorf("%s: cpu %v wall %v, want %v %v", tt.name, cpu, wall, tt.cpu, tt.wall)
		}
		if want := tt.wait; wait-want < -time.Microsecond || wait-want > time.Microsecond {
			t.Errorf("%s: wait %v, want %v", tt.name, wait, want)
		}
	}
}

// TestWindowKeepsSeries: a window's summary carries every reading's CPU,
// in order, so that its parts can be read afterwards.
func TestWindowKeepsSeries(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var w window
	for i, c := range []time.Duration{0, 50 * time.Millisecond, 80 * time.Millisecond} {
		w.add(reading{at: t0.Add(time.Duration(i) * 100 * time.Millisecond), cpu: c}, i > 0)
	}
	s := w.summary().CPU
	if len(s) != 3 || s[0].CPU != 0 || s[2].CPU != 80*time.Millisecond || !s[2].At.Equal(t0.Add(200*time.Millisecond)) {
		t.Fatalf("series %+v, want the three readings", s)
	}
	if cpu, _, wall := s.Over(t0.Add(100*time.Millisecond), t0.Add(200*time.Millisecond)); cpu != 30*time.Millisecond || wall != 100*time.Millisecond {
		t.Errorf("second interval: %v over %v, want 30ms over 100ms", cpu, wall)
	}
}

// TestSamplerReadsWait: a sampler of a live process reads its run-queue
// wait at every reading (never going down); one of a process whose
// threads it cannot list (a fixture without task/) has none, and says so.
func TestSamplerReadsWait(t *testing.T) {
	if _, err := (FS{}).RunQueueWait(0); err != nil {
		t.Skipf("no schedstat on this host: %v", err)
	}
	s := NewSampler(FS{}, 0, 10*time.Millisecond)
	s.Start()
	for end := time.Now().Add(40 * time.Millisecond); time.Now().Before(end); {
	}
	sum := s.Stop()
	if !sum.Waits || len(sum.CPU) < 3 {
		t.Fatalf("self: waits %v over %d readings, want read at each of at least 3", sum.Waits, len(sum.CPU))
	}
	for i := 1; i < len(sum.CPU); i++ {
		if sum.CPU[i].Wait < sum.CPU[i-1].Wait || sum.CPU[i].CPU < sum.CPU[i-1].CPU {
			t.Errorf("reading %d went down: %+v after %+v", i, sum.CPU[i], sum.CPU[i-1])
		}
	}

	f := NewSampler(fixtures, 1234, 10*time.Millisecond)
	f.Start()
	sum = f.Stop()
	if sum.Samples == 0 || sum.Waits {
		t.Errorf("fixture without task/: %d samples, waits %v, want samples and no waits", sum.Samples, sum.Waits)
	}
	for _, p := range sum.CPU {
		if p.Wait != 0 {
			t.Errorf("fixture: wait %v read", p.Wait)
		}
	}
}
