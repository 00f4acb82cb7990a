package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/units"
)

// rateKind is the rate phase's key. Its metrics are the open loop's
// (openloop.go), shared with a search's steps: internal/metrics names
// them.
const rateKind = "rate"

// Rate is an open loop, tcpkali-style: every connection sends Rate messages
// per second for Duration on a fixed timetable (connection i's k-th message
// at offset_i + k/rate, the offsets spread evenly over one period), never
// waiting for replies. Each message carries a 16-byte marker (its number
// and scheduled send time) and its latency runs from the scheduled time:
// when the server or the client falls behind, the latency shows it.
//
// The fields' docs are their doc tags; a comment adds only what the tag
// does not say.
type Rate struct {
	Duration    units.Duration `yaml:"duration" required:"true" min:"1ns" doc:"sending time"`
	Rate        units.Rate     `yaml:"rate" required:"true" doc:"messages per connection per second, > 0; fractions allowed"`
	Payload     *units.Size    `yaml:"payload" default:"1KiB" min:"16" max:"64MiB" hint:"the latency marker: 8-byte sequence number and 8-byte scheduled send time" doc:"bytes per message, the 16-byte latency marker included"`
	Connections int            `yaml:"connections" min:"0" doc:"connections that send; default: every open one"`
	Ramp        units.Duration `yaml:"ramp" default:"0s" min:"0s" doc:"time to reach the full rate linearly, at most duration; 0 = none"`
	Batch       units.Size     `yaml:"batch" default:"16KiB" min:"0" doc:"most bytes per write when several messages are due on a connection"`
	// MaxInflight's default is client.DefaultMaxInflight(rate).
	MaxInflight int `yaml:"max_inflight" min:"0" doc:"messages sent and not echoed per connection; default rate × 1 s, in [16, 1000]"`
	// MaxInflightBytes keeps an overloaded server from making the client
	// fill the kernel's socket memory.
	MaxInflightBytes units.Size     `yaml:"max_inflight_bytes" default:"64MiB" min:"0" doc:"payload bytes sent and not echoed over every connection"`
	Drain            units.Duration `yaml:"drain" default:"2s" min:"0s" doc:"wait for the echoes still due after duration"`
	// Slack: each message's latency still counts from its own schedule;
	// send_late_* say how late messages left.
	Slack       *units.Duration `yaml:"slack" default:"200us" min:"0s" doc:"timer slack: sends due within it share one wake-up (at most this late); 0 = a wake-up per message"`
	Reads       string          `yaml:"reads" default:"batched" doc:"when the client reads what arrives: batched (it sleeps through arrivals until its next send window, latency ends at the kernel's receive timestamp) or prompt (it wakes for each arrival)"`
	LateAfter   units.Duration  `yaml:"late_after" default:"1ms" min:"0s" doc:"a message written later than this after its schedule is late"`
	Verify      *bool           `yaml:"verify" default:"true" doc:"compare every echoed payload byte (the marker is always checked)"`
	PayloadKind string          `yaml:"payload_kind" default:"random" doc:"what messages hold after the marker: random (incompressible bytes), text (chat-like JSON lines), file"`
	// File is read at Run (and checked at load).
	File string `yaml:"file" doc:"with payload_kind: file, the file whose bytes are cycled to the payload size"`
}

func init() {
	Register(Kind{
		Name:       rateKind,
		Paced:      true,
		Throughput: Throughput{Metric: metrics.RecvRate, Unit: "echoes received/s", Messages: true, Count: metrics.Recv, Bench: "recv/s"},
		Soak:       &Soak{},
		Summary: func(v metrics.Values) string {
			return fmt.Sprintf("%.0f/s sent, %d lost, %d late", v.Float(metrics.AchievedRate), v.Int(metrics.Lost), v.Int(metrics.Late))
		},
		Doc: "open loop: every connection sends rate msgs/s for duration on a timetable; latency from the scheduled send",
		New: func() Phase { return &Rate{} },
		Faults: []Fault{
			{Metric: metrics.Failed, Of: metrics.Sent, What: "echoes were corrupt"},
			{Metric: metrics.Lost, Of: metrics.Sent, What: "echoes never came by the end of the drain (lost)"},
			{Metric: metrics.Dropped, Of: metrics.Conns, What: "connections were lost while sending"},
		},
		// The published rate table's columns (go-websocket-benchmark's
		// BenchRate), then what an open loop must also show: the rate
		// achieved, the messages that left late or never, the echoes lost,
		// and latency.
		Title: "[BenchRate] Report",
		Columns: []Column{
			{Metric: ColFramework},
			{Header: "Duration", Metric: metrics.DurationName},
			{Header: "EchoEER", Metric: metrics.EchoEER, Delta: true, Format: FormatFloat2},
			{Header: "Packet Sent", Metric: metrics.Sent, Delta: true, Format: FormatInt},
			{Header: "Bytes Sent", Metric: metrics.BytesSent, Delta: true},
			{Header: "Packet Recv", Metric: metrics.Recv, Delta: true, Format: FormatInt},
			{Header: "Bytes Recv", Metric: metrics.BytesRecv, Delta: true},
			{Header: "Conns", Metric: metrics.Conns, Format: FormatInt},
			{Header: "SendRate", Metric: metrics.SendRate, Format: FormatRate},
			{Header: "Payload", Metric: metrics.Payload, Format: FormatInt},
			{Metric: ColServer},
			{Header: "Achieved", Metric: metrics.AchievedRate, Delta: true, Format: FormatRate},
			{Header: "Late", Metric: metrics.Late, Delta: true, Format: FormatInt},
			{Header: "Lost", Metric: metrics.Lost, Delta: true, Format: FormatInt},
			{Header: "TP50", Metric: metrics.P50, Delta: true},
			{Header: "TP99", Metric: metrics.P99, Delta: true},
			{Metric: ColClientCPU},
			{Metric: ColVerdict},
		},
		Efficiency: openLoopEfficiency,
		Metrics:    openLoopMetrics,
	})
}

