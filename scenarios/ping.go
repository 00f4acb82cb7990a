package scenarios

import (
	"context"
	"fmt"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
)

// pingKind is the ping phase's key; its metrics are the closed loop's
// words every such kind shares (internal/metrics).
const pingKind = "ping"

// Ping is a closed loop of control frames: Concurrency connections each
// keep one ping in flight and send the next as soon as its pong comes,
// until Total pongs were measured. It measures how fast a server answers
// pings (its control-frame path and the round trip), apart from any data
// message's decoding and copying.
type Ping struct {
	client.PingParams `yaml:",inline"`
}

func init() {
	Register(Kind{
		Name:       pingKind,
		Throughput: Throughput{Metric: metrics.TPS, Unit: "pongs/s", Messages: true, Count: metrics.Success, Bench: "msgs/s"},
		Doc:        "closed loop of pings: C pings in flight, one per connection, until total pongs; control-frame round trip",
		New:        func() Phase { return &Ping{} },
		Faults:     []Fault{{Metric: metrics.Failed, Of: metrics.Total, What: "pings failed"}},
		Efficiency: &Efficiency{Rate: metrics.TPS, EER: metrics.EER, Count: metrics.Success},
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
		}, cpuPer1MDefs("pongs", "pongs")),
	})
}

// Defaults implements ContextDefaults: concurrency is every open
// connection.
func (p *Ping) Defaults(c Context) {
	if p.Concurrency == 0 {
		p.Concurrency = c.Conns
	}
}

// Validate implements Phase.
func (p *Ping) Validate(c Context) []FieldError {
	return needsOpen(c, "concurrency", p.Concurrency)
}

// Run implements Phase.
func (p *Ping) Run(ctx context.Context, env *Env) (Outcome, error) {
	conc := min(p.Concurrency, env.Driver.Conns())
	if conc <= 0 {
		return Outcome{}, fmt.Errorf("no open connections")
	}
	q := p.PingParams
	q.Concurrency = conc
	r, err := run[client.PingResult](ctx, env, &q)
	if r == nil {
		return Outcome{}, err // nothing was measured
	}
	v := metrics.Values{
		metrics.Used:        r.Used,
		metrics.Total:       r.Total,
		metrics.Success:     r.Success,
		metrics.Failed:      r.Failed,
		metrics.Conns:       int64(env.Driver.Conns()),
		metrics.Concurrency: int64(conc),
		metrics.TPS:         rate(r.Success, r.Used),
	}
	latencyValues(v, r.Latency)
	out := Outcome{Metrics: v, Histogram: HistString(r.Latency)}
	if conc < p.Concurrency {
		out.Warnings = append(out.Warnings, lowered("concurrency", p.Concurrency, conc))
	}
	out.Reasons = map[string]string{metrics.Failed: errorSummary(r.Errors)}
	if r.Stopped == client.StopNoConnections {
		out.Failed, out.Error = true, fmt.Sprintf("stopped after %d of %d pings: no open connections left", r.Success+r.Failed, r.Total)
	}
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}
