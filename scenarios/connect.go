package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/units"
)

// Connect defaults not expressible as a tag.
const (
	DefaultConnectConcurrency = 1000
)

// Connect opens connections to the server and measures handshake latency
// (TCP connect start to the 101 response).
type Connect struct {
	Connections int            `yaml:"connections" required:"true" min:"1" doc:"connections to open"`                            // to open; required, > 0
	Concurrency int            `yaml:"concurrency" min:"1" doc:"handshakes in progress at once; default min(1000, connections)"` // handshakes in progress at once; default min(1000, connections)
	Timeout     units.Duration `yaml:"timeout" default:"5s" min:"1ns" doc:"time allowed for one attempt"`                        // per attempt; default 5s
	Retries     int            `yaml:"retries" default:"3" doc:"extra attempts per connection; negative = none"`                 // extra attempts per connection; default 3 (set -1 for none)
}

func init() {
	Register(Kind{
		Name:       "connect",
		Throughput: Throughput{Metric: "tps", Unit: "connections/s"},
		Doc:        "open N connections at concurrency C; handshake latency and connection rate",
		New:        func() Phase { return &Connect{} },
		Title:      "[Connections] Report",
		Columns: []Column{
			{Metric: ColFramework},
			{Header: "TPS", Metric: "tps", Delta: true, Format: FormatRate},
			{Metric: ColLatency},
			{Header: "Used", Metric: "used", Delta: true},
			{Header: "Total", Metric: "total", Format: FormatInt},
			{Header: "Success", Metric: "success", Format: FormatInt},
			{Header: "Failed", Metric: "failed", Format: FormatInt},
			{Header: "Concurrency", Metric: "concurrency", Format: FormatInt},
			{Header: "TLS/s", Metric: "tls_handshakes_per_s", Delta: true, Format: FormatRate, Optional: true},
			{Header: "TLS P99", Metric: "tls_p99", Delta: true, Optional: true},
			{Header: "Resumed", Metric: "tls_resumed", Format: FormatInt, Optional: true},
			{Metric: ColServer},
			{Metric: ColClientCPU},
			{Metric: ColVerdict},
		},
		Metrics: metrics.Join([]metrics.Def{
			{Name: "tps", Kind: metrics.Float, Doc: "connections opened per second"},
		}, metrics.Latency, []metrics.Def{
			{Name: "used", Kind: metrics.Duration, Doc: "wall time of the phase"},
			{Name: "total", Kind: metrics.Count, Doc: "connections asked for"},
			{Name: "success", Kind: metrics.Count, Doc: "connections open at the end"},
			{Name: "failed", Kind: metrics.Count, Doc: "connections that failed after all retries"},
			{Name: "retried", Kind: metrics.Count, Doc: "attempts that failed and were retried"},
			{Name: "concurrency", Kind: metrics.Count, Doc: "handshakes in progress at once"},
			{Name: "conns", Kind: metrics.Count, Doc: "connections open after the phase"},
			{Name: "tcp_p50", Kind: metrics.Duration, Doc: "TCP connect, median (successful connections)"},
			{Name: "tcp_p99", Kind: metrics.Duration, Doc: "TCP connect, 99th percentile"},
			{Name: "tls_p50", Kind: metrics.Duration, Doc: "TLS handshake, median; absent without TLS"},
			{Name: "tls_p99", Kind: metrics.Duration, Doc: "TLS handshake, 99th percentile; absent without TLS"},
			{Name: "upgrade_p50", Kind: metrics.Duration, Doc: "upgrade request to 101 response, median"},
			{Name: "upgrade_p99", Kind: metrics.Duration, Doc: "upgrade request to 101 response, 99th percentile"},
			{Name: "tls_handshakes_per_s", Kind: metrics.Float, Doc: "TLS handshakes completed per second of the phase; absent without TLS"},
			{Name: "tls_resumed", Kind: metrics.Count, Doc: "TLS handshakes that resumed a session; absent without TLS"},
		}),
	})
}

// Defaults implements ContextDefaults: concurrency follows connections.
func (p *Connect) Defaults(Context) {
	if p.Concurrency == 0 {
		p.Concurrency = min(DefaultConnectConcurrency, max(p.Connections, 1))
	}
}

// Opens implements Opener.
func (p *Connect) Opens() (conns, concurrency int) { return p.Connections, p.Concurrency }

// Validate implements Phase.
func (p *Connect) Validate(Context) []FieldError {
	var errs []FieldError
	if p.Connections > 0 && p.Concurrency > p.Connections {
		errs = append(errs, FieldError{"concurrency", fmt.Sprintf("must be <= connections (%d), got %d", p.Connections, p.Concurrency)})
	}
	return errs
}

// Run implements Phase.
func (p *Connect) Run(ctx context.Context, env *Env) (Outcome, error) {
	r, err := run[client.ConnectResult](ctx, env, &client.ConnectParams{
		Connections: p.Connections,
		Concurrency: p.Concurrency,
		Timeout:     p.Timeout.D(),
		Retries:     max(p.Retries, 0),
	})
	if r == nil {
		return Outcome{}, err // nothing was measured
	}
	v := metrics.Values{
		"used":        r.Used,
		"total":       r.Total,
		"success":     r.Success,
		"failed":      r.Failed,
		"retried":     r.Retried,
		"concurrency": int64(p.Concurrency),
		"conns":       int64(env.Driver.Conns()),
		"tps":         rate(r.Success, r.Used),
	}
	latencyValues(v, r.Latency)
	splitValues(v, "tcp", r.TCP)
	splitValues(v, "upgrade", r.Upgrade)
	if n := histCount(r.TLS); n > 0 {
		splitValues(v, "tls", r.TLS)
		v["tls_handshakes_per_s"] = rate(n, r.Used)
		v["tls_resumed"] = r.TLSResumed
	}
	out := Outcome{Metrics: v, Info: negotiatedInfo(r), Histogram: HistString(r.Latency)}
	if r.Failed > 0 {
		out.Failed = true
		out.Error = fmt.Sprintf("%d of %d connections failed: %s", r.Failed, r.Total, errorSummary(r.Errors))
	}
	if r.Retried > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d connection attempts were retried", r.Retried))
	}
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}

// splitValues records a part of the handshake: <name>_p50 and _p99.
func splitValues(v metrics.Values, name string, h client.Hist) {
	if histCount(h) == 0 {
		v[name+"_p50"], v[name+"_p99"] = time.Duration(0), time.Duration(0)
		return
	}
	v[name+"_p50"] = time.Duration(h.ValueAtQuantile(50))
	v[name+"_p99"] = time.Duration(h.ValueAtQuantile(99))
}

func histCount(h client.Hist) int64 {
	if h.Histogram == nil {
		return 0
	}
	return h.TotalCount()
}

// negotiatedInfo is what the servers agreed to, for the result's info.
func negotiatedInfo(r *client.ConnectResult) map[string]string {
	info := map[string]string{}
	for k, s := range map[string]string{"subprotocol": r.Subprotocol, "extensions": r.Extensions, "tls_version": r.TLSVersion} {
		if s != "" {
			info[k] = s
		}
	}
	if len(info) == 0 {
		return nil
	}
	return info
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
