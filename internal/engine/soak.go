package engine

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// soakMinPoints is how many points a fit needs before its slopes are
// written (metrics.Soak). The shortest spans a leak verdict is read over
// are metrics.SoakMinUnitSpan (per unit of work) and
// metrics.SoakMinHourSpan (per hour).
const soakMinPoints = 5

// soakProbe samples the resource series of a phase whose kind soaks
// (scenarios.Kind.Soak): the server's process tree (RSS, fds, threads)
// and the client's RSS and goroutines, every sample interval from the
// phase's start to its end, and through soak.drain after it.
type soakProbe struct {
	fs      procstat.FS
	res     resources
	clients []int // client pids: this process and any shards
	pr      *client.Progress
	start   time.Time

	mu    sync.Mutex
	s     result.Soak
	every time.Duration // the interval now (doubles when thinned)
	stop  chan struct{}
	wg    sync.WaitGroup
}

// soakStart starts sampling a phase of kind, or returns nil when the kind
// does not soak.
func (e *runner) soakStart(kind string, res resources, drv Driver, pr *client.Progress) *soakProbe {
	if k, ok := scenarios.Lookup(kind); !ok || k.Soak == nil {
		return nil
	}
	p := &soakProbe{fs: e.o.Proc, res: res, clients: []int{os.Getpid()}, pr: pr, start: time.Now(),
		every: e.plan.Defaults.Sample.D(), stop: make(chan struct{})}
	if ps, ok := drv.(pidser); ok {
		p.clients = append(p.clients, ps.Pids()...)
	}
	p.s.Interval = p.every
	p.add(p.read(false))
	p.wg.Add(1)
	go p.loop()
	return p
}

// loop samples until end.
func (p *soakProbe) loop() {
	defer p.wg.Done()
	t := time.NewTimer(p.interval())
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.add(p.read(false))
		t.Reset(p.interval())
	}
}

func (p *soakProbe) interval() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.every
}

// read takes one reading now.
func (p *soakProbe) read(drain bool) result.SoakPoint {
	pt := result.SoakPoint{T: time.Since(p.start), Goroutines: int64(runtime.NumGoroutine()), Drain: drain}
	if p.pr != nil {
		pt.Done = p.pr.Done.Load()
	}
	switch p.res.how {
	case result.ResourcesTree, result.ResourcesPID:
		res := p.res
		res.follow()
		if u, err := p.fs.TreeUsage(res.pid); err == nil {
			pt.RSS, pt.FDs, pt.Threads = u.RSS, u.FDs, u.Threads
		}
	case result.ResourcesMetrics:
		pt.RSS, _ = p.res.rss(p.fs)
	}
	for _, pid := range p.clients {
		if n, err := p.fs.RSS(pid); err == nil {
			pt.ClientRSS += n
		}
	}
	return pt
}

// add appends a point, thinning the series (every other point kept, the
// interval doubled) when it reaches result.MaxSoakPoints.
func (p *soakProbe) add(pt result.SoakPoint) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.s.Points = append(p.s.Points, pt)
	if len(p.s.Points) < result.MaxSoakPoints {
		return
	}
	kept := p.s.Points[:0]
	for i := 0; i < len(p.s.Points); i += 2 {
		kept = append(kept, p.s.Points[i])
	}
	p.s.Points = kept
	p.every *= 2
	p.s.Interval = p.every
}

// end stops sampling the load with a last reading, then, for drain (when
// > 0 and the phase ran to its end), keeps reading with the load stopped:
// its last point is rss_after_drain. It returns the series.
func (p *soakProbe) end(ctx context.Context, drain time.Duration) *result.Soak {
	close(p.stop)
	p.wg.Wait()
	p.add(p.read(false))
	if drain > 0 && ctx.Err() == nil {
		deadline := time.Now().Add(drain)
		for left := drain; left > 0; left = time.Until(deadline) {
			select {
			case <-ctx.Done():
				return &p.s
			case <-time.After(min(left, p.every)):
			}
			p.add(p.read(true))
		}
	}
	return &p.s
}

// soakEnd ends p's sampling, through soak.drain when the phase ran to its
// end (ran), and writes the series and its fitted metrics into res.
func (e *runner) soakEnd(ctx context.Context, p *soakProbe, res *result.Result, ran bool) {
	drain := e.plan.Soak.Drain.D()
	if !ran {
		drain = 0
	}
	if drain > 0 {
		e.o.Notice("%s: %s: load stopped, reading the server's memory for %s (rss_after_drain)", res.Server, res.Phase, drain)
	}
	res.Soak = p.end(ctx, drain)
	k, _ := scenarios.Lookup(res.Kind)
	server := p.res.how != result.ResourcesNone
	if res.Metrics.Int(metrics.Restarts) > 0 {
		server = false // two processes' memory in one series: no slope, no verdict
	}
	res.Warnings = append(res.Warnings, soakMetrics(res.Metrics, res.Soak, *k.Soak, e.plan.Soak, server)...)
}

// soakFit is a series' least-squares fits over the points after its
// settle time and before its drain.
type soakFit struct {
	pts  []result.SoakPoint
	keep func(i int) bool
	span time.Duration // from the first to the last point fitted
}

