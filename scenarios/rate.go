package scenarios

import (
	"context"
	"fmt"
	"sort"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/units"
)

// Rate thresholds and the defaults not expressible as tags.
const (
	// DefaultRatePayload is Rate.Payload when not given (its tag default).
	DefaultRatePayload = 1024
	// RateShortfall: an achieved rate below this share of the timetable's
	// is worth a warning.
	RateShortfall = 0.98
	// RateLateShare: late messages above this share of the timetable are
	// worth a warning (a few late sends on a loaded host are not).
	RateLateShare = 0.01
)

// Rate is an open loop, tcpkali-style: every connection sends Rate messages
// per second for Duration on a fixed timetable (connection i's k-th message
// at offset_i + k/rate, the offsets spread evenly over one period), never
// waiting for replies. Each message carries a 16-byte marker (its number
// and scheduled send time) and its latency runs from the scheduled time:
// when the server or the client falls behind, the latency shows it.
type Rate struct {
	Duration    units.Duration `yaml:"duration" required:"true" min:"1ns" doc:"sending time"`                                                                                                                                     // sending time; required, > 0
	Rate        units.Rate     `yaml:"rate" required:"true" doc:"messages per connection per second, > 0; fractions allowed"`                                                                                                     // messages per connection per second; required, > 0, fractions allowed
	Payload     *units.Size    `yaml:"payload" default:"1KiB" min:"16" max:"64MiB" hint:"the latency marker: 8-byte sequence number and 8-byte scheduled send time" doc:"bytes per message, the 16-byte latency marker included"` // bytes per message; default 1024; >= 16 (the marker)
	Connections int            `yaml:"connections" min:"0" doc:"connections that send; default: every open one"`                                                                                                                  // connections that send; default: every open one
	Ramp        units.Duration `yaml:"ramp" default:"0s" min:"0s" doc:"time to reach the full rate linearly, at most duration; 0 = none"`                                                                                         // time to reach the full rate linearly; default 0 (none)
	Batch       units.Size     `yaml:"batch" default:"16KiB" min:"0" doc:"most bytes per write when several messages are due on a connection"`                                                                                    // most bytes per write when several messages are due on a connection; default 16KiB
	MaxInflight int            `yaml:"max_inflight" min:"0" doc:"messages sent and not echoed per connection; default rate × 1 s, in [16, 1000]"`                                                                                 // messages sent and not echoed per connection; default rate × 1 s, in [16, 1000]
	// MaxInflightBytes bounds the payload bytes sent and not echoed over
	// every connection, so an overloaded server cannot make the client fill
	// the kernel's socket memory; default 64MiB.
	MaxInflightBytes units.Size     `yaml:"max_inflight_bytes" default:"64MiB" min:"0" doc:"payload bytes sent and not echoed over every connection"`
	Drain            units.Duration `yaml:"drain" default:"2s" min:"0s" doc:"wait for the echoes still due after duration"` // wait for the echoes still due after duration; default 2s
	// Slack is the timer slack: the loop wakes at most once per slack and
	// writes every message due by then together (each one's latency still
	// counts from its own schedule; send_late_* say how late they left).
	Slack       *units.Duration `yaml:"slack" default:"200us" min:"0s" doc:"timer slack: sends due within it share one wake-up (at most this late); 0 = a wake-up per message"`
	Reads       string          `yaml:"reads" default:"batched" doc:"when the client reads what arrives: batched (it sleeps through arrivals until its next send window, latency ends at the kernel's receive timestamp) or prompt (it wakes for each arrival)"`
	LateAfter   units.Duration  `yaml:"late_after" default:"1ms" min:"0s" doc:"a message written later than this after its schedule is late"`                                      // a message written later than this after its schedule is late; default 1ms
	Verify      *bool           `yaml:"verify" default:"true" doc:"compare every echoed payload byte (the marker is always checked)"`                                              // compare every echoed payload byte (the marker is always checked); default true
	PayloadKind string          `yaml:"payload_kind" default:"random" doc:"what messages hold after the marker: random (incompressible bytes), text (chat-like JSON lines), file"` // what messages hold; default random
	File        string          `yaml:"file" doc:"with payload_kind: file, the file whose bytes are cycled to the payload size"`                                                   // with payload_kind file: its path (read at Run)
}

