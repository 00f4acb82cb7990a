package procstat

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"
)

// DefaultInterval is the Sampler's interval when NewSampler is given 0.
const DefaultInterval = 500 * time.Millisecond

// Summary is a process's CPU and memory over one window (Start to Stop).
type Summary struct {
	// CPUAvg is the CPU time spent in the window divided by the window's wall
	// time, in percent of one core: the true average, not a mean of samples.
	CPUAvg float64
	// CPUMin and CPUMax are the lowest and highest CPU use of one sampling
	// interval, percent of one core. The tail after the last tick (shorter
	// than an interval) is not a sample of its own: at 10ms tick resolution a
	// short tail would read as noise. Both are widened to include CPUAvg, so
	// CPUMin <= CPUAvg <= CPUMax; when no full interval elapsed they equal
	// CPUAvg.
	CPUMin, CPUMax float64
	// CPUSeconds is the CPU time (user + system) spent in the window.
	CPUSeconds float64
	// MemMin, MemAvg and MemMax are the resident set size in bytes: lowest,
	// mean and highest of the readings (at Start, every tick, and Stop).
	MemMin, MemAvg, MemMax int64
	// Samples is the number of readings taken (Start and Stop included).
	Samples int
	// PreciseCPU is true when the CPU times came from the process's CPU
	// clock (nanoseconds; see ProcessCPUTime) rather than from the 10ms ticks
	// of /proc/<pid>/stat. The sampler uses the clock when it reads the live
	// /proc (FS.Root "/proc" or empty) on Linux.
	PreciseCPU bool
	// Wall is the wall time the figures cover: Start to Stop, or to the last
	// reading if the process exited.
	Wall time.Duration
	// Procs is the most processes measured at one reading: 1 for a
	// single process; with a tree sampler, the process and its descendants.
	Procs int
	// RootCPUSeconds is the CPU time of the sampled process alone (without
	// its descendants) in the window; with a single-process sampler it
	// equals CPUSeconds. A root that idles while CPUSeconds is large is a
	// wrapper (a shell, npm, a supervisor) around the real server.
	RootCPUSeconds float64
	// CPU is every reading's cumulative CPU time, for the CPU of a part
	// of the window (Series.Over), with its run-queue wait when Waits.
	CPU Series
	// Waits is true when every reading of CPU holds the process's
	// run-queue wait (RunQueueWait, over a tree's processes too): not with
	// a scrape sampler, without schedstat, or past MaxWaitThreads.
	Waits bool
	// Err is the first read failure, nil if none. When the process exited
	// during the window it wraps ErrExited, and the other fields describe the
	// window up to the last successful reading.
	Err error
}

// Sampler measures one process's CPU and RSS over a window. Call Start once,
// then Stop once.
type Sampler struct {
	fs       FS
	pid      int
	interval time.Duration
	tree     bool         // measure pid and all its descendants
	scrape   string       // a Prometheus endpoint to read instead of proc (NewScrapeSampler)
	client   *http.Client // for scrape

	procs               int           // most processes at one reading
	rootFirst, rootLast time.Duration // the root process's own CPU time

	w       window
	err     error
	precise bool // CPU from ProcessCPUTime
	waits   bool // run-queue wait read at every reading so far
	stop    chan struct{}
	done    chan struct{}

	afterTick func() // tests: called after each tick's reading
}

// NewSampler returns a sampler of the process pid (0: the calling process)
// that reads fs every interval (0: DefaultInterval).
func NewSampler(fs FS, pid int, interval time.Duration) *Sampler {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Sampler{fs: fs, pid: pid, interval: interval}
}

// NewTreeSampler is NewSampler for a process and all its descendants,
// found again at every reading: their CPU times (and those of descendants
// that exited and were reaped inside the tree) and their resident sets are
// summed. This measures a server started through a wrapper (`sh -c`, npm,
// a supervisor) as the whole server, not as the wrapper. A descendant that
// leaves the tree (re-parented to init after its parent exited) is no
// longer counted.
func NewTreeSampler(fs FS, pid int, interval time.Duration) *Sampler {
	s := NewSampler(fs, pid, interval)
	s.tree = true
	return s
}

