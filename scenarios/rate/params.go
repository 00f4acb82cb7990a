package rate

import (
	"fmt"
	"math"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/units"
)

// Params configure an open-loop rate phase, run through client.Run (or
// client.RunAs[Result]). They are the phase's plan keys too (Phase holds
// them inline), declared once in their tags; the phase lowers Connections
// to those open and reads File into PayloadFile.
type Params struct {
	Duration units.Duration `yaml:"duration" json:"duration" required:"true" min:"1ns" doc:"sending time"`
	Rate     units.Rate     `yaml:"rate" json:"rate" required:"true" doc:"messages per connection per second, > 0; fractions allowed"`
	// Connections is how many open connections send; 0 = all open ones.
	Connections int            `yaml:"connections" json:"connections" min:"0" doc:"connections that send; default: every open one"`
	Ramp        units.Duration `yaml:"ramp" json:"ramp" default:"0s" min:"0s" doc:"time to reach the full rate linearly, at most duration; 0 = none"`
	Send        `yaml:",inline"`
	// PayloadFile is the content of the payload file (payload_kind:
	// file), cycled to Payload bytes after the marker.
	PayloadFile []byte `yaml:"-" json:"payload_file,omitempty"`
	// PhaseFirst and PhaseTotal place this client's connections in the
	// timetable: its connection j gets phase (PhaseFirst+j)/PhaseTotal of
	// a period. Zero values = j/Connections. Split sets them so that the
	// connections of every loop and shard spread over one period together.
	PhaseFirst int `yaml:"-" json:"phase_first"`
	PhaseTotal int `yaml:"-" json:"phase_total"`
}

// Send are the keys of how a rate phase sends and checks its messages,
// which a capacity search (scenarios/search) passes to every step:
// declared here once for both. The core's paced defaults
// (client.DefaultSlack, client.DefaultPacedBatch) are its tags' (a test
// ties them).
type Send struct {
	Payload *units.Size `yaml:"payload" json:"payload" default:"1KiB" min:"16" max:"64MiB" hint:"the latency marker: 8-byte sequence number and 8-byte scheduled send time" doc:"bytes per message, the 16-byte latency marker included"`
	// Batch: a message larger than it is one write of its own.
	Batch units.Size `yaml:"batch" json:"batch" default:"16KiB" min:"0" doc:"most bytes per write when several messages are due on a connection"`
	// MaxInflight: a message due while its connection is at the bound (or
	// its socket is not writable) waits and leaves late, with its original
	// scheduled time. 0 = DefaultMaxInflight(rate), applied by the client.
	MaxInflight int `yaml:"max_inflight" json:"max_inflight" min:"0" doc:"messages sent and not echoed per connection; default rate per connection × 1 s (each step's, in a search), in [16, 1000]"`
	// MaxInflightBytes keeps an overloaded server from making the client
	// fill the kernel's socket memory; split over loops and shards in
	// proportion to their connections.
	MaxInflightBytes units.Size     `yaml:"max_inflight_bytes" json:"max_inflight_bytes" default:"64MiB" min:"0" doc:"payload bytes sent and not echoed over every connection"`
	Drain            units.Duration `yaml:"drain" json:"drain" default:"2s" min:"0s" doc:"wait for the echoes still due when sending ends (after each step, in a search)"`
	// Slack: each message's latency still counts from its own schedule;
	// send_late_* say how late messages left (pacedWake).
	Slack *units.Duration `yaml:"slack" json:"slack" default:"200us" min:"0s" doc:"timer slack: sends due within it share one wake-up (at most this late); 0 = a wake-up per message"`
	// Reads: see ReadsBatched.
	Reads       string         `yaml:"reads" json:"reads,omitempty" default:"batched" doc:"when the client reads what arrives: batched (it sleeps through arrivals until its next send window, latency ends at the kernel's receive timestamp) or prompt (it wakes for each arrival)"`
	LateAfter   units.Duration `yaml:"late_after" json:"late_after" default:"1ms" min:"0s" doc:"a message written later than this after its schedule is late"`
	Verify      *bool          `yaml:"verify" json:"verify" default:"true" doc:"compare every echoed payload byte (the marker is always checked)"`
	PayloadKind string         `yaml:"payload_kind" json:"payload_kind,omitempty" default:"random" doc:"what messages hold after the marker: random (incompressible bytes), text (chat-like JSON lines), file"`
	// File is read by the scenario (and checked at load), into
	// Params.PayloadFile: shards need no file.
	File string `yaml:"file" json:"-" doc:"with payload_kind: file, the file whose bytes are cycled to the payload size"`
}

