// Package echo is the echo phase kind, whole: its keys and its result
// (params.go), what an event loop runs for it (run.go: the closed loop's
// send, match and measure, the one path every echo takes, allocation
// free) and its plan side (this file: its metrics, faults and Run). It
// registers itself with the client and with the scenarios in init;
// scenarios/all imports it.
package echo

import (
	"context"
	"fmt"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/scenarios"
)

// Name is the echo phase's key; its metrics are the closed loop's
// words every such kind shares (internal/metrics).
const Name = "echo"

// Phase is a closed loop: Concurrency messages in flight, each on its own
// connection; when a message's echo arrives (and matches), the next one is
// sent, until Total echoes were measured. Warmup echoes come first and are
// not counted.
type Phase struct {
	Params `yaml:",inline"`
}

func init() {
	client.Register(client.KindOf[Params, Result](Name))
	scenarios.Register(scenarios.Kind{
		Name:       Name,
		Throughput: scenarios.Throughput{Metric: metrics.TPS, Unit: "echoes/s", Messages: true, Count: metrics.Success, Bench: "msgs/s"},
		Doc:        "closed loop: C messages in flight, one echo at a time per connection, until total",
		New:        func() scenarios.Phase { return &Phase{} },
		Faults:     []scenarios.Fault{{Metric: metrics.Failed, Of: metrics.Total, What: "echoes failed"}},
		Title:      "[BenchEcho] Report",
		Columns: []scenarios.Column{
			{Metric: scenarios.ColFramework},
			{Header: "TPS", Metric: metrics.TPS, Delta: true, Format: scenarios.FormatRate},
			{Header: "EER", Metric: metrics.EER, Delta: true, Format: scenarios.FormatFloat2},
			{Metric: scenarios.ColLatency},
			{Header: "Used", Metric: metrics.Used, Delta: true},
			{Header: "Total", Metric: metrics.Total, Format: scenarios.FormatInt},
			{Header: "Success", Metric: metrics.Success, Format: scenarios.FormatInt},
			{Header: "Failed", Metric: metrics.Failed, Format: scenarios.FormatInt},
			{Header: "Conns", Metric: metrics.Conns, Format: scenarios.FormatInt},
			{Header: "Concurrency", Metric: metrics.Concurrency, Format: scenarios.FormatInt},
			{Header: "Payload", Metric: metrics.Payload, Format: scenarios.FormatInt},
			{Metric: scenarios.ColServer},
			// CPU seconds per million echoes, server and client: the ratio
			// that says whether the client could measure this server at all.
			{Header: "Srv CPU-s/1M", Metric: metrics.ServerCPUPer1M, Delta: true, Format: scenarios.FormatFloat2},
			{Header: "Cli CPU-s/1M", Metric: metrics.ClientCPUPer1M, Delta: true, Format: scenarios.FormatFloat2},
			{Metric: scenarios.ColClientCPU},
			{Metric: scenarios.ColVerdict},
		},
		// Echoes that came back intact are what the CPU bought.
		Efficiency: &scenarios.Efficiency{Rate: metrics.TPS, EER: metrics.EER, Count: metrics.Success},
		Metrics: metrics.Join([]metrics.Def{
			{Name: metrics.TPS, Kind: metrics.Float, Doc: "echoes per second"},
			{Name: metrics.EER, Kind: metrics.Float, Doc: "tps / server cpu_avg: echoes per second per percent of a core"},
		}, metrics.Latency, []metrics.Def{
			{Name: metrics.Used, Kind: metrics.Duration, Doc: "wall time of the measured part"},
			{Name: metrics.Total, Kind: metrics.Count, Doc: "echoes asked for"},
			{Name: metrics.Success, Kind: metrics.Count, Doc: "echoes received intact"},
			{Name: metrics.Failed, Kind: metrics.Count, Doc: "echoes lost, late or wrong"},
			{Name: metrics.Conns, Kind: metrics.Count, Doc: "connections open"},
			{Name: metrics.Concurrency, Kind: metrics.Count, Doc: "messages in flight"},
			{Name: metrics.Payload, Kind: metrics.Bytes, Doc: "bytes per message"},
		}, scenarios.CPUPer1MDefs("echoes", "echoes"), scenarios.WireDefs),
	})
}

// Defaults implements ContextDefaults: concurrency is every open
// connection.
func (p *Phase) Defaults(c scenarios.Context) {
	if p.Concurrency == 0 {
		p.Concurrency = c.Conns
	}
}

// Message implements Messenger.
func (p *Phase) Message() (int, bool) { return p.Bytes(), p.Text }

// Bytes returns the payload size in bytes (its tag default before Defaults
// ran).
func (p *Phase) Bytes() int { return scenarios.SizeOr(p, "payload", p.Payload) }

// Validate implements Phase.
func (p *Phase) Validate(c scenarios.Context) []scenarios.FieldError {
	return append(scenarios.ValidatePayloadKind(p.PayloadKind, p.File, p.Bytes()), scenarios.NeedsOpen(c, "concurrency", p.Concurrency)...)
}

// Run implements Phase.
func (p *Phase) Run(ctx context.Context, env *scenarios.Env) (scenarios.Outcome, error) {
	conc := min(p.Concurrency, env.Driver.Conns())
	if conc <= 0 {
		return scenarios.Outcome{}, fmt.Errorf("no open connections")
	}
	file, err := scenarios.PayloadFile(p.PayloadKind, p.File, p.Bytes())
	if err != nil {
		return scenarios.Outcome{}, err
	}
	q := p.Params
	q.Concurrency, q.PayloadFile = conc, file
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
		metrics.Payload:     int64(p.Bytes()),
		metrics.TPS:         scenarios.PerSecond(r.Success, r.Used),
	}
	scenarios.WireValues(v, r.BytesPayload, r.BytesWire)
	scenarios.LatencyValues(v, r.Latency)
	out := scenarios.Outcome{Metrics: v, Timeline: scenarios.Timeline(r.Seconds), Histogram: scenarios.HistString(r.Latency)}
	if conc < p.Concurrency {
		out.Warnings = append(out.Warnings, scenarios.Lowered("concurrency", p.Concurrency, conc))
	}
	out.Reasons = map[string]string{metrics.Failed: scenarios.ErrorSummary(r.Errors)}
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}
