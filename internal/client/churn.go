package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// KindChurn is the churn phase's name.
const KindChurn = "churn"

func init() {
	Register(Kind{Name: KindChurn, NewParams: func() Params { return &ChurnParams{} }, NewResult: func() Result { return &ChurnResult{} }})
}

// How a churned connection is closed (ChurnParams.Close).
const (
	CloseClean = "clean" // a close frame (1000), then the server's close frame, then TCP close
	CloseReset = "reset" // SO_LINGER 0 and close: the server reads a TCP reset
	CloseMixed = "mixed" // each cycle picks clean or reset at random, half and half
)

// How lifetimes are drawn (ChurnParams.LifetimeDist).
const (
	LifetimeExponential = "exponential" // memoryless: closes arrive as a Poisson process, N/mean per second
	LifetimeUniform     = "uniform"     // uniform in [0, 2 × mean]
	LifetimeFixed       = "fixed"       // exactly mean (an open connection's first one uniform in [0, mean])
)

// Churn defaults, applied by start to zero fields.
const (
	DefaultChurnTimeout      = 5 * time.Second // a handshake attempt
	DefaultChurnCloseTimeout = 5 * time.Second // the server's close frame after ours
)

// ChurnParams configure a churn phase: for Duration, the open connections
// close and reopen — Rate cycles per second over the whole phase, or each
// after a Lifetime drawn from LifetimeDist — while the others stay open
// (and, with Ping, keep pinging). A cycle closes one connection (Close)
// and dials its replacement at once through the run's dialer.
type ChurnParams struct {
	Duration time.Duration `json:"duration"` // > 0
	// Rate is cycles per second over every part; 0 with Lifetime set.
	Rate float64 `json:"rate"`
	// Lifetime is the mean lifetime of a connection; 0 with Rate set.
	Lifetime     time.Duration `json:"lifetime"`
	LifetimeDist string        `json:"lifetime_dist"` // LifetimeExponential (default), LifetimeUniform, LifetimeFixed
	Close        string        `json:"close"`         // CloseClean (default), CloseReset, CloseMixed
	Ping         time.Duration `json:"ping"`          // each connection pings every Ping (spread over the interval); 0 = idle
	Timeout      time.Duration `json:"timeout"`       // per handshake attempt; 0 = DefaultChurnTimeout
	Retries      int           `json:"retries"`       // extra attempts per replacement
	CloseTimeout time.Duration `json:"close_timeout"` // the server's close frame after ours; 0 = DefaultChurnCloseTimeout
	// Seed makes the picks (which connection, which close, lifetimes)
	// repeatable per part; 0 = the loop's random source.
	Seed uint64 `json:"seed,omitempty"`
}

// ChurnResult is what a churn phase measured.
type ChurnResult struct {
	Conns  int64 `json:"conns"`  // open at the start
	Alive  int64 `json:"alive"`  // open at the end (the churned set)
	Cycles int64 `json:"cycles"` // connections closed by the phase
	// Late counts cycles that started more than a timer tick late (the
	// client fell behind its timetable).
	Late int64 `json:"late"`
	// Skipped counts cycles due when no connection of the part was open
	// to close (all in a handshake or gone).
	Skipped int64 `json:"skipped"`
	// Connect is the replacements' handshakes: opened (Success), given up
	// (Failed, with Errors by reason), retried; latency and its parts.
	Connect ConnectResult `json:"connect"`
	// How the closes went: the server answered our close frame (Clean,
	// with CloseLatency from our frame to its), dropped TCP without one
	// (CloseEOF), did neither within CloseTimeout (CloseTimeouts); or the
	// connection was reset (Resets).
	Clean         int64   `json:"clean"`
	CloseEOF      int64   `json:"close_eof"`
	CloseTimeouts int64   `json:"close_timeouts"`
	Resets        int64   `json:"resets"`
	CloseLatency  Hist    `json:"close_latency"`
	CloseErrors   Reasons `json:"close_errors"` // how closes that were not clean ended
	// Dropped counts connections of the churned set the server (or the
	// network) closed while the phase ran, by reason in Errors.
	Dropped int64   `json:"dropped"`
	Errors  Reasons `json:"errors"`
	// The others' load: pings sent, pongs received, ping to pong; PingsCut
	// are pings whose connection closed (churned or dropped) before their
	// pong, so Pings = Pongs + PingsCut + those in flight at the end.
	Pings       int64         `json:"pings"`
	Pongs       int64         `json:"pongs"`
	PingsCut    int64         `json:"pings_cut"`
	PingLatency Hist          `json:"ping_latency"`
	Used        time.Duration `json:"used"`
	Stopped     StopReason    `json:"stopped"`
}

// Kind implements Params.
func (p *ChurnParams) Kind() string { return KindChurn }

