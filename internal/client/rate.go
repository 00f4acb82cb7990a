package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

func init() {
	Register(Kind{Name: "rate", NewParams: func() Params { return &RateParams{} }, NewResult: func() Result { return &RateResult{} }})
}

// RateParams configure an open-loop rate phase (Client.Rate).
type RateParams struct {
	Duration time.Duration `json:"duration"` // sending time, > 0
	Rate     float64       `json:"rate"`     // messages per connection per second, > 0 (fractions allowed)
	Payload  int           `json:"payload"`  // bytes per message, >= MarkerLen
	// Connections is how many open connections send; 0 = all open ones.
	Connections int `json:"connections"`
	// Ramp is the time to reach Rate linearly from 0; 0 = none; <= Duration.
	Ramp time.Duration `json:"ramp"`
	// Batch is the most bytes one write carries when several messages are
	// due on a connection at once; 0 = DefaultRateBatch. A message larger
	// than Batch is one write of its own.
	Batch int `json:"batch"`
	// MaxInflight bounds the messages sent and not yet echoed on one
	// connection; 0 = DefaultMaxInflight(Rate). A message due while its
	// connection is at the bound (or its socket is not writable) waits and
	// leaves late, with its original scheduled time.
	MaxInflight int `json:"max_inflight"`
	// MaxInflightBytes bounds the payload bytes sent and not yet echoed
	// over every connection of the phase (split over loops and shards in
	// proportion to their connections), so an overloaded server cannot
	// make the client fill the kernel's socket memory; messages due beyond
	// it wait like those beyond MaxInflight. 0 = DefaultMaxInflightBytes.
	MaxInflightBytes int64 `json:"max_inflight_bytes"`
	// Drain is how long to wait after Duration for echoes still due; 0 =
	// DefaultRateDrain.
	Drain time.Duration `json:"drain"`
	// LateAfter: a message written more than LateAfter after its scheduled
	// time counts as late; 0 = DefaultLateAfter.
	LateAfter time.Duration `json:"late_after"`
	// Verify compares every echoed payload byte after the marker (the
	// marker itself is always checked).
	Verify bool `json:"verify"`
	// Slack is the timer slack: after a wake-up the loop sleeps at least
	// Slack before the next, and writes every message due by then
	// together, so a message leaves at most Slack late (RateResult.SendLate
	// says how late they left). 0 = DefaultSlack; NoSlack = a wake-up per
	// due message.
	Slack time.Duration `json:"slack"`
	// Reads is when the loop reads the echoes: ReadsBatched (the default,
	// "" too) or ReadsPrompt; see ReadsBatched.
	Reads string `json:"reads,omitempty"`
	// PhaseFirst and PhaseTotal place this client's connections in the
	// timetable: its connection j gets phase (PhaseFirst+j)/PhaseTotal of
	// a period. Zero values = j/Connections. Split sets them so that the
	// connections of every loop and shard spread over one period together.
	PhaseFirst int `json:"phase_first"`
	PhaseTotal int `json:"phase_total"`
	// PayloadKind and PayloadFile are what the messages hold after their
	// marker, as in EchoParams.
	PayloadKind string `json:"payload_kind,omitempty"`
	PayloadFile []byte `json:"payload_file,omitempty"`
}