// Defaults implements ContextDefaults: connections is every open one,
// max_inflight follows the rate.
func (p *Rate) Defaults(c Context) {
	if p.Connections == 0 {
		p.Connections = c.Conns
	}
	if p.MaxInflight == 0 && p.Rate > 0 {
		p.MaxInflight = client.DefaultMaxInflight(float64(p.Rate))
	}
}

// Message implements Messenger: rate messages are binary.
func (p *Rate) Message() (int, bool) { return p.Bytes(), false }

// Bytes returns the payload size in bytes (its tag default before Defaults
// ran).
func (p *Rate) Bytes() int { return sizeOr(p, "payload", p.Payload) }

// Validate implements Phase.
func (p *Rate) Validate(c Context) []FieldError {
	errs := validatePayloadKind(p.PayloadKind, p.File, p.Bytes())
	if !(p.Rate > 0) {
		errs = append(errs, FieldError{Field: "rate", Msg: fmt.Sprintf("must be > 0 messages per connection per second, got %s", p.Rate)})
	}
	errs = append(errs, needsOpen(c, "connections", p.Connections)...)
	if p.Ramp > p.Duration {
		errs = append(errs, FieldError{Field: "ramp", Msg: fmt.Sprintf("must be in [0, duration %s], got %s", p.Duration, p.Ramp)})
	}
	errs = append(errs, checkReads(p.Reads)...)
	return errs
}

// Run implements Phase.
func (p *Rate) Run(ctx context.Context, env *Env) (Outcome, error) {
	conns := min(p.Connections, env.Driver.Conns())
	if p.Connections == 0 {
		conns = env.Driver.Conns()
	}
	if conns <= 0 {
		return Outcome{}, fmt.Errorf("no open connections")
	}
	file, err := payloadFile(p.PayloadKind, p.File, p.Bytes())
	if err != nil {
		return Outcome{}, err
	}
	q := &client.RateParams{
		PayloadKind:      p.PayloadKind,
		PayloadFile:      file,
		Duration:         p.Duration.D(),
		Rate:             float64(p.Rate),
		Payload:          p.Bytes(),
		Connections:      conns,
		Ramp:             p.Ramp.D(),
		Batch:            int(p.Batch),
		MaxInflight:      p.MaxInflight,
		MaxInflightBytes: int64(p.MaxInflightBytes),
		Drain:            p.Drain.D(),
		LateAfter:        p.LateAfter.D(),
		Verify:           p.Verify == nil || *p.Verify,
		Slack:            clientSlack(p.Slack),
		Reads:            p.Reads,
	}
	start := time.Now()
	r, err := run[client.RateResult](ctx, env, q)
	if r == nil {
		return Outcome{}, err // nothing was measured
	}
	out := Outcome{Metrics: RateMetrics(*r, float64(p.Rate), int64(p.Bytes())), Timeline: Timeline(r.Seconds), Histogram: HistString(r.Latency)}
	out.Behind, out.Metrics[metrics.Behind] = openLoopBehind(start, *r, q)
	if conns < p.Connections {
		out.Warnings = append(out.Warnings, fmt.Sprintf("connections lowered from %d to %d: only %d are open", p.Connections, conns, conns))
	}
	reads := readsWarning(p.Reads, r.Reads)
	out.WindowWarnings = func(m metrics.Values) []string {
		w := RateWarnings(*r, m)
		if reads != "" {
			w = append(w, reads)
		}
		return w
	}
	out.Reasons = map[string]string{metrics.Failed: errorSummary(corrupt(r.Errors, true)), metrics.Dropped: errorSummary(corrupt(r.Errors, false))}
	if r.Stopped != "" {
		out.Failed, out.Error = true, "stopped early: "+string(r.Stopped)
	}
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}