// Bytes is the payload size; client.Run applied its default.
func (p *Send) Bytes() int { return client.SizeOf(p.Payload) }

// Result is what a rate phase measured. Every message carries a
// MarkerLen-byte marker (its number on its connection and its scheduled
// send time); latency runs from the scheduled time to the complete echo, so
// a message that left late carries its lateness into its latency.
type Result struct {
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
	Latency      client.Hist   `json:"latency"` // ns, intact echoes, from the scheduled send time; exact over loops and shards
	// Slack is the timer slack the phase ran with (Params.Slack).
	Slack time.Duration `json:"slack"`
	// SendLate is how late each message left: its write minus its
	// scheduled time, ns; exact over loops and shards.
	SendLate client.Hist `json:"send_late"`
	// Wakeups counts the loop wake-ups (epoll_pwait2 returns) during the
	// phase, over every loop: the client's cost driver at sparse rates.
	Wakeups int64 `json:"wakeups"`
	// Reads is how the echoes were read: ReadsBatched, or ReadsPrompt
	// (asked for, or where the kernel refused receive timestamps).
	Reads string `json:"reads"`
	// Seconds is the timeline: entry i covers [i s, i+1 s) from the start
	// of the phase (drain included). Sends count in the second they were
	// written, echoes and their latencies in the second they completed. It
	// grows as the phase runs, one client.PacedSecond (48 bytes) per second.
	Seconds []client.PacedSecond `json:"seconds"`
	Errors  client.Reasons       `json:"errors"` // failure reason -> count (failed echoes, lost connections)
	// Stopped: StopCanceled, StopClosed, StopNoConnections; "" = it ran to its end.
	client.Ended
}

// Lost returns the messages sent whose echo never came: Sent - Recv - Failed.
func (r Result) Lost() int64 { return r.Sent - r.Recv - r.Failed }

// Merge implements Result.
func (r *Result) Merge(other client.Result) {
	o := other.(*Result)
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
	r.Latency.Add(o.Latency)
	r.Slack = max(r.Slack, o.Slack)
	r.SendLate.Add(o.SendLate)
	r.Wakeups += o.Wakeups
	r.Reads = client.MergeReads(r.Reads, o.Reads)
	for len(r.Seconds) < len(o.Seconds) {
		r.Seconds = append(r.Seconds, client.PacedSecond{})
	}
	for i, s := range o.Seconds {
		r.Seconds[i].Merge(s)
	}
	r.Errors.Merge(o.Errors)
	r.Stopped = client.MergeStop(r.Stopped, o.Stopped)
}

// Pacer is the timetable of each sending connection.
func (p *Params) Pacer() client.Pacer {
	return client.Pacer{Rate: float64(p.Rate), Ramp: p.Ramp.D(), Duration: p.Duration.D()}
}

// withDefaults returns p with its zero keys' defaults: the tags' (as
// client.Run applies them), and MaxInflight's, which follows the rate.
func (p Params) withDefaults() Params {
	decl.Defaults(&p)
	if p.MaxInflight == 0 {
		p.MaxInflight = DefaultMaxInflight(float64(p.Rate))
	}
	return p
}

// Split implements Params: the sending connections in proportion to the
// parts' open connections (never more than a part has), each part given
// its place in one shared timetable (PhaseFirst/PhaseTotal) and its share
// of MaxInflightBytes.
func (p *Params) Split(weights []int) []client.Params {
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
	slots := client.Distribute(n, weights)
	first := p.PhaseFirst
	return client.Parts(&d, len(weights), func(i int, q *Params) bool {
		if slots[i] == 0 {
			return false
		}
		q.Connections = slots[i]
		q.PhaseFirst, q.PhaseTotal = first, total
		q.MaxInflightBytes = max(units.Size(d.Bytes()), d.MaxInflightBytes*units.Size(slots[i])/units.Size(n))
		first += slots[i]
		return true
	})
}