// Start takes the first reading and starts sampling every interval.
func (s *Sampler) Start() {
	if s.stop != nil {
		panic("procstat: Sampler started twice")
	}
	s.stop = make(chan struct{})
	s.done = make(chan struct{})
	if s.fs.live() && s.scrape == "" {
		_, err := ProcessCPUTime(s.pid)
		s.precise = err == nil
	}
	s.waits = s.scrape == "" // until a reading fails
	r, err := s.read()
	if err != nil {
		s.err = err
		close(s.done)
		return
	}
	s.w.add(r, false)
	go s.loop()
}

// nextTick is the wait before the next reading: a tenth of the interval
// during the first interval, so that a phase shorter than the interval still
// gets several samples for its min and max, then the interval itself.
func (s *Sampler) nextTick(sinceStart time.Duration) time.Duration {
	if sinceStart < s.interval {
		return max(s.interval/10, time.Millisecond)
	}
	return s.interval
}

func (s *Sampler) loop() {
	defer close(s.done)
	start := time.Now()
	t := time.NewTimer(s.nextTick(0))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			t.Reset(s.nextTick(time.Since(start)))
			r, err := s.read()
			if err == nil {
				s.w.add(r, true)
			} else {
				s.err = err
			}
			if s.afterTick != nil {
				s.afterTick()
			}
			if err != nil {
				return
			}
		}
	}
}

// Stop takes the last reading, ends sampling and returns the window's
// summary. If the process exited, Summary.Err says so and the summary covers
// what was collected.
func (s *Sampler) Stop() Summary {
	if s.stop == nil {
		return Summary{Err: fmt.Errorf("procstat: Sampler stopped before Start")}
	}
	select {
	case <-s.stop: // stopped already
	default:
		close(s.stop)
		<-s.done // the loop no longer touches s.w and s.err
		if s.err == nil {
			if r, err := s.read(); err != nil {
				s.err = err
			} else {
				s.w.add(r, false)
			}
		}
	}
	sum := s.w.summary()
	sum.Err = s.err
	sum.Procs = s.procs
	sum.RootCPUSeconds = (s.rootLast - s.rootFirst).Seconds()
	sum.PreciseCPU = s.precise && sum.Samples > 0
	sum.Waits = s.waits && sum.Samples > 0
	if !sum.Waits {
		for i := range sum.CPU {
			sum.CPU[i].Wait = 0 // a wait read only part of the time is none
		}
	}
	return sum
}

func (s *Sampler) read() (reading, error) {
	if s.scrape != "" {
		cpu, rss, err := Scrape(context.Background(), s.client, s.scrape)
		if err != nil {
			return reading{}, err
		}
		s.procs = 1
		if s.w.n == 0 {
			s.rootFirst = cpu
		}
		s.rootLast = cpu
		return reading{at: time.Now(), cpu: cpu, rss: rss}, nil
	}
	stats := []Stat{}
	if s.tree {
		var err error
		if stats, err = s.fs.Tree(s.pid); err != nil {
			return reading{}, err
		}
	} else {
		st, err := s.fs.ReadStat(s.pid)
		if err != nil {
			return reading{}, err
		}
		if st.Exited() {
			return reading{}, fmt.Errorf("procstat: pid %d: %w (state %c)", s.pid, ErrExited, st.State)
		}
		stats = append(stats, st)
	}
	r := reading{at: time.Now()}
	for i, st := range stats {
		cpu := st.CPU()
		if s.precise {
			pid := st.PID
			if i == 0 {
				pid = s.pid // 0 reads the calling process's own clock
			}
			c, err := ProcessCPUTime(pid)
			switch {
			case err == nil:
				cpu = c
			case i == 0:
				return reading{}, err
			}
			// A descendant that exited since the scan keeps its ticks.
		}
		if i == 0 {
			if s.w.n == 0 {
				s.rootFirst = cpu
			}
			s.rootLast = cpu
		}
		if s.tree {
			// Children reaped inside the tree move their time here.
			cpu += st.CUTime + st.CSTime
		}
		r.cpu += cpu
		r.rss += st.RSS(s.fs.pageSize())
	}
	s.procs = max(s.procs, len(stats))
	r.wait = s.readWait(stats)
	return r, nil
}