// RateResult is what a rate phase measured. Every message carries a
// MarkerLen-byte marker (its number on its connection and its scheduled
// send time); latency runs from the scheduled time to the complete echo, so
// a message that left late carries its lateness into its latency.
type RateResult struct {
	Conns     int   `json:"conns"`      // connections that took part
	Scheduled int64 `json:"scheduled"`  // messages the timetable had due before Duration on them
	Sent      int64 `json:"sent"`       // messages written
	Recv      int64 `json:"recv"`       // echoes received intact (marker, length, opcode, payload)
	Failed    int64 `json:"failed"`     // echoes received but wrong, or messages nobody sent
	Late      int64 `json:"late"`       // messages written more than LateAfter after their scheduled time
	Unsent    int64 `json:"unsent"`     // Scheduled - Sent: due, but never written before Duration ended
	BytesSent int64 `json:"bytes_sent"` // payload bytes written
	BytesRecv int64 `json:"bytes_recv"` // payload bytes received
	// BytesPayload is BytesSent + BytesRecv; BytesWire is the same data
	// as the frames carried it (compressed under permessage-deflate: each
	// message sent is compressed on its own, as they differ in their
	// marker). Frame headers and TLS not counted.
	BytesPayload int64         `json:"bytes_payload"`
	BytesWire    int64         `json:"bytes_wire"`
	Used         time.Duration `json:"used"`
	Drain        time.Duration `json:"drain"`   // time after Duration spent waiting for echoes
	Latency      Hist          `json:"latency"` // ns, intact echoes, from the scheduled send time; exact over loops and shards
	// Slack is the timer slack the phase ran with (RateParams.Slack).
	Slack time.Duration `json:"slack"`
	// SendLate is how late each message left: its write minus its
	// scheduled time, ns; exact over loops and shards.
	SendLate Hist `json:"send_late"`
	// Wakeups counts the loop wake-ups (epoll_pwait2 returns) during the
	// phase, over every loop: the client's cost driver at sparse rates.
	Wakeups int64 `json:"wakeups"`
	// Reads is how the echoes were read: ReadsBatched, or ReadsPrompt
	// (asked for, or where the kernel refused receive timestamps).
	Reads string `json:"reads"`
	// Seconds is the timeline: entry i covers [i s, i+1 s) from the start
	// of the phase (drain included). Sends count in the second they were
	// written, echoes and their latencies in the second they completed. It
	// grows as the phase runs, one RateSecond (48 bytes) per second.
	Seconds []RateSecond `json:"seconds"`
	Errors  Reasons      `json:"errors"`  // failure reason -> count (failed echoes, lost connections)
	Stopped StopReason   `json:"stopped"` // StopCanceled, StopClosed, StopNoConnections; "" = it ran to its end
}

// Lost returns the messages sent whose echo never came: Sent - Recv - Failed.
func (r RateResult) Lost() int64 { return r.Sent - r.Recv - r.Failed }

// Kind implements Params.
func (p *RateParams) Kind() string { return "rate" }

// Merge implements Result.
func (r *RateResult) Merge(other Result) {
	o := other.(*RateResult)
	r.Conns += o.Conns
	r.Scheduled += o.Scheduled
	r.Sent += o.Sent
	r.Recv += o.Recv
	r.Failed += o.Failed
	r.Late += o.Late
	r.Unsent += o.Unsent
	r.BytesSent += o.BytesSent
	r.BytesRecv += o.BytesRecv
	r.BytesPayload += o.BytesPayload
	r.BytesWire += o.BytesWire
	r.Used = max(r.Used, o.Used)
	r.Drain = max(r.Drain, o.Drain)
	r.Latency.add(o.Latency)
	r.Slack = max(r.Slack, o.Slack)
	r.SendLate.add(o.SendLate)
	r.Wakeups += o.Wakeups
	r.Reads = mergeReads(r.Reads, o.Reads)
	for len(r.Seconds) < len(o.Seconds) {
		r.Seconds = append(r.Seconds, RateSecond{})
	}
	for i, s := range o.Seconds {
		r.Seconds[i].merge(s)
	}
	r.Errors.merge(o.Errors)
	r.Stopped = MergeStop(r.Stopped, o.Stopped)
}

// Stop implements Result.
func (r *RateResult) Stop() StopReason { return r.Stopped }

// withDefaults returns p with its zero defaults filled in.
func (p RateParams) withDefaults() RateParams {
	if p.Batch == 0 {
		p.Batch = DefaultRateBatch
	}
	if p.MaxInflight == 0 {
		p.MaxInflight = DefaultMaxInflight(p.Rate)
	}
	if p.MaxInflightBytes == 0 {
		p.MaxInflightBytes = DefaultMaxInflightBytes
	}
	if p.Drain == 0 {
		p.Drain = DefaultRateDrain
	}
	if p.LateAfter == 0 {
		p.LateAfter = DefaultLateAfter
	}
	if p.Slack == 0 {
		p.Slack = DefaultSlack
	}
	if p.Reads == "" {
		p.Reads = ReadsBatched
	}
	return p
}

