// Package ping is the ping phase kind, whole: its keys and its result
// (params.go), what an event loop runs for it (run.go) and its plan side
// (this file: its metrics, faults and Run). It registers itself with the
// client and with the scenarios in init; scenarios/all imports it.
package ping

import (
	"context"
	"fmt"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/scenarios"
)

// Name is the ping phase's key; its metrics are the closed loop's words
// every such kind shares (internal/metrics).
const Name = "ping"

// Phase is a closed loop of control frames: Concurrency connections each
// keep one ping in flight and send the next as soon as its pong comes,
// until Total pongs were measured. It measures how fast a server answers
// pings (its control-frame path and the round trip), apart from any data
// message's decoding and copying.
type Phase struct {
	Params `yaml:",inline"`
}

// The scenarios' contract, checked at compile time.
var (
	_ scenarios.Phase           = (*Phase)(nil)
	_ scenarios.ContextDefaults = (*Phase)(nil)
)

func init() {
	client.Register(client.KindOf[Params, Result](Name))
	scenarios.Register(scenarios.Kind{
		Name:       Name,
		Throughput: scenarios.Throughput{Metric: metrics.TPS, Unit: "pongs/s", Messages: true, Count: metrics.Success, Bench: "msgs/s"},
		Doc:        "closed loop of pings: C pings in flight, one per connection, until total pongs; control-frame round trip",
		New:        func() scenarios.Phase { return &Phase{} },
		Faults:     []scenarios.Fault{{Metric: metrics.Failed, Of: metrics.Total, What: "pings failed"}},
		Efficiency: &scenarios.Efficiency{Rate: metrics.TPS, EER: metrics.EER, Count: metrics.Success},
		Metrics: metrics.Join([]metrics.Def{
			{Name: metrics.TPS, Kind: metrics.Float, Doc: "pongs per second"},
			{Name: metrics.EER, Kind: metrics.Float, Doc: "tps / server cpu_avg: pongs per second per percent of a core"},
		}, metrics.Latency, []metrics.Def{
			{Name: metrics.Used, Kind: metrics.Duration, Doc: "wall time of the phase"},
			{Name: metrics.Total, Kind: metrics.Count, Doc: "pongs asked for"},
			{Name: metrics.Success, Kind: metrics.Count, Doc: "pongs received"},
			{Name: metrics.Failed, Kind: metrics.Count, Doc: "pings lost or late"},
			{Name: metrics.Conns, Kind: metrics.Count, Doc: "connections open"},
			{Name: metrics.Concurrency, Kind: metrics.Count, Doc: "pings in flight"},
		}, scenarios.CPUPer1MDefs("pongs", "pongs")),
	})
}

// Defaults implements scenarios.ContextDefaults: concurrency is every
// open connection.
func (p *Phase) Defaults(c scenarios.Context) {
	if p.Concurrency == 0 {
		p.Concurrency = c.Conns
	}
}

// Validate implements scenarios.Phase.
func (p *Phase) Validate(c scenarios.Context) []scenarios.FieldError {
	return scenarios.NeedsOpen(c, "concurrency", p.Concurrency)
}

// Run implements scenarios.Phase.
func (p *Phase) Run(ctx context.Context, env *scenarios.Env) (scenarios.Outcome, error) {
	conc := min(p.Concurrency, env.Driver.Conns())
	if conc <= 0 {
		return scenarios.Outcome{}, fmt.Errorf("no open connections")
	}
	q := p.Params
	q.Concurrency = conc
	r, err := scenarios.Drive[Result](ctx, env, &q)
	if r == nil {
		return scenarios.Outcome{}, err // nothing was measured
	}
	v := metrics.Values{
		metrics.Used:        r.Used,
		metrics.Total:       r.Total,
		metrics.Success:     r.Success,
		metrics.Failed:      r.Failed,
		metrics.Conns:       int64(env.Driver.Conns()),
		metrics.Concurrency: int64(conc),
		metrics.TPS:         scenarios.PerSecond(r.Success, r.Used),
	}
	scenarios.LatencyValues(v, r.Latency)
	out := scenarios.Outcome{Metrics: v, Histogram: scenarios.HistString(r.Latency)}
	if conc < p.Concurrency {
		out.Warnings = append(out.Warnings, scenarios.Lowered("concurrency", p.Concurrency, conc))
	}
	out.Reasons = map[string]string{metrics.Failed: scenarios.ErrorSummary(r.Errors)}
	if r.Stopped == client.StopNoConnections {
		out.Failed, out.Error = true, fmt.Sprintf("stopped after %d of %d pings: no open connections left", r.Success+r.Failed, r.Total)
	}
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}
