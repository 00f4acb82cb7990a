// Package close is the close phase kind, whole: its keys and its result
// (params.go), what an event loop runs for it (run.go) and its plan side
// (this file: its metrics, report table, faults and Run). It registers
// itself with the client and with the scenarios in init; scenarios/all
// imports it. (Importers name it closekind: close is a builtin.)
package close

import (
	"context"
	"fmt"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/scenarios"
)

// Name is the close phase's key; otherCode is the metric only it
// reports.
const (
	Name      = "close"
	otherCode = "other_code"
)

// Phase measures the close handshake (RFC 6455 §7): Connections of the
// open connections each send a close frame (status 1000), at most
// Concurrency at once, and each is timed until the server's close frame
// arrives. The connections are closed after: the phase ends them, so it
// comes last, or before a connect phase that opens new ones.
type Phase struct {
	Params `yaml:",inline"`
}

// The scenarios' contract, checked at compile time (KindOf checks the
// client's).
var (
	_ scenarios.Phase           = (*Phase)(nil)
	_ scenarios.ContextDefaults = (*Phase)(nil)
)

func init() {
	client.Register(client.KindOf[Params, Result](Name))
	scenarios.Register(scenarios.Kind{
		Name:       Name,
		Throughput: scenarios.Throughput{Metric: metrics.TPS, Unit: "closes/s", Count: metrics.Success},
		Doc:        "close handshake: C connections at a time send a close frame; latency until the server's close frame, failures; the connections are gone after",
		New:        func() scenarios.Phase { return &Phase{} },
		Faults:     []scenarios.Fault{{Metric: metrics.Failed, Of: metrics.Total, What: "closes failed"}},
		Title:      "[Close] Report",
		Columns: []scenarios.Column{
			{Metric: scenarios.ColFramework},
			{Header: "TPS", Metric: metrics.TPS, Delta: true, Format: scenarios.FormatRate},
			{Metric: scenarios.ColLatency},
			{Header: "Used", Metric: metrics.Used, Delta: true},
			{Header: "Total", Metric: metrics.Total, Format: scenarios.FormatInt},
			{Header: "Success", Metric: metrics.Success, Format: scenarios.FormatInt},
			{Header: "Failed", Metric: metrics.Failed, Format: scenarios.FormatInt},
			{Header: "Other code", Metric: otherCode, Format: scenarios.FormatInt},
			{Header: "Concurrency", Metric: metrics.Concurrency, Format: scenarios.FormatInt},
			{Metric: scenarios.ColServer},
			{Metric: scenarios.ColClientCPU},
			{Metric: scenarios.ColVerdict},
		},
		Metrics: metrics.Join([]metrics.Def{
			{Name: metrics.TPS, Kind: metrics.Float, Doc: "close handshakes completed per second"},
		}, metrics.Latency, []metrics.Def{
			{Name: metrics.Used, Kind: metrics.Duration, Doc: "wall time of the phase"},
			{Name: metrics.Total, Kind: metrics.Count, Doc: "connections asked to close"},
			{Name: metrics.Success, Kind: metrics.Count, Doc: "closes the server answered with its close frame"},
			{Name: metrics.Failed, Kind: metrics.Count, Doc: "connections lost, or past timeout, before the server's close frame"},
			{Name: otherCode, Kind: metrics.Count, Doc: "server close frames with another status code than the client's 1000, or none (counted in success)"},
			{Name: metrics.Concurrency, Kind: metrics.Count, Doc: "close handshakes in progress at once"},
			{Name: metrics.Conns, Kind: metrics.Count, Doc: "connections open after the phase"},
		}),
	})
}

// Defaults implements scenarios.ContextDefaults: every open connection, all at
// once.
func (p *Phase) Defaults(c scenarios.Context) {
	if p.Connections == 0 {
		p.Connections = c.Conns
	}
	if p.Concurrency == 0 {
		p.Concurrency = p.Connections
	}
}

// Validate implements scenarios.Phase.
func (p *Phase) Validate(c scenarios.Context) []scenarios.FieldError {
	errs := scenarios.NeedsOpen(c, "connections", p.Connections)
	if p.Concurrency > p.Connections {
		errs = append(errs, scenarios.FieldError{Field: "concurrency", Msg: fmt.Sprintf("must be <= connections (%d), got %d", p.Connections, p.Concurrency)})
	}
	return errs
}

// Run implements scenarios.Phase.
func (p *Phase) Run(ctx context.Context, env *scenarios.Env) (scenarios.Outcome, error) {
	conns := min(p.Connections, env.Driver.Conns())
	if conns <= 0 {
		return scenarios.Outcome{}, fmt.Errorf("no open connections")
	}
	conc := min(p.Concurrency, conns)
	q := p.Params
	q.Connections, q.Concurrency = conns, conc
	r, err := scenarios.Drive[Result](ctx, env, &q)
	if r == nil {
		return scenarios.Outcome{}, err // nothing was measured
	}
	v := metrics.Values{
		metrics.Used:        r.Used,
		metrics.Total:       r.Total,
		metrics.Success:     r.Success,
		metrics.Failed:      r.Failed,
		otherCode:           r.OtherCode,
		metrics.Concurrency: int64(conc),
		metrics.Conns:       int64(env.Driver.Conns()),
		metrics.TPS:         scenarios.PerSecond(r.Success, r.Used),
	}
	scenarios.LatencyValues(v, r.Latency)
	out := scenarios.Outcome{Metrics: v, Histogram: scenarios.HistString(r.Latency)}
	if conns < p.Connections {
		out.Warnings = append(out.Warnings, scenarios.Lowered("connections", p.Connections, conns))
	}
	if r.OtherCode > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d of %d closes were answered with another status code than %d: %s", r.OtherCode, r.Success, Code, scenarios.ErrorSummary(r.Codes)))
	}
	out.Reasons = map[string]string{metrics.Failed: scenarios.ErrorSummary(r.Errors)}
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}
