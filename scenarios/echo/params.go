package echo

import (
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
)

// Params configure a closed-loop echo phase. They are the phase's
// plan keys too (scenarios.Echo holds them inline), declared once in
// their tags; the scenario lowers Concurrency to the connections open and
// reads File into PayloadFile.
type Params struct {
	Total       int64          `yaml:"total" json:"total" required:"true" min:"1" doc:"echoes to measure"`
	Concurrency int            `yaml:"concurrency" json:"concurrency" min:"1" doc:"messages in flight, one per connection; default: every open connection"`
	Payload     *units.Size    `yaml:"payload" json:"payload" default:"1KiB" min:"0" max:"64MiB" doc:"bytes per message; 0 = empty messages"`
	Warmup      int64          `yaml:"warmup" json:"warmup" default:"0" min:"0" doc:"echoes before measuring, not counted"`
	Text        bool           `yaml:"text" json:"text" default:"false" doc:"send text frames instead of binary"`
	Verify      *bool          `yaml:"verify" json:"verify" default:"true" doc:"compare every echoed byte"`
	Timeout     units.Duration `yaml:"timeout" json:"timeout" default:"10s" min:"1ns" max:"120s" doc:"longest wait for one echo"`
	Deadline    units.Duration `yaml:"deadline" json:"deadline" default:"0s" min:"0s" doc:"longest phase; 0 = none"`
	PayloadKind string         `yaml:"payload_kind" json:"payload_kind,omitempty" default:"random" doc:"what messages hold: random (incompressible bytes), text (chat-like JSON lines), file"`
	// File is read by the scenario (and checked at load), into
	// PayloadFile: shards need no file.
	File string `yaml:"file" json:"-" doc:"with payload_kind: file, the file whose bytes are cycled to the payload size"`
	// PayloadFile is the content of the payload file (kind "file"),
	// cycled to Payload bytes.
	PayloadFile []byte `yaml:"-" json:"payload_file,omitempty"`
}

// bytes is the payload size; Client.Run applied its default.
func (p *Params) bytes() int { return client.SizeOf(p.Payload) }

// payload makes the message an echo phase sends.
func (p *Params) payload() ([]byte, error) {
	return client.MakeKindPayload(p.PayloadKind, p.bytes(), p.Text, p.PayloadFile)
}

// Result is what an echo phase measured.
type Result struct {
	Total   int64          `json:"total"` // echoes asked for
	Success int64          `json:"success"`
	Failed  int64          `json:"failed"` // wrong payload, closed connection, timeout
	Used    time.Duration  `json:"used"`
	Latency client.Hist    `json:"latency"` // ns, successful echoes
	Errors  client.Reasons `json:"errors"`  // failure reason -> count
	// Stopped: StopCanceled, StopDeadline, StopClosed, StopNoConnections; "" = it ran to its end.
	client.Ended
	// BytesPayload and BytesWire count the data sent and received during
	// the phase (warm-up included), both directions: as message payload,
	// and as the frames carried it (compressed under permessage-deflate;
	// frame headers and TLS records not counted). Without compression
	// they are equal.
	BytesPayload int64 `json:"bytes_payload"`
	BytesWire    int64 `json:"bytes_wire"`
	// Seconds is the timeline: entry i covers [i s, i+1 s) from the start
	// of the phase (warm-up included). Measured messages count in the
	// second they were written (Sent), intact echoes and their latencies
	// in the second they completed (Recv, P50, P99, Max); Late is unused.
	// It grows as the phase runs, one PacedSecond (48 bytes) per second;
	// merged as a rate phase's (Max exact, P50 and P99 upper bounds).
	Seconds []client.PacedSecond `json:"seconds,omitempty"`
}

// Validate implements Params.
func (p *Params) Validate() error {
	return client.CheckParams(p, client.CheckPayloadKind(p.PayloadKind, p.PayloadFile))
}

// Split implements Params: concurrency in proportion to the parts' open
// connections (never more than a part has), total and warm-up in
// proportion to the concurrency, so every part finishes at about the same
// time. A part without concurrency or echoes to measure gets nothing.
func (p *Params) Split(weights []int) []client.Params {
	conc := client.Distribute(p.Concurrency, weights)
	tot := client.SplitInt64(p.Total, conc)
	warm := client.SplitInt64(p.Warmup, conc)
	return client.Parts(p, len(weights), func(i int, q *Params) bool {
		q.Concurrency, q.Total, q.Warmup = conc[i], tot[i], warm[i]
		return conc[i] > 0 && tot[i] > 0
	})
}

// Merge implements Result.
func (r *Result) Merge(other client.Result) {
	o := other.(*Result)
	r.Total += o.Total
	r.Success += o.Success
	r.Failed += o.Failed
	r.Used = max(r.Used, o.Used)
	r.Latency.Add(o.Latency)
	r.Errors.Merge(o.Errors)
	r.Stopped = client.MergeStop(r.Stopped, o.Stopped)
	r.BytesPayload += o.BytesPayload
	r.BytesWire += o.BytesWire
	r.Seconds = client.MergeSeconds(r.Seconds, o.Seconds)
}

// Start implements Params: the loops share one pool of tokens (messages
// to send), so a loop whose connections answer faster sends more.
func (p *Params) Start(ph *client.PhaseEnv) (*client.PhasePlan, error) {
	if err := ph.Need("concurrency", p.Concurrency); err != nil {
		return nil, err
	}
	op := byte(client.OpBinary)
	if p.Text {
		op = client.OpText
	}
	payload, err := p.payload()
	if err != nil {
		return nil, err
	}
	hdr := client.AppendClientHeader(nil, op, len(payload), 0)
	pool := &tokenPool{}
	pool.warm.Store(p.Warmup)
	pool.meas.Store(p.Total)
	batch := p.Warmup + p.Total
	if n := len(ph.Open); n > 1 {
		batch = max(1, min(256, batch/int64(64*n)))
	}
	ph.Progress.Begin(p.Warmup + p.Total)
	plan := &client.PhasePlan{Starts: make([]func(*client.Loop), len(ph.Open)), Deadline: p.Deadline.D()}
	start := time.Now()
	for i, slots := range client.Distribute(p.Concurrency, ph.Open) {
		if slots == 0 {
			continue
		}
		job := &job{
			phase:   ph.ID,
			slots:   slots,
			hdr:     hdr,
			payload: payload,
			op:      op,
			verify:  *p.Verify,
			timeout: int64(p.Timeout),
			pool:    pool,
			batch:   batch,
			pr:      ph.Progress,
			start:   start,
		}
		plan.Starts[i] = func(l *client.Loop) { begin(l, job) }
	}
	plan.Done = func(res client.Result, wall time.Duration) {
		r := res.(*Result)
		r.Total = p.Total
		r.Used = wall
		client.EnsureHists(&r.Latency)
		if pool.warm.Load()+pool.meas.Load() > 0 {
			r.Stopped = client.StopNoConnections // unless the run saw another reason
		}
	}
	return plan, nil
}