// Validate implements Params.
func (p *ChurnParams) Validate() error {
	var errs []error
	if p.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration must be > 0, got %v", p.Duration))
	}
	switch {
	case p.Rate < 0 || math.IsNaN(p.Rate) || math.IsInf(p.Rate, 0):
		errs = append(errs, fmt.Errorf("rate must be >= 0, got %v", p.Rate))
	case p.Lifetime < 0:
		errs = append(errs, fmt.Errorf("lifetime must be >= 0, got %v", p.Lifetime))
	case (p.Rate > 0) == (p.Lifetime > 0):
		errs = append(errs, errors.New("give one of rate and lifetime"))
	}
	switch p.LifetimeDist {
	case "", LifetimeExponential, LifetimeUniform, LifetimeFixed:
	default:
		errs = append(errs, fmt.Errorf("lifetime_dist must be %s, %s or %s, got %q", LifetimeExponential, LifetimeUniform, LifetimeFixed, p.LifetimeDist))
	}
	switch p.Close {
	case "", CloseClean, CloseReset, CloseMixed:
	default:
		errs = append(errs, fmt.Errorf("close must be %s, %s or %s, got %q", CloseClean, CloseReset, CloseMixed, p.Close))
	}
	if p.Ping < 0 || p.Timeout < 0 || p.CloseTimeout < 0 || p.Retries < 0 {
		errs = append(errs, fmt.Errorf("ping, timeout, close_timeout and retries must be >= 0"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("client: churn: %w", errors.Join(errs...))
	}
	return nil
}

// Split implements Params: every part churns its own open connections, at
// a rate in proportion to them (a lifetime is every part's).
func (p *ChurnParams) Split(weights []int) []Params {
	total := 0
	for _, w := range weights {
		total += w
	}
	out := make([]Params, len(weights))
	for i, w := range weights {
		if w <= 0 {
			continue
		}
		q := *p
		if p.Rate > 0 {
			q.Rate = p.Rate * float64(w) / float64(total)
		}
		if p.Seed != 0 {
			q.Seed = p.Seed + uint64(i)
		}
		out[i] = &q
	}
	return out
}

// Merge implements Result.
func (r *ChurnResult) Merge(other Result) {
	o := other.(*ChurnResult)
	r.Conns += o.Conns
	r.Alive += o.Alive
	r.Cycles += o.Cycles
	r.Late += o.Late
	r.Skipped += o.Skipped
	r.Connect.Merge(&o.Connect)
	r.Clean += o.Clean
	r.CloseEOF += o.CloseEOF
	r.CloseTimeouts += o.CloseTimeouts
	r.Resets += o.Resets
	r.CloseLatency.add(o.CloseLatency)
	r.CloseErrors.merge(o.CloseErrors)
	r.Dropped += o.Dropped
	r.Errors.merge(o.Errors)
	r.Pings += o.Pings
	r.Pongs += o.Pongs
	r.PingsCut += o.PingsCut
	r.PingLatency.add(o.PingLatency)
	r.Used = max(r.Used, o.Used)
	r.Stopped = MergeStop(r.Stopped, o.Stopped)
}

// Stop implements Result.
func (r *ChurnResult) Stop() StopReason { return r.Stopped }

// Churn runs a churn phase (see ChurnParams).
func (c *Client) Churn(ctx context.Context, p ChurnParams, pr *Progress) (ChurnResult, error) {
	return runAs[ChurnResult](c, ctx, &p, pr)
}

// start implements Params. Replacements take connection numbers after
// every connection opened so far, each part its own stride of them.
func (p *ChurnParams) start(ph *phaseEnv) (*phasePlan, error) {
	q := *p
	if q.Timeout == 0 {
		q.Timeout = DefaultChurnTimeout
	}
	if q.CloseTimeout == 0 {
		q.CloseTimeout = DefaultChurnCloseTimeout
	}
	if q.Close == "" {
		q.Close = CloseClean
	}
	if q.LifetimeDist == "" {
		q.LifetimeDist = LifetimeExponential
	}
	total := 0
	for _, o := range ph.open {
		total += o
	}
	if ph.pr != nil {
		cycles := q.Rate * q.Duration.Seconds()
		if q.Lifetime > 0 {
			cycles = float64(total) * q.Duration.Seconds() / q.Lifetime.Seconds()
		}
		ph.pr.Total.Store(int64(cycles))
		ph.pr.Done.Store(0)
	}
	parts := q.Split(ph.open)
	c := ph.c
	first, m := c.next, int64(len(parts))
	plan := &phasePlan{starts: make([]func(*loop), len(parts))}
	before := 0
	for j, part := range parts {
		if part == nil {
			continue
		}
		job := &churnJob{phase: ph.id, p: *part.(*ChurnParams), first: first + int64(j), stride: m,
			start: ph.start, pr: ph.pr, pingFirst: before, pingTotal: max(total, 1)}
		before += ph.open[j]
		plan.starts[j] = func(l *loop) { l.churnStart(job) }
	}
	plan.done = func(res Result, why StopReason, wall time.Duration) StopReason {
		r := res.(*ChurnResult)
		r.Used = wall
		for _, h := range []*Hist{&r.Connect.Latency, &r.Connect.TCP, &r.Connect.TLS, &r.Connect.Upgrade, &r.CloseLatency, &r.PingLatency} {
			if h.Histogram == nil {
				*h = NewHist()
			}
		}
		r.Connect.Total = r.Connect.Success + r.Connect.Failed
		// Later phases number their connections after the replacements.
		c.next += m * (r.Connect.Total + r.Connect.Retried + 1)
		if why == "" {
			why = r.Stopped
		}
		r.Stopped = why
		return why
	}
	return plan, nil
}
