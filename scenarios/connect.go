package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
)

// The connect phase's key and the metrics only it reports.
const (
	connectKind         = "connect"
	connectRetried      = "retried"
	connectTCPP50       = "tcp_p50"
	connectTCPP99       = "tcp_p99"
	connectTLSP50       = "tls_p50"
	connectTLSP99       = "tls_p99"
	connectUpgradeP50   = "upgrade_p50"
	connectUpgradeP99   = "upgrade_p99"
	connectGreetingP50  = "greeting_p50"
	connectGreetingP99  = "greeting_p99"
	connectTLSPerSecond = "tls_handshakes_per_s"
	connectTLSResumed   = "tls_resumed"
	// CPU milliseconds per handshake (the connect kind's CPU figures).
	connectClientCPUPerHS    = "client_cpu_per_handshake"
	connectServerCPUPerHS    = "server_cpu_per_handshake"
	connectClientCPUPerHSNet = "client_cpu_per_handshake_net"
	connectServerCPUPerHSNet = "server_cpu_per_handshake_net"
)

// connectCPU are the connect kind's CPU figures: CPU milliseconds per
// connection opened (its TCP connect, TLS handshake and upgrade).
var connectCPU = CPUFigures{Scale: 1e3, Client: connectClientCPUPerHS, Server: connectServerCPUPerHS, ClientNet: connectClientCPUPerHSNet, ServerNet: connectServerCPUPerHSNet}

// Connect opens connections to the server and measures handshake latency
// (TCP connect start to the 101 response).
type Connect struct {
	client.ConnectParams `yaml:",inline"`
}

func init() {
	Register(Kind{
		Name:       connectKind,
		Throughput: Throughput{Metric: metrics.TPS, Unit: "connections/s", Count: metrics.Success, Bench: "conns/s"},
		Doc:        "open N connections at concurrency C; handshake latency and connection rate",
		New:        func() Phase { return &Connect{} },
		Faults:     []Fault{{Metric: metrics.Failed, Of: metrics.Total, What: "connections failed"}},
		Title:      "[Connections] Report",
		// Connections opened are what the CPU bought: each side's CPU per
		// handshake (no EER: the published tables have none for connect).
		Efficiency: &Efficiency{Rate: metrics.TPS, Count: metrics.Success, CPU: &connectCPU},
		Columns: []Column{
			{Metric: ColFramework},
			{Header: "TPS", Metric: metrics.TPS, Delta: true, Format: FormatRate},
			{Metric: ColLatency},
			{Header: "Used", Metric: metrics.Used, Delta: true},
			{Header: "Total", Metric: metrics.Total, Format: FormatInt},
			{Header: "Success", Metric: metrics.Success, Format: FormatInt},
			{Header: "Failed", Metric: metrics.Failed, Format: FormatInt},
			{Header: "Concurrency", Metric: metrics.Concurrency, Format: FormatInt},
			{Header: "TLS/s", Metric: connectTLSPerSecond, Delta: true, Format: FormatRate, Optional: true},
			{Header: "TLS P99", Metric: connectTLSP99, Delta: true, Optional: true},
			{Header: "Resumed", Metric: connectTLSResumed, Format: FormatInt, Optional: true},
			{Metric: ColServer},
			// CPU milliseconds per handshake, server and client: in a storm
			// the handshake is the cost on both sides.
			{Header: "Srv CPU-ms/hs", Metric: connectServerCPUPerHS, Delta: true, Format: FormatFloat2},
			{Header: "Cli CPU-ms/hs", Metric: connectClientCPUPerHS, Delta: true, Format: FormatFloat2},
			{Metric: ColClientCPU},
			{Metric: ColVerdict},
		},
		Metrics: metrics.Join([]metrics.Def{
			{Name: metrics.TPS, Kind: metrics.Float, Doc: "connections opened per second"},
		}, metrics.Latency, []metrics.Def{
			{Name: metrics.Used, Kind: metrics.Duration, Doc: "wall time of the phase"},
			{Name: metrics.Total, Kind: metrics.Count, Doc: "connections asked for"},
			{Name: metrics.Success, Kind: metrics.Count, Doc: "connections open at the end"},
			{Name: metrics.Failed, Kind: metrics.Count, Doc: "connections that failed after all retries"},
			{Name: connectRetried, Kind: metrics.Count, Doc: "attempts that failed and were retried"},
			{Name: metrics.Concurrency, Kind: metrics.Count, Doc: "handshakes in progress at once"},
			{Name: metrics.Conns, Kind: metrics.Count, Doc: "connections open after the phase"},
			{Name: connectTCPP50, Kind: metrics.Duration, Doc: "TCP connect, median (successful connections)"},
			{Name: connectTCPP99, Kind: metrics.Duration, Doc: "TCP connect, 99th percentile"},
			{Name: connectTLSP50, Kind: metrics.Duration, Doc: "TLS handshake, median; absent without TLS"},
			{Name: connectTLSP99, Kind: metrics.Duration, Doc: "TLS handshake, 99th percentile; absent without TLS"},
			{Name: connectUpgradeP50, Kind: metrics.Duration, Doc: "upgrade request to 101 response, median"},
			{Name: connectUpgradeP99, Kind: metrics.Duration, Doc: "upgrade request to 101 response, 99th percentile"},
			{Name: connectGreetingP50, Kind: metrics.Duration, Doc: "the protocol's handshake after the upgrade (101 response to e.g. MQTT CONNACK), median; absent on raw connections"},
			{Name: connectGreetingP99, Kind: metrics.Duration, Doc: "the protocol's handshake after the upgrade, 99th percentile; absent on raw connections"},
			{Name: connectTLSPerSecond, Kind: metrics.Float, Doc: "TLS handshakes completed per second of the phase; absent without TLS"},
			{Name: connectTLSResumed, Kind: metrics.Count, Doc: "TLS handshakes that resumed a session; absent without TLS"},
			{Name: connectClientCPUPerHS, Kind: metrics.Float, Doc: "client CPU milliseconds per connection opened (TCP connect, TLS handshake, upgrade)"},
			{Name: connectServerCPUPerHS, Kind: metrics.Float, Doc: "server CPU milliseconds per connection opened"},
			{Name: connectClientCPUPerHSNet, Kind: metrics.Float, Doc: "client_cpu_per_handshake with loopback delivery moved to its receiver (softirq time of each side's CPUs charged to the other); only with disjoint pinned CPU sets on this host"},
			{Name: connectServerCPUPerHSNet, Kind: metrics.Float, Doc: "server_cpu_per_handshake with loopback delivery moved to its receiver, as client_cpu_per_handshake_net"},
		}),
	})
}