func init() {
	Register(Kind{
		Name:       "rate",
		Paced:      true,
		Throughput: Throughput{Metric: "recv_rate", Unit: "echoes received/s", Messages: true},
		Summary: func(v metrics.Values) string {
			return fmt.Sprintf("%.0f/s sent, %d lost, %d late", v.Float("achieved_rate"), v.Int("lost"), v.Int("late"))
		},
		Doc: "open loop: every connection sends rate msgs/s for duration on a timetable; latency from the scheduled send",
		New: func() Phase { return &Rate{} },
		// The published rate table's columns (go-websocket-benchmark's
		// BenchRate), then what an open loop must also show: the rate
		// achieved, the messages that left late or never, the echoes lost,
		// and latency.
		Title: "[BenchRate] Report",
		Columns: []Column{
			{Metric: ColFramework},
			{Header: "Duration", Metric: "duration"},
			{Header: "EchoEER", Metric: "echo_eer", Delta: true, Format: FormatFloat2},
			{Header: "Packet Sent", Metric: "sent", Delta: true, Format: FormatInt},
			{Header: "Bytes Sent", Metric: "bytes_sent", Delta: true},
			{Header: "Packet Recv", Metric: "recv", Delta: true, Format: FormatInt},
			{Header: "Bytes Recv", Metric: "bytes_recv", Delta: true},
			{Header: "Conns", Metric: "conns", Format: FormatInt},
			{Header: "SendRate", Metric: "send_rate", Format: FormatRate},
			{Header: "Payload", Metric: "payload", Format: FormatInt},
			{Metric: ColServer},
			{Header: "Achieved", Metric: "achieved_rate", Delta: true, Format: FormatRate},
			{Header: "Late", Metric: "late", Delta: true, Format: FormatInt},
			{Header: "Lost", Metric: "lost", Delta: true, Format: FormatInt},
			{Header: "TP50", Metric: "p50", Delta: true},
			{Header: "TP99", Metric: "p99", Delta: true},
			{Metric: ColClientCPU},
			{Metric: ColVerdict},
		},
		// The published rate table's EchoEER: echoes received per second
		// per percent of the server's core.
		Efficiency: &Efficiency{Rate: "recv_rate", EER: "echo_eer", Count: "recv"},
		Metrics: metrics.Join([]metrics.Def{
			{Name: "duration", Kind: metrics.Duration, Doc: "sending time (the drain excluded)"},
			{Name: "drain", Kind: metrics.Duration, Doc: "time after duration spent waiting for echoes"},
			{Name: "sent", Kind: metrics.Count, Doc: "messages written"},
			{Name: "recv", Kind: metrics.Count, Doc: "echoes received intact"},
			{Name: "bytes_sent", Kind: metrics.Bytes, Doc: "payload bytes written"},
			{Name: "bytes_recv", Kind: metrics.Bytes, Doc: "payload bytes received"},
			{Name: "scheduled", Kind: metrics.Count, Doc: "messages the timetable had due within duration"},
			{Name: "send_rate", Kind: metrics.Float, Doc: "target: messages per second over all connections at the full rate (conns × rate)"},
			{Name: "achieved_rate", Kind: metrics.Float, Doc: "sent / duration"},
			{Name: "recv_rate", Kind: metrics.Float, Doc: "recv / (duration + drain)"},
			{Name: "echo_eer", Kind: metrics.Float, Doc: "recv_rate / server cpu_avg: echoes per second per percent of a core"},
			{Name: "late", Kind: metrics.Count, Doc: "messages that did not leave on time: written more than late_after after their schedule, or never (unsent)"},
			{Name: "unsent", Kind: metrics.Count, Doc: "scheduled − sent: due within duration but never written (backpressure)"},
			{Name: "lost", Kind: metrics.Count, Doc: "sent − recv − failed: no echo by the end of the drain"},
			{Name: "failed", Kind: metrics.Count, Doc: "echoes received corrupt (marker, length, opcode or payload)"},
			{Name: "conns", Kind: metrics.Count, Doc: "connections that sent"},
			{Name: "rate", Kind: metrics.Float, Doc: "messages per connection per second asked for"},
			{Name: "payload", Kind: metrics.Bytes, Doc: "bytes per message"},
		}, pacedDefs("wakeups / (sent + recv): client wake-ups per message sent or echoed"), metrics.Latency, cpuPer1MDefs("messages sent and echoed", "echoes"), wireDefs),
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

// Bytes returns the payload size in bytes (the default before Defaults ran).
func (p *Rate) Bytes() int {
	if p.Payload == nil {
		return DefaultRatePayload
	}
	return int(*p.Payload)
}

// Validate implements Phase.
func (p *Rate) Validate(c Context) []FieldError {
	errs := validatePayloadKind(p.PayloadKind, p.File, p.Bytes())
	if !(p.Rate > 0) {
		errs = append(errs, FieldError{"rate", fmt.Sprintf("must be > 0 messages per connection per second, got %s", p.Rate)})
	}
	errs = append(errs, needsOpen(c, "connections", p.Connections)...)
	if p.Ramp > p.Duration {
		errs = append(errs, FieldError{"ramp", fmt.Sprintf("must be in [0, duration %s], got %s", p.Duration, p.Ramp)})
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
	r, err := run[client.RateResult](ctx, env, &client.RateParams{
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
	})
	if r == nil {
		return Outcome{}, err // nothing was measured
	}
	out := Outcome{Metrics: RateMetrics(*r, float64(p.Rate), int64(p.Bytes())), Timeline: Timeline(r.Seconds), Histogram: HistString(r.Latency)}
	if conns < p.Connections {
		out.Warnings = append(out.Warnings, fmt.Sprintf("connections lowered from %d to %d: only %d are open", p.Connections, conns, conns))
	}
	out.Warnings = append(out.Warnings, RateWarnings(*r)...)
	if w := readsWarning(p.Reads, r.Reads); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	if r.Failed > 0 {
		out.Failed = true
		out.Error = fmt.Sprintf("%d of %d echoes were corrupt: %s", r.Failed, r.Sent, errorSummary(r.Errors))
	}
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}

// RateMetrics turns a rate result into the phase's metrics (without
// echo_eer and the CPU figures, which the engine adds).
func RateMetrics(r client.RateResult, perConn float64, payload int64) metrics.Values {
	v := metrics.Values{
		"duration":      r.Used,
		"drain":         r.Drain,
		"sent":          r.Sent,
		"recv":          r.Recv,
		"bytes_sent":    r.BytesSent,
		"bytes_recv":    r.BytesRecv,
		"scheduled":     r.Scheduled,
		"send_rate":     float64(r.Conns) * perConn,
		"achieved_rate": rate(r.Sent, r.Used),
		"recv_rate":     rate(r.Recv, r.Used+r.Drain),
		"late":          r.Late + r.Unsent,
		"unsent":        r.Unsent,
		"lost":          r.Lost(),
		"failed":        r.Failed,
		"conns":         int64(r.Conns),
		"rate":          perConn,
		"payload":       payload,
	}
	pacedValues(v, r.Slack, r.SendLate, r.Wakeups, r.Sent+r.Recv)
	wireValues(v, r.BytesPayload, r.BytesWire)
	latencyValues(v, r.Latency)
	return v
}

// RateWarnings are what a reader of a rate result must not miss: a
// shortfall against the timetable, more than 1% late messages, lost
// echoes, lost connections, a phase cut short.
func RateWarnings(r client.RateResult) []string {
	var w []string
	if r.Scheduled > 0 && float64(r.Sent) < RateShortfall*float64(r.Scheduled) {
		w = append(w, fmt.Sprintf("rate shortfall: %d of %d scheduled messages sent (%.1f%%): the client or the server could not keep up", r.Sent, r.Scheduled, 100*float64(r.Sent)/float64(r.Scheduled)))
	}
	if late := r.Late + r.Unsent; r.Scheduled > 0 && float64(late) > RateLateShare*float64(r.Scheduled) {
		w = append(w, fmt.Sprintf("%d of %d messages late (%.1f%%; %d never sent): their latency counts from their schedule", late, r.Scheduled, 100*float64(late)/float64(r.Scheduled), r.Unsent))
	}
	if lost := r.Lost(); lost > 0 {
		w = append(w, fmt.Sprintf("%d of %d echoes never came (lost) by the end of the drain", lost, r.Sent))
	}
	if r.Stopped != "" {
		w = append(w, "stopped early: "+string(r.Stopped))
	}
	keys := make([]client.Reason, 0, len(r.Errors))
	for k := range r.Errors {
		if !k.Corrupt() {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		w = append(w, fmt.Sprintf("%d connections lost: %s", r.Errors[k], k))
	}
	return w
}

// Timeline turns a rate or echo result's seconds into the result's timeline.
func Timeline(secs []client.RateSecond) []result.Point {
	out := make([]result.Point, len(secs))
	for i, s := range secs {
		out[i] = result.Point{T: i, Sent: s.Sent, Recv: s.Recv, Late: s.Late, P50: s.P50, P99: s.P99, Max: s.Max}
	}
	return out
}
