// Package hold is the hold phase kind, whole: its keys and its result
// (params.go), what an event loop runs for it (run.go) and its plan side
// (this file: its metrics, report table, soak, faults and Run). It
// registers itself with the client and with the scenarios in init;
// scenarios/all imports it.
package hold

import (
	"context"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/scenarios"
)

// Name is the hold phase's key; the others are the metrics only it
// reports.
const (
	Name                 = "hold"
	holdAlive            = "alive"
	holdPings            = "pings"
	holdPongs            = "pongs"
	holdPingsLost        = "pings_lost"
	holdClientRSS        = "client_rss"
	holdClientMemPerConn = "client_mem_per_conn"
)

// Phase keeps every connection open for Duration, counting the ones that
// drop, and reports what an idle connection costs in memory. With Ping,
// every connection also sends a ping every Ping (spread over the interval)
// and the pongs are counted.
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
		Doc:  "keep every connection open (idle, or pinging every `ping`); count drops and pongs; memory per connection",
		New:  func() scenarios.Phase { return &Phase{} },
		Soak: &scenarios.Soak{},
		Faults: []scenarios.Fault{
			{Metric: metrics.Dropped, Of: metrics.Conns, What: "connections dropped while held"},
			{Metric: holdPingsLost, Of: holdPings, What: "pings got no pong"},
		},
		Metrics: []metrics.Def{
			{Name: metrics.DurationName, Kind: metrics.Duration, Doc: "time held"},
			{Name: metrics.Conns, Kind: metrics.Count, Doc: "connections open at the start"},
			{Name: holdAlive, Kind: metrics.Count, Doc: "connections open at the end"},
			{Name: metrics.Dropped, Kind: metrics.Count, Doc: "connections lost while holding"},
			{Name: holdPings, Kind: metrics.Count, Doc: "pings sent (0 without ping)"},
			{Name: holdPongs, Kind: metrics.Count, Doc: "pongs received, up to 1 s after the hold"},
			{Name: holdPingsLost, Kind: metrics.Count, Doc: "pings that got no pong (pings − pongs, 0 when more pongs came)"},
			{Name: metrics.ServerRSS, Kind: metrics.Bytes, Doc: "server RSS at the start of the hold (the end of connect)"},
			{Name: metrics.MemPerConn, Kind: metrics.Bytes, Doc: "(server RSS at the start of the hold − server RSS before the first phase) / conns"},
			{Name: holdClientRSS, Kind: metrics.Bytes, Doc: "client RSS (every client process) at the start of the hold"},
			{Name: holdClientMemPerConn, Kind: metrics.Bytes, Doc: "(client RSS at the start of the hold − client RSS before the first phase) / conns"},
		},
	})
}

// Validate implements scenarios.Phase.
func (p *Phase) Validate(c scenarios.Context) []scenarios.FieldError {
	return scenarios.NeedsOpen(c, "", 0)
}

// Run implements scenarios.Phase.
func (p *Phase) Run(ctx context.Context, env *scenarios.Env) (scenarios.Outcome, error) {
	conns := int64(env.Driver.Conns())
	v := metrics.Values{metrics.Conns: conns}
	if env.Mem != nil {
		now := env.Mem()
		v[holdClientRSS], v[holdClientMemPerConn] = now.Client, perConn(now.Client-env.Base.Client, conns)
		if !now.NoServer {
			v[metrics.ServerRSS], v[metrics.MemPerConn] = now.Server, perConn(now.Server-env.Base.Server, conns)
		}
	}
	r, err := scenarios.Drive[Result](ctx, env, &p.Params)
	if r == nil {
		r = &Result{}
	}
	var out scenarios.Outcome
	if err != nil {
		out.Failed, out.Error = true, "stopped after "+r.Used.Truncate(time.Millisecond).String()+": "+err.Error()
	}
	alive := int64(env.Driver.Conns())
	v[metrics.DurationName], v[holdAlive], v[metrics.Dropped] = r.Used, alive, conns-alive
	v[holdPings], v[holdPongs], v[holdPingsLost] = r.Pings, r.Pongs, max(r.Pings-r.Pongs, 0)
	out.Metrics = v
	out.Reasons = map[string]string{metrics.Dropped: scenarios.ErrorSummary(r.Errors)}
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}

func perConn(bytes, conns int64) int64 {
	if conns <= 0 || bytes < 0 {
		return 0
	}
	return bytes / conns
}

// Speaks implements ProtocolSpeaker: held connections answer their
// protocol's keepalives.
func (p *Phase) Speaks(proto string) string {
	if proto != "" && p.Ping > 0 {
		return "ping: sends WebSocket pings; a protocol's own keepalives run without it"
	}
	return ""
}
