package churn

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
)

// How a churned connection is closed (Params.Close).
const (
	CloseClean = "clean" // a close frame (1000), then the server's close frame, then TCP close
	CloseReset = "reset" // SO_LINGER 0 and close: the server reads a TCP reset
	CloseMixed = "mixed" // each cycle picks clean or reset at random, half and half
)

// How lifetimes are drawn (Params.LifetimeDist).
const (
	LifetimeExponential = "exponential" // memoryless: closes arrive as a Poisson process, N/mean per second
	LifetimeUniform     = "uniform"     // uniform in [0, 2 × mean]
	LifetimeFixed       = "fixed"       // exactly mean (an open connection's first one uniform in [0, mean])
)

// Params configure a churn phase: for Duration, the open connections
// close and reopen — Rate cycles per second over the whole phase, or each
// after a Lifetime drawn from LifetimeDist — while the others stay open
// (and, with Ping, keep pinging). A cycle closes one connection (Close)
// and dials its replacement at once through the run's dialer. They are
// the phase's plan keys too (Phase holds them inline), declared
// once in their tags; the scenario turns a Fraction into a Rate.
type Params struct {
	Duration     units.Duration `yaml:"duration" json:"duration" required:"true" min:"1ns" doc:"how long connections close and reopen"`
	Rate         float64        `yaml:"rate" json:"rate" min:"0" doc:"cycles (a connection closed and its replacement dialled) per second over every connection; give one of rate, fraction and lifetime"`
	Fraction     float64        `yaml:"fraction" json:"-" min:"0" doc:"share of the open connections cycled per second (0.1 = a tenth of them per second); give one of rate, fraction and lifetime"`
	Lifetime     units.Duration `yaml:"lifetime" json:"lifetime" min:"0s" doc:"mean lifetime of a connection: each closes when its own life ends and its replacement draws a new one; give one of rate, fraction and lifetime"`
	LifetimeDist string         `yaml:"lifetime_dist" json:"lifetime_dist" default:"exponential" doc:"how lifetimes are drawn: exponential (closes arrive as a Poisson process), uniform (in [0, 2 × lifetime]) or fixed"`
	Close        string         `yaml:"close" json:"close" default:"clean" doc:"how the client closes: clean (close frame, the server's close frame, then TCP close), reset (SO_LINGER 0: a TCP reset), or mixed (half and half at random)"`
	Ping         units.Duration `yaml:"ping" json:"ping" default:"0s" min:"0s" doc:"every open connection pings every ping (spread over the interval) while others churn; 0 = idle"`
	Timeout      units.Duration `yaml:"timeout" json:"timeout" default:"5s" min:"1ns" doc:"time allowed for one handshake attempt of a replacement"`
	Retries      int            `yaml:"retries" json:"retries" default:"0" min:"0" doc:"extra attempts per replacement (retried attempts are counted)"`
	CloseTimeout units.Duration `yaml:"close_timeout" json:"close_timeout" default:"5s" min:"1ns" doc:"how long a clean close waits for the server's close frame before it closes TCP anyway"`
	Seed         uint64         `yaml:"seed" json:"seed,omitempty" doc:"seed of the picks (which connection, which close, lifetimes), for repeatable runs; default: random"`
}

// Result is what a churn phase measured.
type Result struct {
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
	Connect client.ConnectResult `json:"connect"`
	// How the closes went: the server answered our close frame (Clean,
	// with CloseLatency from our frame to its), dropped TCP without one
	// (CloseEOF), did neither within CloseTimeout (CloseTimeouts); or the
	// connection was reset (Resets).
	Clean         int64          `json:"clean"`
	CloseEOF      int64          `json:"close_eof"`
	CloseTimeouts int64          `json:"close_timeouts"`
	Resets        int64          `json:"resets"`
	CloseLatency  client.Hist    `json:"close_latency"`
	CloseErrors   client.Reasons `json:"close_errors"` // how closes that were not clean ended
	// Dropped counts connections of the churned set the server (or the
	// network) closed while the phase ran, by reason in Errors.
	Dropped int64          `json:"dropped"`
	Errors  client.Reasons `json:"errors"`
	// The others' load: pings sent, pongs received, ping to pong; PingsCut
	// are pings whose connection closed (churned or dropped) before their
	// pong, so Pings = Pongs + PingsCut + those in flight at the end.
	Pings       int64         `json:"pings"`
	Pongs       int64         `json:"pongs"`
	PingsCut    int64         `json:"pings_cut"`
	PingLatency client.Hist   `json:"ping_latency"`
	Used        time.Duration `json:"used"`
	client.Ended
}

