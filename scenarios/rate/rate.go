// Package rate is the rate phase kind, whole: an open loop, tcpkali-style.
// Its keys and its result (params.go), what an event loop runs for it
// (run.go), the open loop's metrics and warnings (openloop.go) and when
// its sending was behind (behind.go), which a capacity search's steps
// (scenarios/search) use too, and its plan side (this file). It registers
// itself with the client and with the scenarios in init; scenarios/all
// imports it.
package rate

import (
	"context"
	"fmt"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/scenarios"
)

// Name is the rate phase's key. Its metrics are the open loop's
// (openloop.go), shared with a search's steps: internal/metrics names
// them.
const Name = "rate"

// Phase is an open loop, tcpkali-style: every connection sends Rate messages
// per second for Duration on a fixed timetable (connection i's k-th message
// at offset_i + k/rate, the offsets spread evenly over one period), never
// waiting for replies. Each message carries a 16-byte marker (its number
// and scheduled send time) and its latency runs from the scheduled time:
// when the server or the client falls behind, the latency shows it.
//
// The fields' docs are their doc tags; a comment adds only what the tag
// does not say.
type Phase struct {
	Params `yaml:",inline"`
}

func init() {
	client.Register(client.KindOf[Params, Result](Name))
	scenarios.Register(scenarios.Kind{
		Name:       Name,
		Paced:      true,
		Throughput: scenarios.Throughput{Metric: metrics.RecvRate, Unit: "echoes received/s", Messages: true, Count: metrics.Recv, Bench: "recv/s"},
		Soak:       &scenarios.Soak{},
		Summary: func(v metrics.Values) string {
			return fmt.Sprintf("%.0f/s sent, %d lost, %d late", v.Float(metrics.AchievedRate), v.Int(metrics.Lost), v.Int(metrics.Late))
		},
		Doc: "open loop: every connection sends rate msgs/s for duration on a timetable; latency from the scheduled send",
		New: func() scenarios.Phase { return &Phase{} },
		Faults: []scenarios.Fault{
			{Metric: metrics.Failed, Of: metrics.Sent, What: "echoes were corrupt"},
			{Metric: metrics.Lost, Of: metrics.Sent, What: "echoes never came by the end of the drain (lost)"},
			{Metric: metrics.Dropped, Of: metrics.Conns, What: "connections were lost while sending"},
		},
		// The published rate table's columns (go-websocket-benchmark's
		// BenchRate), then what an open loop must also show: the rate
		// achieved, the messages that left late or never, the echoes lost,
		// and latency.
		Title: "[BenchRate] Report",
		Columns: []scenarios.Column{
			{Metric: scenarios.ColFramework},
			{Header: "Duration", Metric: metrics.DurationName},
			{Header: "EchoEER", Metric: metrics.EchoEER, Delta: true, Format: scenarios.FormatFloat2},
			{Header: "Packet Sent", Metric: metrics.Sent, Delta: true, Format: scenarios.FormatInt},
			{Header: "Bytes Sent", Metric: metrics.BytesSent, Delta: true},
			{Header: "Packet Recv", Metric: metrics.Recv, Delta: true, Format: scenarios.FormatInt},
			{Header: "Bytes Recv", Metric: metrics.BytesRecv, Delta: true},
			{Header: "Conns", Metric: metrics.Conns, Format: scenarios.FormatInt},
			{Header: "SendRate", Metric: metrics.SendRate, Format: scenarios.FormatRate},
			{Header: "Payload", Metric: metrics.Payload, Format: scenarios.FormatInt},
			{Metric: scenarios.ColServer},
			{Header: "Achieved", Metric: metrics.AchievedRate, Delta: true, Format: scenarios.FormatRate},
			{Header: "Late", Metric: metrics.Late, Delta: true, Format: scenarios.FormatInt},
			{Header: "Lost", Metric: metrics.Lost, Delta: true, Format: scenarios.FormatInt},
			{Header: "TP50", Metric: metrics.P50, Delta: true},
			{Header: "TP99", Metric: metrics.P99, Delta: true},
			{Metric: scenarios.ColClientCPU},
			{Metric: scenarios.ColVerdict},
		},
		Efficiency: Efficiency,
		Metrics:    Defs,
	})
}

// Defaults implements ContextDefaults: connections is every open one,
// max_inflight follows the rate.
func (p *Phase) Defaults(c scenarios.Context) {
	if p.Connections == 0 {
		p.Connections = c.Conns
	}
	if p.MaxInflight == 0 && p.Rate > 0 {
		p.MaxInflight = DefaultMaxInflight(float64(p.Rate))
	}
}

// Message implements Messenger: rate messages are binary.
func (p *Phase) Message() (int, bool) { return p.Bytes(), false }

// Bytes returns the payload size in bytes (its tag default before Defaults
// ran).
func (p *Phase) Bytes() int { return scenarios.SizeOr(p, "payload", p.Payload) }

// Validate implements Phase.
func (p *Phase) Validate(c scenarios.Context) []scenarios.FieldError {
	errs := scenarios.ValidatePayloadKind(p.PayloadKind, p.File, p.Bytes())
	if !(p.Rate > 0) {
		errs = append(errs, scenarios.FieldError{Field: "rate", Msg: fmt.Sprintf("must be > 0 messages per connection per second, got %s", p.Rate)})
	}
	errs = append(errs, scenarios.NeedsOpen(c, "connections", p.Connections)...)
	if p.Ramp > p.Duration {
		errs = append(errs, scenarios.FieldError{Field: "ramp", Msg: fmt.Sprintf("must be in [0, duration %s], got %s", p.Duration, p.Ramp)})
	}
	errs = append(errs, scenarios.CheckReads(p.Reads)...)
	return errs
}

// Run implements Phase.
func (p *Phase) Run(ctx context.Context, env *scenarios.Env) (scenarios.Outcome, error) {
	conns := min(p.Connections, env.Driver.Conns())
	if p.Connections == 0 {
		conns = env.Driver.Conns()
	}
	if conns <= 0 {
		return scenarios.Outcome{}, fmt.Errorf("no open connections")
	}
	file, err := scenarios.PayloadFile(p.PayloadKind, p.File, p.Bytes())
	if err != nil {
		return scenarios.Outcome{}, err
	}
	q := p.Params
	q.Connections, q.PayloadFile = conns, file
	start := time.Now()
	r, err := scenarios.Drive[Result](ctx, env, &q)
	if r == nil {
		return scenarios.Outcome{}, err // nothing was measured
	}
	out := scenarios.Outcome{Metrics: Values(*r, float64(p.Rate), int64(p.Bytes())), Timeline: scenarios.Timeline(r.Seconds), Histogram: scenarios.HistString(r.Latency)}
	out.Behind, out.Metrics[metrics.Behind] = Behind(start, *r, &q)
	if conns < p.Connections {
		out.Warnings = append(out.Warnings, fmt.Sprintf("connections lowered from %d to %d: only %d are open", p.Connections, conns, conns))
	}
	reads := scenarios.ReadsWarning(p.Reads, r.Reads)
	out.WindowWarnings = func(m metrics.Values) []string {
		w := warnings(*r, m)
		if reads != "" {
			w = append(w, reads)
		}
		return w
	}
	out.Reasons = map[string]string{metrics.Failed: scenarios.ErrorSummary(corrupt(r.Errors, true)), metrics.Dropped: scenarios.ErrorSummary(corrupt(r.Errors, false))}
	if r.Stopped != "" {
		out.Failed, out.Error = true, "stopped early: "+string(r.Stopped)
	}
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}