// newSoakFit settles s (its Settle: cfg's, else the first fifth of the
// load) and returns its fit; ok is false when no point is left to fit.
func newSoakFit(s *result.Soak, cfg plan.Soak) (f soakFit, ok bool) {
	pts := s.Points
	var loadEnd time.Duration
	for _, pt := range pts {
		if !pt.Drain {
			loadEnd = pt.T
		}
	}
	s.Settle = cfg.Settle.D()
	if s.Settle == 0 {
		s.Settle = loadEnd / 5
	}
	f = soakFit{pts: pts, keep: func(i int) bool { return !pts[i].Drain && pts[i].T >= s.Settle }}
	first := time.Duration(-1)
	for i := range pts {
		if f.keep(i) {
			if first < 0 {
				first = pts[i].T
			}
			f.span = pts[i].T - first
		}
	}
	return f, first >= 0
}

// slope fits y against x; ok with at least soakMinPoints points.
func (f soakFit) slope(x, y func(i int) float64) (float64, bool) {
	v, used, ok := result.Fit(len(f.pts), f.keep, x, y)
	return v, ok && used >= soakMinPoints
}

// hours is point i's time, in hours.
func (f soakFit) hours(i int) float64 { return f.pts[i].T.Hours() }

// soakMetrics fits the series s of a phase of a kind that soaks as spec
// says, writes metrics.Soak (and the kind's per-unit slopes) into m, and
// returns the warnings: leak?, and the client's own memory growing.
func soakMetrics(m metrics.Values, s *result.Soak, spec scenarios.Soak, cfg plan.Soak, server bool) []string {
	f, ok := newSoakFit(s, cfg)
	if !ok {
		return nil
	}
	pts := f.pts
	m[metrics.SoakSpan] = f.span
	var warnings []string
	if v, ok := f.slope(f.hours, func(i int) float64 { return float64(pts[i].ClientRSS) }); ok {
		m[metrics.ClientRSSSlope] = v
		if v > float64(cfg.LeakThreshold) && f.span >= metrics.SoakMinHourSpan {
			warnings = append(warnings, fmt.Sprintf("the client's own RSS grew %s per hour over %s: wsplan's memory is not flat", mib(v), f.span.Round(time.Second)))
		}
	}
	if v, ok := f.slope(f.hours, func(i int) float64 { return float64(pts[i].Goroutines) }); ok {
		m[metrics.GoroutinesSlope] = v
	}
	if !server {
		return warnings
	}
	if n := len(pts); n > 0 && pts[n-1].Drain {
		m[metrics.RSSAfterDrain] = pts[n-1].RSS
	}
	if w := serverSoak(m, f, spec, cfg); w != "" {
		warnings = append(warnings, w)
	}
	return warnings
}

// serverSoak writes the server's slopes (per hour, and per spec.Per
// units of work) and the leak verdict into m; it returns the leak?
// warning, or "".
func serverSoak(m metrics.Values, f soakFit, spec scenarios.Soak, cfg plan.Soak) string {
	pts := f.pts
	rss, rssOK := f.slope(f.hours, func(i int) float64 { return float64(pts[i].RSS) })
	if rssOK {
		m[metrics.RSSSlope] = rss
	}
	if v, ok := f.slope(f.hours, func(i int) float64 { return float64(pts[i].FDs) }); ok {
		m[metrics.FDsSlope] = v
	}
	if v, ok := f.slope(f.hours, func(i int) float64 { return float64(pts[i].Threads) }); ok {
		m[metrics.ThreadsSlope] = v
	}
	var perUnit float64
	perOK := false
	if spec.Per > 0 {
		units := func(i int) float64 { return float64(pts[i].Done) / float64(spec.Per) }
		if perUnit, perOK = f.slope(units, func(i int) float64 { return float64(pts[i].RSS) }); perOK && spec.RSSPer != "" {
			m[spec.RSSPer] = perUnit
		}
		if v, ok := f.slope(units, func(i int) float64 { return float64(pts[i].FDs) }); ok && spec.FDsPer != "" {
			m[spec.FDsPer] = v
		}
	}
	var leak bool
	var why string
	switch {
	case spec.LeakPer > 0 && perOK && f.span >= metrics.SoakMinUnitSpan:
		leak = perUnit > float64(spec.LeakPer)
		why = fmt.Sprintf("%s per %s %s (threshold %s), %s per hour", mib(perUnit), withCommas(spec.Per), spec.Unit, mib(float64(spec.LeakPer)), mib(rss))
	case spec.LeakPer == 0 && rssOK && f.span >= metrics.SoakMinHourSpan:
		leak = rss > float64(cfg.LeakThreshold)
		why = fmt.Sprintf("%s per hour (threshold %s)", mib(rss), mib(float64(cfg.LeakThreshold)))
	default:
		return "" // too short to tell
	}
	m[metrics.Leak] = leak
	if !leak {
		return ""
	}
	return fmt.Sprintf("leak?: the server's RSS grew %s over %s with the load constant", why, f.span.Round(time.Second))
}

// mib writes bytes as MiB, signed, for messages.
func mib(b float64) string { return fmt.Sprintf("%+.1f MiB", b/(1<<20)) }

// withCommas writes 100000 as 100,000.
func withCommas(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