// Split implements Params: the sending connections in proportion to the
// parts' open connections (never more than a part has), each part given
// its place in one shared timetable (PhaseFirst/PhaseTotal) and its share
// of MaxInflightBytes.
func (p *RateParams) Split(weights []int) []Params {
	d := p.withDefaults()
	n := p.Connections
	if n == 0 {
		for _, w := range weights {
			n += w
		}
	}
	total := p.PhaseTotal
	if total == 0 {
		total = p.PhaseFirst + n
	}
	out := make([]Params, len(weights))
	first := p.PhaseFirst
	for i, slots := range distribute(n, weights) {
		if slots == 0 {
			continue
		}
		q := d
		q.Connections = slots
		q.PhaseFirst, q.PhaseTotal = first, total
		q.MaxInflightBytes = max(int64(p.Payload), d.MaxInflightBytes*int64(slots)/int64(n))
		first += slots
		out[i] = &q
	}
	return out
}

// Rate phase defaults.
const (
	// DefaultRateDrain is RateParams.Drain when 0.
	DefaultRateDrain = 2 * time.Second
	// MinDefaultInflight and MaxDefaultInflight bound DefaultMaxInflight.
	MinDefaultInflight = 16
	MaxDefaultInflight = 1000
	// DefaultMaxInflightBytes is RateParams.MaxInflightBytes when 0.
	DefaultMaxInflightBytes = 64 << 20
)

// DefaultMaxInflight is RateParams.MaxInflight when 0: one second of
// messages at the full rate, at least MinDefaultInflight and at most
// MaxDefaultInflight.
func DefaultMaxInflight(rate float64) int {
	return int(min(max(math.Ceil(rate), MinDefaultInflight), MaxDefaultInflight))
}

// Validate implements Params.
func (p *RateParams) Validate() error {
	var errs []error
	if p.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration must be > 0, got %v", p.Duration))
	}
	if !(p.Rate > 0) || math.IsInf(p.Rate, 0) {
		errs = append(errs, fmt.Errorf("rate must be > 0 messages per second, got %v", p.Rate))
	}
	if p.Payload < MarkerLen || p.Payload > maxPayload {
		errs = append(errs, fmt.Errorf("payload must be in [%d, %d] (the first %d bytes carry the latency marker), got %d", MarkerLen, maxPayload, MarkerLen, p.Payload))
	}
	if p.Connections < 0 {
		errs = append(errs, fmt.Errorf("connections must be >= 0, got %d", p.Connections))
	}
	if p.Ramp < 0 || p.Ramp > p.Duration {
		errs = append(errs, fmt.Errorf("ramp must be in [0, duration %v], got %v", p.Duration, p.Ramp))
	}
	if p.Batch < 0 {
		errs = append(errs, fmt.Errorf("batch must be >= 0, got %d", p.Batch))
	}
	if p.MaxInflight < 0 {
		errs = append(errs, fmt.Errorf("max inflight must be >= 0, got %d", p.MaxInflight))
	}
	if p.MaxInflightBytes < 0 {
		errs = append(errs, fmt.Errorf("max inflight bytes must be >= 0, got %d", p.MaxInflightBytes))
	}
	if p.Drain < 0 {
		errs = append(errs, fmt.Errorf("drain must be >= 0, got %v", p.Drain))
	}
	if err := checkPayloadKind(p.PayloadKind, p.PayloadFile); err != nil {
		errs = append(errs, err)
	}
	if p.Slack < 0 && p.Slack != NoSlack {
		errs = append(errs, fmt.Errorf("slack must be >= 0 (or NoSlack), got %v", p.Slack))
	}
	if err := CheckReads(p.Reads); err != nil {
		errs = append(errs, fmt.Errorf("reads %w", err))
	}
	if p.LateAfter < 0 {
		errs = append(errs, fmt.Errorf("late after must be >= 0, got %v", p.LateAfter))
	}
	if p.PhaseFirst < 0 || p.PhaseTotal < 0 || (p.PhaseTotal > 0 && p.PhaseFirst+p.Connections > p.PhaseTotal) {
		errs = append(errs, fmt.Errorf("phase first %d + connections %d must be <= phase total %d", p.PhaseFirst, p.Connections, p.PhaseTotal))
	}
	if len(errs) > 0 {
		return fmt.Errorf("client: rate: %w", errors.Join(errs...))
	}
	return nil
}