// readWait is the run-queue wait of the processes read (RunQueueWait);
// the first failure ends reading it for the window.
func (s *Sampler) readWait(stats []Stat) time.Duration {
	var sum time.Duration
	for i, st := range stats {
		if !s.waits {
			return 0
		}
		pid := st.PID
		if i == 0 {
			pid = s.pid
		}
		w, err := s.fs.RunQueueWait(pid)
		if err != nil && (i == 0 || !errors.Is(err, os.ErrNotExist)) {
			s.waits = false // a descendant gone since the scan is not a failure
		}
		sum += w
	}
	return sum
}

// reading is one sample of a process.
type reading struct {
	at   time.Time
	cpu  time.Duration // cumulative CPU time
	rss  int64         // bytes
	wait time.Duration // cumulative run-queue wait; 0 when not read
}

// window accumulates the readings of one Start..Stop window. It is pure so
// its arithmetic can be tested without clocks.
type window struct {
	first, last    reading
	n              int // readings
	intervals      int // full intervals seen
	cpuMin, cpuMax float64
	memMin, memMax int64
	memSum         int64
	cpu            Series
}

// add records a reading. full says whether the span since the previous
// reading is a full sampling interval (a tick) rather than the first reading
// or the tail before Stop.
func (w *window) add(r reading, full bool) {
	if w.n == 0 {
		w.first, w.last = r, r
		w.memMin, w.memMax = r.rss, r.rss
	}
	if full && w.n > 0 {
		if pct, ok := percent(r.cpu-w.last.cpu, r.at.Sub(w.last.at)); ok {
			if w.intervals == 0 || pct < w.cpuMin {
				w.cpuMin = pct
			}
			if w.intervals == 0 || pct > w.cpuMax {
				w.cpuMax = pct
			}
			w.intervals++
		}
	}
	w.memMin = min(w.memMin, r.rss)
	w.memMax = max(w.memMax, r.rss)
	w.memSum += r.rss
	w.cpu = append(w.cpu, CPUPoint{At: r.at, CPU: r.cpu, Wait: r.wait})
	w.last = r
	w.n++
}

func (w *window) summary() Summary {
	if w.n == 0 {
		return Summary{}
	}
	wall := w.last.at.Sub(w.first.at)
	cpu := w.last.cpu - w.first.cpu
	s := Summary{
		CPUSeconds: cpu.Seconds(),
		MemMin:     w.memMin,
		MemMax:     w.memMax,
		MemAvg:     w.memSum / int64(w.n),
		Samples:    w.n,
		Wall:       wall,
		CPU:        w.cpu,
	}
	s.CPUAvg, _ = percent(cpu, wall) // a zero-length window has no average: 0
	s.CPUMin, s.CPUMax = s.CPUAvg, s.CPUAvg
	if w.intervals > 0 {
		s.CPUMin = min(w.cpuMin, s.CPUAvg)
		s.CPUMax = max(w.cpuMax, s.CPUAvg)
	}
	return s
}

// percent returns cpu/wall in percent of one core; ok is false when wall is
// not positive.
func percent(cpu, wall time.Duration) (float64, bool) {
	if wall <= 0 {
		return 0, false
	}
	return 100 * cpu.Seconds() / wall.Seconds(), true
}
