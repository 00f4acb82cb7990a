// Package churn is the churn phase kind, whole: its keys and its result
// (params.go), what an event loop runs for it (loop.go) and its plan side
// (this file: its metrics, report table, soak, faults and Run). It
// registers itself with the client and with the scenarios in init;
// scenarios/all imports it.
package churn

import (
	"context"
	"fmt"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/scenarios"
)

// Name is the churn phase's key.
const Name = "churn"

// The churn phase's metrics of its own; the handshake latency is the
// shared latency names (p50 … p999), failed its given-up replacements.
const (
	churnCycles        = "cycles"
	churnTargetRate    = "target_rate"
	churnConnectRate   = "connects_per_s"
	churnRetried       = "retried"
	churnClean         = "clean"
	churnResets        = "resets"
	churnCloseEOF      = "close_eof"
	churnCloseTimeouts = "close_timeouts"
	churnCloseP50      = "close_p50"
	churnCloseP99      = "close_p99"
	churnSkipped       = "skipped"
	churnAlive         = "alive"
	churnPings         = "pings"
	churnPongs         = "pongs"
	churnPingsCut      = "pings_cut"
	churnPingP50       = "ping_p50"
	churnPingP99       = "ping_p99"
	churnRSSPer100k    = "rss_per_100k"
	churnFDsPer100k    = "fds_per_100k"
)

// churnLeakPer100k is the RSS growth per 100,000 cycles above which a
// churn phase reads leak?: about 5 KiB kept per closed connection. A Go
// server's heap keeps growing for minutes under churn before it levels
// off (gws, 5,000 connections at 500 cycles/s: 295 MiB per 100k cycles
// fitted over the first minute, 77 over three, 27 in the third alone),
// so a lower bar flags warm-ups; smaller leaks show over a long soak.
const churnLeakPer100k = 512 << 20

// Phase closes and reopens the open connections for Duration — Rate cycles
// per second, a Fraction of the open set per second, or each after a
// Lifetime — while the others stay open (and, with Ping, keep pinging).
// Both sides' close paths are exercised: the client's close handshake or
// reset, the server's cleanup (its RSS and fds per 100,000 cycles, a
// soak).
type Phase struct {
	Params `yaml:",inline"`
}

// The contracts, checked at compile time.
var (
	_ scenarios.Phase = (*Phase)(nil)
)