// Validate implements client.Params: the declared bounds, one of rate and
// lifetime, and the names of a distribution and a close.
func (p *Params) Validate() error {
	var rate, dist, cl error
	switch {
	case math.IsNaN(p.Rate) || math.IsInf(p.Rate, 0):
		rate = fmt.Errorf("rate must be finite, got %v", p.Rate)
	case p.Rate >= 0 && p.Lifetime >= 0 && (p.Rate > 0) == (p.Lifetime > 0):
		rate = errors.New("give one of rate and lifetime")
	}
	switch p.LifetimeDist {
	case LifetimeExponential, LifetimeUniform, LifetimeFixed:
	default:
		dist = fmt.Errorf("lifetime_dist must be %s, %s or %s, got %q", LifetimeExponential, LifetimeUniform, LifetimeFixed, p.LifetimeDist)
	}
	switch p.Close {
	case CloseClean, CloseReset, CloseMixed:
	default:
		cl = fmt.Errorf("close must be %s, %s or %s, got %q", CloseClean, CloseReset, CloseMixed, p.Close)
	}
	return client.CheckParams(p, rate, dist, cl)
}

// Split implements client.Params: every part churns its own open connections, at
// a rate in proportion to them (a lifetime is every part's).
func (p *Params) Split(weights []int) []client.Params {
	total := 0
	for _, w := range weights {
		total += w
	}
	return client.Parts(p, len(weights), func(i int, q *Params) bool {
		if weights[i] <= 0 {
			return false
		}
		if p.Rate > 0 {
			q.Rate = p.Rate * float64(weights[i]) / float64(total)
		}
		if p.Seed != 0 {
			q.Seed = p.Seed + uint64(i)
		}
		return true
	})
}

// Merge implements client.Result.
func (r *Result) Merge(other client.Result) {
	o := other.(*Result)
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
	r.CloseLatency.Add(o.CloseLatency)
	r.CloseErrors.Merge(o.CloseErrors)
	r.Dropped += o.Dropped
	r.Errors.Merge(o.Errors)
	r.Pings += o.Pings
	r.Pongs += o.Pongs
	r.PingsCut += o.PingsCut
	r.PingLatency.Add(o.PingLatency)
	r.Used = max(r.Used, o.Used)
	r.Stopped = client.MergeStop(r.Stopped, o.Stopped)
}

// Start implements client.Params. Replacements take connection numbers after
// every connection opened so far, each part its own stride of them.
func (p *Params) Start(ph *client.PhaseEnv) (*client.PhasePlan, error) {
	q := *p
	total := ph.OpenTotal()
	cycles := q.Rate * q.Duration.D().Seconds()
	if q.Lifetime > 0 {
		cycles = float64(total) * q.Duration.D().Seconds() / q.Lifetime.D().Seconds()
	}
	ph.Progress.Begin(int64(cycles))
	parts := q.Split(ph.Open)
	c := ph.Client
	first, m := c.NextConn, int64(len(parts))
	plan := &client.PhasePlan{Starts: make([]func(*client.Loop), len(parts))}
	before := 0
	for j, part := range parts {
		if part == nil {
			continue
		}
		job := &churnJob{phase: ph.ID, p: *part.(*Params), first: first + int64(j), stride: m,
			start: ph.Start, pr: ph.Progress, pingFirst: before, pingTotal: max(total, 1)}
		before += ph.Open[j]
		plan.Starts[j] = func(l *client.Loop) { start(l, job) }
	}
	plan.Done = func(res client.Result, wall time.Duration) {
		r := res.(*Result)
		r.Used = wall
		client.EnsureHists(&r.Connect.Latency, &r.Connect.TCP, &r.Connect.TLS, &r.Connect.Upgrade, &r.CloseLatency, &r.PingLatency)
		r.Connect.Total = r.Connect.Success + r.Connect.Failed
		// Later phases number their connections after the replacements.
		c.NextConn += m * (r.Connect.Total + r.Connect.Retried + 1)
	}
	return plan, nil
}
