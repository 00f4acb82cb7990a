package procstat

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	const mib = 1 << 20

	type add struct {
		r    reading
		full bool
	}
	tests := []struct {
		name string
		adds []add
		want Summary
	}{
		{
			name: "empty",
			want: Summary{},
		},
		{
			// A phase shorter than the interval: only the Start and Stop
			// readings; the average is still right and min = max = avg.
			name: "shorter than one interval",
			adds: []add{
				{reading{at(0), ms(1000), 10 * mib, 0}, false},
				{reading{at(40), ms(1030), 12 * mib, 0}, false},
			},
			want: Summary{CPUMin: 75, CPUAvg: 75, CPUMax: 75, CPUSeconds: 0.03,
				MemMin: 10 * mib, MemAvg: 11 * mib, MemMax: 12 * mib, Samples: 2, Wall: ms(40)},
		},
		{
			// Two full intervals (50%, 100%) and a 50ms tail at 20%:
			// avg = 160ms / 250ms = 64%, not the mean of the samples.
			name: "ticks and a tail",
			adds: []add{
				{reading{at(0), 0, 30 * mib, 0}, false},
				{reading{at(100), ms(50), 20 * mib, 0}, true},
				{reading{at(200), ms(150), 40 * mib, 0}, true},
				{reading{at(250), ms(160), 30 * mib, 0}, false},
			},
			want: Summary{CPUMin: 50, CPUAvg: 64, CPUMax: 100, CPUSeconds: 0.16,
				MemMin: 20 * mib, MemAvg: 30 * mib, MemMax: 40 * mib, Samples: 4, Wall: ms(250)},
		},
		{
			// A busy tail after one idle interval: max is widened to avg so
			// that min <= avg <= max holds.
			name: "avg outside the samples",
			adds: []add{
				{reading{at(0), 0, mib, 0}, false},
				{reading{at(100), 0, mib, 0}, true},
				{reading{at(400), ms(600), mib, 0}, false},
			},
			want: Summary{CPUMin: 0, CPUAvg: 150, CPUMax: 150, CPUSeconds: 0.6,
				MemMin: mib, MemAvg: mib, MemMax: mib, Samples: 3, Wall: ms(400)},
		},
		{
			// Several cores: percent of one core goes above 100.
			name: "multi-core",
			adds: []add{
				{reading{at(0), 0, mib, 0}, false},
				{reading{at(500), ms(1500), mib, 0}, true},
				{reading{at(1000), ms(2500), mib, 0}, true},
			},
			want: Summary{CPUMin: 200, CPUAvg: 250, CPUMax: 300, CPUSeconds: 2.5,
				MemMin: mib, MemAvg: mib, MemMax: mib, Samples: 3, Wall: ms(1000)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w window
			for _, a := range tt.adds {
				w.add(a.r, a.full)
			}
			got := w.summary()
			if !summaryClose(got, tt.want) {
				t.Errorf("summary =\n  %+v\nwant\n  %+v", got, tt.want)
			}
		})
	}
}

func summaryClose(a, b Summary) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	return near(a.CPUMin, b.CPUMin) && near(a.CPUAvg, b.CPUAvg) && near(a.CPUMax, b.CPUMax) &&
		near(a.CPUSeconds, b.CPUSeconds) && a.MemMin == b.MemMin && a.MemAvg == b.MemAvg &&
		a.MemMax == b.MemMax && a.Samples == b.Samples && a.Wall == b.Wall
}

// TestSamplerSelf burns CPU in this process for about 300ms and checks the
// sampler against getrusage, an independent account of the same CPU time.
func TestSamplerSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	var before, after syscall.Rusage
	s := NewSampler(FS{}, os.Getpid(), 50*time.Millisecond)
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.Start()
	burn(300 * time.Millisecond)
	sum := s.Stop()
	wall := time.Since(start)
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		t.Fatal(err)
	}
	if sum.Err != nil {
		t.Fatalf("Stop: %v", sum.Err)
	}
	rusage := (tv(after.Utime) + tv(after.Stime) - tv(before.Utime) - tv(before.Stime)).Seconds()
	t.Logf("summary %+v; getrusage %.3fs over %v", sum, rusage, wall)

	if runtime.GOOS == "linux" && !sum.PreciseCPU {
		t.Errorf("PreciseCPU = false: the process CPU clock was not used on the live /proc")
	}
	// The CPU clock and getrusage share the kernel's accounting; the windows
	// differ by the sampler's own first and last reads.
	if d := math.Abs(sum.CPUSeconds - rusage); d > 0.01+0.05*rusage {
		t.Errorf("CPUSeconds = %.4f, getrusage says %.4f", sum.CPUSeconds, rusage)
	}
	// The busy loop runs on one core unless the host starves it; on a
	// loaded 2-core machine it still gets well over 30% of a core.
	if rusagePct := 100 * rusage / wall.Seconds(); rusagePct > 50 && sum.CPUAvg < 30 {
		t.Errorf("CPUAvg = %.1f%%, want > 30%% (getrusage: %.1f%%)", sum.CPUAvg, rusagePct)
	}
	if sum.CPUAvg > 100*float64(numCPU())+20 {
		t.Errorf("CPUAvg = %.1f%%, more than every core", sum.CPUAvg)
	}
	if !(sum.CPUMin <= sum.CPUAvg && sum.CPUAvg <= sum.CPUMax) {
		t.Errorf("want CPUMin <= CPUAvg <= CPUMax, got %.1f, %.1f, %.1f", sum.CPUMin, sum.CPUAvg, sum.CPUMax)
	}
	if sum.Samples < 4 { // Start, >= 2 ticks in 300ms at 50ms, Stop
		t.Errorf("Samples = %d, want >= 4", sum.Samples)
	}
	if sum.Wall < 300*time.Millisecond || sum.Wall > wall {
		t.Errorf("Wall = %v, want between 300ms and %v", sum.Wall, wall)
	}
	if sum.MemMin <= 0 || sum.MemMin > sum.MemAvg || sum.MemAvg > sum.MemMax {
		t.Errorf("want 0 < MemMin <= MemAvg <= MemMax, got %d, %d, %d", sum.MemMin, sum.MemAvg, sum.MemMax)
	}
}