func init() {
	client.Register(client.KindOf[Params, Result](Name))
	scenarios.Register(scenarios.Kind{
		Name: Name,
		Doc:  "connections close (clean or reset) and reopen at a rate, a fraction per second or a lifetime while the others stay open; handshakes under churn, closes, the server's memory per 100k cycles",
		New:  func() scenarios.Phase { return &Phase{} },
		Faults: []scenarios.Fault{
			{Metric: metrics.Failed, Of: churnCycles, What: "replacements failed"},
			{Metric: metrics.Dropped, Of: metrics.Conns, What: "connections dropped"},
		},
		Throughput: scenarios.Throughput{Metric: churnConnectRate, Unit: "connects/s", Count: churnCycles, Bench: "conns/s"},
		Soak:       &scenarios.Soak{Per: 100000, Unit: "cycles", RSSPer: churnRSSPer100k, FDsPer: churnFDsPer100k, LeakPer: churnLeakPer100k},
		Summary: func(v metrics.Values) string {
			return fmt.Sprintf("%d cycles, %d failed, %d dropped", v.Int(churnCycles), v.Int(metrics.Failed), v.Int(metrics.Dropped))
		},
		Title: "[Churn] Report",
		Columns: []scenarios.Column{
			{Metric: scenarios.ColFramework},
			{Header: "Cycles", Metric: churnCycles, Format: scenarios.FormatInt},
			{Header: "Conn/s", Metric: churnConnectRate, Delta: true, Format: scenarios.FormatRate},
			{Header: "TP50", Metric: metrics.P50, Delta: true},
			{Header: "TP99", Metric: metrics.P99, Delta: true},
			{Header: "Failed", Metric: metrics.Failed, Format: scenarios.FormatInt},
			{Header: "Clean", Metric: churnClean, Format: scenarios.FormatInt},
			{Header: "Reset", Metric: churnResets, Format: scenarios.FormatInt},
			{Header: "Close P99", Metric: churnCloseP99},
			{Header: "Dropped", Metric: metrics.Dropped, Format: scenarios.FormatInt},
			{Header: "Ping P99", Metric: churnPingP99, Optional: true},
			{Header: "RSS/100k", Metric: churnRSSPer100k, Format: scenarios.FormatMiB, Optional: true},
			{Metric: scenarios.ColServer},
			{Metric: scenarios.ColClientCPU},
			{Metric: scenarios.ColVerdict},
		},
		Metrics: metrics.Join([]metrics.Def{
			{Name: metrics.DurationName, Kind: metrics.Duration, Doc: "wall time of the phase (its duration, then the last handshakes and closes)"},
			{Name: churnCycles, Kind: metrics.Count, Doc: "connections closed by the phase, each with a replacement dialled"},
			{Name: churnTargetRate, Kind: metrics.Float, Doc: "cycles per second asked for (rate, or fraction × the connections open; with lifetime: connections / lifetime)"},
			{Name: churnConnectRate, Kind: metrics.Float, Doc: "replacements opened per second of the phase: the connects/s achieved"},
		}, metrics.Latency, []metrics.Def{
			{Name: metrics.Failed, Kind: metrics.Count, Doc: "replacements given up after their retries (by reason in the row's error)"},
			{Name: churnRetried, Kind: metrics.Count, Doc: "handshake attempts that failed and were retried"},
			{Name: churnClean, Kind: metrics.Count, Doc: "closes the server answered with its close frame"},
			{Name: churnResets, Kind: metrics.Count, Doc: "closes by TCP reset (close: reset or mixed)"},
			{Name: churnCloseEOF, Kind: metrics.Count, Doc: "clean closes the server ended by dropping TCP without its close frame"},
			{Name: churnCloseTimeouts, Kind: metrics.Count, Doc: "clean closes the server did not answer within close_timeout"},
			{Name: churnCloseP50, Kind: metrics.Duration, Doc: "our close frame to the server's, median"},
			{Name: churnCloseP99, Kind: metrics.Duration, Doc: "our close frame to the server's, 99th percentile"},
			{Name: metrics.Dropped, Kind: metrics.Count, Doc: "connections the server dropped while the phase ran (not churned)"},
			{Name: metrics.Late, Kind: metrics.Count, Doc: "cycles that started more than 10 ms after their time"},
			{Name: churnSkipped, Kind: metrics.Count, Doc: "cycles due when no connection was open to close"},
			{Name: metrics.Conns, Kind: metrics.Count, Doc: "connections open at the start"},
			{Name: churnAlive, Kind: metrics.Count, Doc: "connections open at the end"},
			{Name: churnPings, Kind: metrics.Count, Doc: "pings sent by the connections not churning (with ping)"},
			{Name: churnPongs, Kind: metrics.Count, Doc: "pongs received"},
			{Name: churnPingsCut, Kind: metrics.Count, Doc: "pings whose connection closed before their pong"},
			{Name: churnPingP50, Kind: metrics.Duration, Doc: "ping to pong of the others, median"},
			{Name: churnPingP99, Kind: metrics.Duration, Doc: "ping to pong of the others, 99th percentile"},
			{Name: churnRSSPer100k, Kind: metrics.Float, Doc: "server RSS growth per 100,000 cycles (bytes), fitted after soak.settle: what closed connections leave behind"},
			{Name: churnFDsPer100k, Kind: metrics.Float, Doc: "server open fds growth per 100,000 cycles, fitted"},
		}),
	})
}

