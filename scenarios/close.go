package scenarios

import (
	"context"
	"fmt"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
)

// The close phase's key and the metric only it reports.
const (
	closeKind      = "close"
	closeOtherCode = "other_code"
)

// Close measures the close handshake (RFC 6455 §7): Connections of the
// open connections each send a close frame (status 1000), at most
// Concurrency at once, and each is timed until the server's close frame
// arrives. The connections are closed after: the phase ends them, so it
// comes last, or before a connect phase that opens new ones.
type Close struct {
	client.CloseParams `yaml:",inline"`
}

func init() {
	Register(Kind{
		Name:       closeKind,
		Throughput: Throughput{Metric: metrics.TPS, Unit: "closes/s", Count: metrics.Success},
		Doc:        "close handshake: C connections at a time send a close frame; latency until the server's close frame, failures; the connections are gone after",
		New:        func() Phase { return &Close{} },
		Faults:     []Fault{{Metric: metrics.Failed, Of: metrics.Total, What: "closes failed"}},
		Title:      "[Close] Report",
		Columns: []Column{
			{Metric: ColFramework},
			{Header: "TPS", Metric: metrics.TPS, Delta: true, Format: FormatRate},
			{Metric: ColLatency},
			{Header: "Used", Metric: metrics.Used, Delta: true},
			{Header: "Total", Metric: metrics.Total, Format: FormatInt},
			{Header: "Success", Metric: metrics.Success, Format: FormatInt},
			{Header: "Failed", Metric: metrics.Failed, Format: FormatInt},
			{Header: "Other code", Metric: closeOtherCode, Format: FormatInt},
			{Header: "Concurrency", Metric: metrics.Concurrency, Format: FormatInt},
			{Metric: ColServer},
			{Metric: ColClientCPU},
			{Metric: ColVerdict},
		},
		Metrics: metrics.Join([]metrics.Def{
			{Name: metrics.TPS, Kind: metrics.Float, Doc: "close handshakes completed per second"},
		}, metrics.Latency, []metrics.Def{
			{Name: metrics.Used, Kind: metrics.Duration, Doc: "wall time of the phase"},
			{Name: metrics.Total, Kind: metrics.Count, Doc: "connections asked to close"},
			{Name: metrics.Success, Kind: metrics.Count, Doc: "closes the server answered with its close frame"},
			{Name: metrics.Failed, Kind: metrics.Count, Doc: "connections lost, or past timeout, before the server's close frame"},
			{Name: closeOtherCode, Kind: metrics.Count, Doc: "server close frames with another status code than the client's 1000, or none (counted in success)"},
			{Name: metrics.Concurrency, Kind: metrics.Count, Doc: "close handshakes in progress at once"},
			{Name: metrics.Conns, Kind: metrics.Count, Doc: "connections open after the phase"},
		}),
	})
}

// Defaults implements ContextDefaults: every open connection, all at
// once.
func (p *Close) Defaults(c Context) {
	if p.Connections == 0 {
		p.Connections = c.Conns
	}
	if p.Concurrency == 0 {
		p.Concurrency = p.Connections
	}
}

// Validate implements Phase.
func (p *Close) Validate(c Context) []FieldError {
	errs := NeedsOpen(c, "connections", p.Connections)
	if p.Concurrency > p.Connections {
		errs = append(errs, FieldError{Field: "concurrency", Msg: fmt.Sprintf("must be <= connections (%d), got %d", p.Connections, p.Concurrency)})
	}
	return errs
}

// Run implements Phase.
func (p *Close) Run(ctx context.Context, env *Env) (Outcome, error) {
	conns := min(p.Connections, env.Driver.Conns())
	if conns <= 0 {
		return Outcome{}, fmt.Errorf("no open connections")
	}
	conc := min(p.Concurrency, conns)
	q := p.CloseParams
	q.Connections, q.Concurrency = conns, conc
	r, err := Drive[client.CloseResult](ctx, env, &q)
	if r == nil {
		return Outcome{}, err // nothing was measured
	}
	v := metrics.Values{
		metrics.Used:        r.Used,
		metrics.Total:       r.Total,
		metrics.Success:     r.Success,
		metrics.Failed:      r.Failed,
		closeOtherCode:      r.OtherCode,
		metrics.Concurrency: int64(conc),
		metrics.Conns:       int64(env.Driver.Conns()),
		metrics.TPS:         PerSecond(r.Success, r.Used),
	}
	LatencyValues(v, r.Latency)
	out := Outcome{Metrics: v, Histogram: HistString(r.Latency)}
	if conns < p.Connections {
		out.Warnings = append(out.Warnings, Lowered("connections", p.Connections, conns))
	}
	if r.OtherCode > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d of %d closes were answered with another status code than %d: %s", r.OtherCode, r.Success, client.CloseCode, ErrorSummary(r.Codes)))
	}
	out.Reasons = map[string]string{metrics.Failed: ErrorSummary(r.Errors)}
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}