// Defaults implements ContextDefaults: concurrency follows connections.
func (p *Connect) Defaults(Context) {
	if p.Concurrency == 0 {
		p.Concurrency = OpenConcurrency(p.Connections)
	}
}

// Opens implements Opener.
func (p *Connect) Opens() (conns, concurrency int) { return p.Connections, p.Concurrency }

// Validate implements Phase.
func (p *Connect) Validate(Context) []FieldError {
	var errs []FieldError
	if p.Connections > 0 && p.Concurrency > p.Connections {
		errs = append(errs, FieldError{Field: "concurrency", Msg: fmt.Sprintf("must be <= connections (%d), got %d", p.Connections, p.Concurrency)})
	}
	return errs
}

// Run implements Phase.
func (p *Connect) Run(ctx context.Context, env *Env) (Outcome, error) {
	r, err := Drive[client.ConnectResult](ctx, env, &p.ConnectParams)
	if r == nil {
		return Outcome{}, err // nothing was measured
	}
	v := metrics.Values{
		metrics.Used:        r.Used,
		metrics.Total:       r.Total,
		metrics.Success:     r.Success,
		metrics.Failed:      r.Failed,
		connectRetried:      r.Retried,
		metrics.Concurrency: int64(p.Concurrency),
		metrics.Conns:       int64(env.Driver.Conns()),
		metrics.TPS:         PerSecond(r.Success, r.Used),
	}
	LatencyValues(v, r.Latency)
	splitValues(v, connectTCPP50, connectTCPP99, r.TCP)
	splitValues(v, connectUpgradeP50, connectUpgradeP99, r.Upgrade)
	if HistCount(r.Greeting) > 0 {
		splitValues(v, connectGreetingP50, connectGreetingP99, r.Greeting)
	}
	if n := HistCount(r.TLS); n > 0 {
		splitValues(v, connectTLSP50, connectTLSP99, r.TLS)
		v[connectTLSPerSecond] = PerSecond(n, r.Used)
		v[connectTLSResumed] = r.TLSResumed
	}
	out := Outcome{Metrics: v, Info: negotiatedInfo(r), Histogram: HistString(r.Latency)}
	out.Reasons = map[string]string{metrics.Failed: ErrorSummary(r.Errors)}
	if r.Retried > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d connection attempts were retried", r.Retried))
	}
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}

// splitValues records a part of the handshake: its median as p50 and its
// 99th percentile as p99.
func splitValues(v metrics.Values, p50, p99 string, h client.Hist) {
	if HistCount(h) == 0 {
		v[p50], v[p99] = time.Duration(0), time.Duration(0)
		return
	}
	v[p50] = time.Duration(h.ValueAtQuantile(50))
	v[p99] = time.Duration(h.ValueAtQuantile(99))
}

// negotiatedInfo is what the servers agreed to, for the result's info.
func negotiatedInfo(r *client.ConnectResult) map[string]string {
	info := map[string]string{}
	for k, s := range map[string]string{"subprotocol": r.Subprotocol, "extensions": r.Extensions, "tls_version": r.TLSVersion, "tls_group": r.TLSGroup} {
		if s != "" {
			info[k] = s
		}
	}
	if len(info) == 0 {
		return nil
	}
	return info
}

// Speaks implements ProtocolSpeaker: opening connections goes through
// every protocol's greeting.
func (p *Connect) Speaks(string) string { return "" }