// Rate runs an open-loop phase over p.Connections open connections: each
// sends p.Rate messages per second for p.Duration on the timetable of a
// Pacer (connection i's k-th message is due at offset_i + k/Rate, the
// offsets spread evenly over one period), never waiting for replies, and
// then waits up to p.Drain for the echoes still due. Every message carries
// a marker with its number and scheduled time; its latency runs from that
// scheduled time, so a client or server that falls behind shows in the
// latency instead of being hidden (no coordinated omission).
//
// Progress counts messages sent. A phase cut short (ctx canceled, Close)
// returns what was measured with Stopped saying why; cancellation also
// returns ctx.Err(), Close ErrClosed.
func (c *Client) Rate(ctx context.Context, p RateParams, pr *Progress) (RateResult, error) {
	return runAs[RateResult](c, ctx, &p, pr)
}

// start implements Params.
func (p *RateParams) start(ph *phaseEnv) (*phasePlan, error) {
	total := 0
	for _, o := range ph.open {
		total += o
	}
	n := p.Connections
	if n == 0 {
		n = total
	}
	if n > total {
		return nil, fmt.Errorf("client: rate: connections %d exceeds the %d open connections: open more in a connect phase or lower connections", n, total)
	}
	d := p.withDefaults()
	phaseTotal := p.PhaseTotal
	if phaseTotal == 0 {
		phaseTotal = p.PhaseFirst + n
	}
	pacer := Pacer{Rate: p.Rate, Ramp: p.Ramp, Duration: p.Duration}
	payload, err := makeKindPayload(p.PayloadKind, p.Payload, false, p.PayloadFile)
	if err != nil {
		return nil, err
	}
	hdr := appendClientHeader(nil, opBinary, len(payload), 0)
	if ph.pr != nil {
		var want int64
		for j := range n {
			want += pacer.Total(float64(p.PhaseFirst+j) / float64(phaseTotal))
		}
		ph.pr.Total.Store(want)
		ph.pr.Done.Store(0)
	}
	plan := &phasePlan{starts: make([]func(*loop), len(ph.open))}
	for i, part := range p.Split(ph.open) {
		if part == nil {
			continue
		}
		q := part.(*RateParams)
		job := &rateJob{
			phase:       ph.id,
			slots:       q.Connections,
			first:       q.PhaseFirst,
			total:       q.PhaseTotal,
			pacer:       pacer,
			start:       ph.start,
			drain:       int64(d.Drain),
			hdr:         hdr,
			payload:     payload,
			verify:      p.Verify,
			batch:       d.Batch,
			maxInflight: int64(d.MaxInflight),
			loopMax:     max(1, q.MaxInflightBytes/int64(p.Payload)),
			lateAfter:   int64(d.LateAfter),
			slack:       d.Slack,
			reads:       d.Reads,
			pr:          ph.pr,
		}
		plan.starts[i] = func(l *loop) { l.rateStart(job) }
	}
	plan.done = func(res Result, why StopReason, _ time.Duration) StopReason {
		r := res.(*RateResult)
		if r.Latency.Histogram == nil {
			r.Latency = NewHist()
		}
		if r.SendLate.Histogram == nil {
			r.SendLate = NewHist()
		}
		if why == "" {
			why = r.Stopped
		}
		r.Stopped = why
		return why
	}
	return plan, nil
}