// MinDefaultInflight and MaxDefaultInflight bound DefaultMaxInflight.
const (
	MinDefaultInflight = 16
	MaxDefaultInflight = 1000
)

// DefaultMaxInflight is Params.MaxInflight when 0: one second of
// messages at the full rate, at least MinDefaultInflight and at most
// MaxDefaultInflight.
func DefaultMaxInflight(rate float64) int {
	return int(min(max(math.Ceil(rate), MinDefaultInflight), MaxDefaultInflight))
}

// Validate implements Params: the declared bounds, and the relations
// between keys.
func (p *Params) Validate() error {
	var rate, ramp, reads, phase error
	if !(p.Rate > 0) || math.IsInf(float64(p.Rate), 0) {
		rate = fmt.Errorf("rate must be > 0 messages per second, got %v", p.Rate)
	}
	if p.Ramp > p.Duration {
		ramp = fmt.Errorf("ramp must be in [0, duration %v], got %v", p.Duration, p.Ramp)
	}
	if err := client.CheckReads(p.Reads); err != nil {
		reads = fmt.Errorf("reads %w", err)
	}
	if p.PhaseFirst < 0 || p.PhaseTotal < 0 || (p.PhaseTotal > 0 && p.PhaseFirst+p.Connections > p.PhaseTotal) {
		phase = fmt.Errorf("phase first %d + connections %d must be <= phase total %d", p.PhaseFirst, p.Connections, p.PhaseTotal)
	}
	return client.CheckParams(p, rate, ramp, client.CheckPayloadKind(p.PayloadKind, p.PayloadFile), reads, phase)
}

// Start implements client.Params. The phase runs over p.Connections open
// connections: each sends p.Rate messages per second for p.Duration on
// the timetable of a Pacer (connection i's k-th message is due at
// offset_i + k/Rate, the offsets spread evenly over one period), never
// waiting for replies, and then waits up to p.Drain for the echoes still
// due. Every message carries a marker with its number and scheduled time;
// its latency runs from that scheduled time, so a client or server that
// falls behind shows in the latency instead of being hidden (no
// coordinated omission).
//
// Progress counts messages sent. A phase cut short (ctx canceled, Close)
// returns what was measured with Stopped saying why; cancellation also
// returns ctx.Err(), Close ErrClosed.
func (p *Params) Start(ph *client.PhaseEnv) (*client.PhasePlan, error) {
	n := p.Connections
	if n == 0 {
		n = ph.OpenTotal()
	}
	if err := ph.Need("connections", n); err != nil {
		return nil, err
	}
	d := p.withDefaults()
	phaseTotal := p.PhaseTotal
	if phaseTotal == 0 {
		phaseTotal = p.PhaseFirst + n
	}
	pacer := p.Pacer()
	payload, err := client.MakeKindPayload(p.PayloadKind, p.Bytes(), false, p.PayloadFile)
	if err != nil {
		return nil, err
	}
	hdr := client.AppendClientHeader(nil, client.OpBinary, len(payload), 0)
	var want int64
	for j := range n {
		want += pacer.Total(float64(p.PhaseFirst+j) / float64(phaseTotal))
	}
	ph.Progress.Begin(want)
	return &client.PhasePlan{
		Starts: client.StartParts(ph, p, func(l *client.Loop, q *Params) {
			begin(l, &job{
				phase:       ph.ID,
				slots:       q.Connections,
				first:       q.PhaseFirst,
				total:       q.PhaseTotal,
				pacer:       pacer,
				start:       ph.Start,
				drain:       int64(d.Drain),
				hdr:         hdr,
				payload:     payload,
				verify:      *d.Verify,
				batch:       int(d.Batch),
				maxInflight: int64(d.MaxInflight),
				loopMax:     max(1, int64(q.MaxInflightBytes)/int64(d.Bytes())),
				lateAfter:   int64(d.LateAfter),
				slack:       client.SlackOf(d.Slack),
				reads:       d.Reads,
				pr:          ph.Progress,
			})
		}),
		Done: func(res client.Result, _ time.Duration) {
			r := res.(*Result)
			client.EnsureHists(&r.Latency, &r.SendLate)
		},
	}, nil
}
