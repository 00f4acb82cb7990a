package scenarios

import (
	"context"
	"fmt"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
)

// echoKind is the echo phase's key; its metrics are the closed loop's
// words every such kind shares (internal/metrics).
const echoKind = "echo"

// Echo is a closed loop: Concurrency messages in flight, each on its own
// connection; when a message's echo arrives (and matches), the next one is
// sent, until Total echoes were measured. Warmup echoes come first and are
// not counted.
type Echo struct {
	client.EchoParams `yaml:",inline"`
}

func init() {
	Register(Kind{
		Name:       echoKind,
		Throughput: Throughput{Metric: metrics.TPS, Unit: "echoes/s", Messages: true, Count: metrics.Success, Bench: "msgs/s"},
		Doc:        "closed loop: C messages in flight, one echo at a time per connection, until total",
		New:        func() Phase { return &Echo{} },
		Faults:     []Fault{{Metric: metrics.Failed, Of: metrics.Total, What: "echoes failed"}},
		Title:      "[BenchEcho] Report",
		Columns: []Column{
			{Metric: ColFramework},
			{Header: "TPS", Metric: metrics.TPS, Delta: true, Format: FormatRate},
			{Header: "EER", Metric: metrics.EER, Delta: true, Format: FormatFloat2},
			{Metric: ColLatency},
			{Header: "Used", Metric: metrics.Used, Delta: true},
			{Header: "Total", Metric: metrics.Total, Format: FormatInt},
			{Header: "Success", Metric: metrics.Success, Format: FormatInt},
			{Header: "Failed", Metric: metrics.Failed, Format: FormatInt},
			{Header: "Conns", Metric: metrics.Conns, Format: FormatInt},
			{Header: "Concurrency", Metric: metrics.Concurrency, Format: FormatInt},
			{Header: "Payload", Metric: metrics.Payload, Format: FormatInt},
			{Metric: ColServer},
			// CPU seconds per million echoes, server and client: the ratio
			// that says whether the client could measure this server at all.
			{Header: "Srv CPU-s/1M", Metric: metrics.ServerCPUPer1M, Delta: true, Format: FormatFloat2},
			{Header: "Cli CPU-s/1M", Metric: metrics.ClientCPUPer1M, Delta: true, Format: FormatFloat2},
			{Metric: ColClientCPU},
			{Metric: ColVerdict},
		},
		// Echoes that came back intact are what the CPU bought.
		Efficiency: &Efficiency{Rate: metrics.TPS, EER: metrics.EER, Count: metrics.Success},
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
		}, CPUPer1MDefs("echoes", "echoes"), wireDefs),
	})
}

// Defaults implements ContextDefaults: concurrency is every open
// connection.
func (p *Echo) Defaults(c Context) {
	if p.Concurrency == 0 {
		p.Concurrency = c.Conns
	}
}

// Message implements Messenger.
func (p *Echo) Message() (int, bool) { return p.Bytes(), p.Text }

// Bytes returns the payload size in bytes (its tag default before Defaults
// ran).
func (p *Echo) Bytes() int { return SizeOr(p, "payload", p.Payload) }

// Validate implements Phase.
func (p *Echo) Validate(c Context) []FieldError {
	return append(validatePayloadKind(p.PayloadKind, p.File, p.Bytes()), NeedsOpen(c, "concurrency", p.Concurrency)...)
}

// Run implements Phase.
func (p *Echo) Run(ctx context.Context, env *Env) (Outcome, error) {
	conc := min(p.Concurrency, env.Driver.Conns())
	if conc <= 0 {
		return Outcome{}, fmt.Errorf("no open connections")
	}
	file, err := payloadFile(p.PayloadKind, p.File, p.Bytes())
	if err != nil {
		return Outcome{}, err
	}
	q := p.EchoParams
	q.Concurrency, q.PayloadFile = conc, file
	r, err := Drive[client.EchoResult](ctx, env, &q)
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
		metrics.Payload:     int64(p.Bytes()),
		metrics.TPS:         PerSecond(r.Success, r.Used),
	}
	wireValues(v, r.BytesPayload, r.BytesWire)
	LatencyValues(v, r.Latency)
	out := Outcome{Metrics: v, Timeline: Timeline(r.Seconds), Histogram: HistString(r.Latency)}
	if conc < p.Concurrency {
		out.Warnings = append(out.Warnings, Lowered("concurrency", p.Concurrency, conc))
	}
	out.Reasons = map[string]string{metrics.Failed: ErrorSummary(r.Errors)}
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}