// Validate implements scenarios.Phase.
func (p *Phase) Validate(c scenarios.Context) []scenarios.FieldError {
	errs := scenarios.NeedsOpen(c, "", 0)
	given := 0
	for _, set := range []bool{p.Rate > 0, p.Fraction > 0, p.Lifetime > 0} {
		if set {
			given++
		}
	}
	if given != 1 {
		errs = append(errs, scenarios.FieldError{Field: "rate", Msg: fmt.Sprintf("give one of rate (cycles per second), fraction (of the open connections per second) and lifetime, got %d", given)})
	}
	switch p.Close {
	case CloseClean, CloseReset, CloseMixed:
	default:
		errs = append(errs, scenarios.FieldError{Field: "close", Msg: fmt.Sprintf("must be %s, %s or %s, got %q", CloseClean, CloseReset, CloseMixed, p.Close)})
	}
	switch p.LifetimeDist {
	case LifetimeExponential, LifetimeUniform, LifetimeFixed:
	default:
		errs = append(errs, scenarios.FieldError{Field: "lifetime_dist", Msg: fmt.Sprintf("must be %s, %s or %s, got %q", LifetimeExponential, LifetimeUniform, LifetimeFixed, p.LifetimeDist)})
	}
	return errs
}

// Run implements scenarios.Phase.
func (p *Phase) Run(ctx context.Context, env *scenarios.Env) (scenarios.Outcome, error) {
	conns := env.Driver.Conns()
	if conns <= 0 {
		return scenarios.Outcome{}, fmt.Errorf("no open connections")
	}
	q := p.Params
	target := p.Rate
	switch {
	case p.Fraction > 0:
		q.Rate, q.Fraction = p.Fraction*float64(conns), 0
		target = q.Rate
	case p.Lifetime > 0:
		target = float64(conns) / p.Lifetime.D().Seconds()
	}
	r, err := scenarios.Drive[Result](ctx, env, &q)
	if r == nil {
		return scenarios.Outcome{}, err
	}
	v := metrics.Values{
		metrics.DurationName: r.Used,
		churnCycles:          r.Cycles,
		churnTargetRate:      target,
		churnConnectRate:     scenarios.PerSecond(r.Connect.Success, p.Duration.D()),
		metrics.Failed:       r.Connect.Failed,
		churnRetried:         r.Connect.Retried,
		churnClean:           r.Clean,
		churnResets:          r.Resets,
		churnCloseEOF:        r.CloseEOF,
		churnCloseTimeouts:   r.CloseTimeouts,
		metrics.Dropped:      r.Dropped,
		metrics.Late:         r.Late,
		churnSkipped:         r.Skipped,
		metrics.Conns:        r.Conns,
		churnAlive:           r.Alive,
		churnPings:           r.Pings,
		churnPongs:           r.Pongs,
		churnPingsCut:        r.PingsCut,
	}
	scenarios.LatencyValues(v, r.Connect.Latency)
	v[churnCloseP50], v[churnCloseP99] = churnQuantile(r.CloseLatency, 50), churnQuantile(r.CloseLatency, 99)
	if p.Ping > 0 {
		v[churnPingP50], v[churnPingP99] = churnQuantile(r.PingLatency, 50), churnQuantile(r.PingLatency, 99)
	}
	out := scenarios.Outcome{Metrics: v, Histogram: scenarios.HistString(r.Connect.Latency)}
	if err != nil {
		out.Failed, out.Error = true, "stopped: "+err.Error()
		return out, err
	}
	out.Reasons = map[string]string{metrics.Failed: scenarios.ErrorSummary(r.Connect.Errors), metrics.Dropped: scenarios.ErrorSummary(r.Errors)}
	if n := r.CloseEOF + r.CloseTimeouts + scenarios.SumReasons(r.CloseErrors); n > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d of %d clean closes got no close frame back (%d TCP dropped, %d timed out after %s)", n, r.Clean+n, r.CloseEOF, r.CloseTimeouts, p.CloseTimeout))
	}
	if r.Late > r.Cycles/100 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d of %d cycles started late (the client fell behind its timetable)", r.Late, r.Cycles))
	}
	if r.Skipped > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d cycles skipped: no connection was open to close", r.Skipped))
	}
	return out, nil
}

// churnQuantile is h's q-th percentile (0 when empty).
func churnQuantile(h client.Hist, q float64) time.Duration {
	if scenarios.HistCount(h) == 0 {
		return 0
	}
	return time.Duration(h.ValueAtQuantile(q))
}