// TestSamplerTicks reads the same process through a proc root that is not
// the live one: CPU times then come from /proc/<pid>/stat, in 10ms ticks.
func TestSamplerTicks(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	root := filepath.Join(t.TempDir(), "proc")
	if err := os.Symlink("/proc", root); err != nil {
		t.Fatal(err)
	}
	s := NewSampler(FS{Root: root}, os.Getpid(), 20*time.Millisecond)
	s.Start()
	burn(100 * time.Millisecond)
	sum := s.Stop()
	if sum.Err != nil || sum.PreciseCPU {
		t.Fatalf("summary %+v: want no error, PreciseCPU false", sum)
	}
	if ticks := sum.CPUSeconds / 0.01; math.Abs(ticks-math.Round(ticks)) > 1e-6 {
		t.Errorf("CPUSeconds = %v, want whole 10ms ticks", sum.CPUSeconds)
	}
}

func TestProcessCPUTime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	a, err := ProcessCPUTime(0)
	if err != nil {
		t.Fatal(err)
	}
	burn(20 * time.Millisecond)
	b, err := ProcessCPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if b <= a {
		t.Errorf("CPU time went from %v to %v while burning", a, b)
	}
	// Pids stop at 2^22 on Linux: this one never exists.
	if _, err := ProcessCPUTime(1<<22 + 1); !errors.Is(err, ErrExited) {
		t.Errorf("ProcessCPUTime(no such pid) = %v, want ErrExited", err)
	}
}

func TestSamplerPidZeroIsSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	st, err := FS{}.ReadStat(0)
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != os.Getpid() {
		t.Fatalf("ReadStat(0).PID = %d, want %d", st.PID, os.Getpid())
	}
}

// TestSamplerExited removes the process's stat file mid-window: Stop returns
// what was read before, with an error wrapping ErrExited.
func TestSamplerExited(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "77")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(utime, rss int) {
		line := fmt.Sprintf("77 (srv) S 1 77 77 0 -1 0 0 0 0 0 %d 0 0 0 20 0 4 0 100 1000000 %d 0\n", utime, rss)
		// Write and rename, so the sampler never reads a half-written file.
		tmp := filepath.Join(root, "stat.tmp")
		if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "stat")); err != nil {
			t.Fatal(err)
		}
	}
	write(100, 256)
	ticks := make(chan struct{}, 100)
	s := NewSampler(FS{Root: root, PageSize: 4096}, 77, time.Millisecond)
	s.afterTick = func() {
		select {
		case ticks <- struct{}{}:
		default: // the test is not waiting; never block the sampler
		}
	}
	waitTicks := func(n int) {
		for i := 0; i < n; i++ {
			select {
			case <-ticks:
			case <-time.After(10 * time.Second):
				t.Fatal("sampler does not tick")
			}
		}
	}
	s.Start()
	waitTicks(2)
	write(110, 512)
	// A tick may have started reading before the write: wait for two more.
	drain(ticks)
	waitTicks(2)
	if err := os.Remove(filepath.Join(dir, "stat")); err != nil {
		t.Fatal(err)
	}
	// The next tick's read fails and ends the sampling loop.
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("sampler still running after the process exited")
	}
	sum := s.Stop()
	if !errors.Is(sum.Err, ErrExited) {
		t.Fatalf("Err = %v, want ErrExited", sum.Err)
	}
	if sum.Samples < 2 || sum.MemMin != 256*4096 || sum.MemMax != 512*4096 {
		t.Errorf("summary %+v: want >= 2 samples, mem 1MiB..2MiB", sum)
	}
	if math.Abs(sum.CPUSeconds-0.1) > 1e-9 {
		t.Errorf("CPUSeconds = %v, want 0.1", sum.CPUSeconds)
	}
	if again := s.Stop(); again.Samples != sum.Samples || !errors.Is(again.Err, ErrExited) {
		t.Errorf("second Stop = %+v, want the same summary", again)
	}
}

func TestSamplerZombie(t *testing.T) {
	s := NewSampler(fixtures, 999, time.Second)
	s.Start()
	sum := s.Stop()
	if !errors.Is(sum.Err, ErrExited) || sum.Samples != 0 {
		t.Fatalf("Stop() = %+v, want ErrExited and no samples", sum)
	}
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func burn(d time.Duration) {
	x := 1.0
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := 0; i < 1000; i++ {
			x = math.Sqrt(x + float64(i))
		}
	}
	sink = x
}

var sink float64

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

func numCPU() int {
	c, err := FS{}.ReadCPUInfo()
	if err != nil || c.CPUs < 1 {
		return 1
	}
	return c.CPUs
}

func TestNextTickShorterAtFirst(t *testing.T) {
	s := NewSampler(FS{}, 0, time.Second)
	for _, c := range []struct {
		since, want time.Duration
	}{{0, 100 * time.Millisecond}, {900 * time.Millisecond, 100 * time.Millisecond}, {time.Second, time.Second}, {5 * time.Second, time.Second}} {
		if got := s.nextTick(c.since); got != c.want {
			t.Errorf("nextTick(%s) = %s, want %s", c.since, got, c.want)
		}
	}
}
