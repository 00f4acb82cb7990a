package close

import (
	"fmt"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
)

// Code is the status code a close phase's close frames carry (1000,
// normal closure); a server's close frame that answers with another code
// counts as Result.OtherCode.
const Code = client.CloseNormal

// closePayload is Code as a close frame's payload, and closeAnswered
// the reason the loop gives a connection whose server answered with it.
var (
	closePayload  = []byte{Code >> 8, Code & 0xff}
	closeAnswered = client.ReasonServerClose + client.Reason(" "+client.Itoa(Code))
)

// Params configure a close phase: Connections of the open
// connections each send a close frame, at most Concurrency at once, and
// each close handshake is timed until the server's close frame arrives.
// Every connection the phase sent a close on is closed at its end. They
// are the phase's plan keys too (Phase holds them inline),
// declared once in their tags; the scenario fills and lowers Connections
// and Concurrency to the connections open.
type Params struct {
	Connections int            `yaml:"connections" json:"connections" min:"0" doc:"connections to close; default: every open one"`
	Concurrency int            `yaml:"concurrency" json:"concurrency" min:"0" doc:"close handshakes in progress at once; default: every connection the phase closes"`
	Timeout     units.Duration `yaml:"timeout" json:"timeout" default:"5s" min:"1ns" max:"120s" doc:"longest wait for the server's close frame; a connection without it by then fails and is dropped"`
}

// Result is what a close phase measured.
type Result struct {
	Total     int64          `json:"total"`      // connections asked to close
	Success   int64          `json:"success"`    // closes the server answered with a close frame
	OtherCode int64          `json:"other_code"` // of those, answered with a code other than Code (or none)
	Failed    int64          `json:"failed"`     // connections lost, or timed out, before the server's close frame
	Used      time.Duration  `json:"used"`
	Latency   client.Hist    `json:"latency"` // ns, close frame written to the server's close frame received
	Codes     client.Reasons `json:"codes"`   // the server's close of another code ("server close 1001") -> count
	Errors    client.Reasons `json:"errors"`  // failure reason -> count
	// Stopped: client.StopCanceled, client.StopClosed; "" = it ran to its end.
	client.Ended
}

// Validate implements client.Params: the declared bounds, and a phase that
// closes something.
func (p *Params) Validate() error {
	var conns, conc error
	if p.Connections <= 0 {
		conns = fmt.Errorf("connections must be > 0, got %d", p.Connections)
	}
	if p.Concurrency <= 0 || p.Concurrency > p.Connections {
		conc = fmt.Errorf("concurrency must be in [1, connections %d], got %d", p.Connections, p.Concurrency)
	}
	return client.CheckParams(p, conns, conc)
}

// Split implements client.Params: connections in proportion to the parts' open
// connections, concurrency in proportion to those (at least one per part
// that closes any).
func (p *Params) Split(weights []int) []client.Params {
	conns := client.Distribute(p.Connections, weights)
	conc := client.Distribute(p.Concurrency, conns)
	return client.Parts(p, len(weights), func(i int, q *Params) bool {
		q.Connections, q.Concurrency = conns[i], max(conc[i], 1)
		return conns[i] > 0
	})
}

// Merge implements client.Result.
func (r *Result) Merge(other client.Result) {
	o := other.(*Result)
	r.Total += o.Total
	r.Success += o.Success
	r.OtherCode += o.OtherCode
	r.Failed += o.Failed
	r.Used = max(r.Used, o.Used)
	r.Latency.Add(o.Latency)
	r.Codes.Merge(o.Codes)
	r.Errors.Merge(o.Errors)
	r.Stopped = client.MergeStop(r.Stopped, o.Stopped)
}

// Start implements client.Params: each loop closes its share of the connections.
func (p *Params) Start(ph *client.PhaseEnv) (*client.PhasePlan, error) {
	if err := ph.Need("connections", p.Connections); err != nil {
		return nil, err
	}
	ph.Progress.Begin(int64(p.Connections))
	return &client.PhasePlan{
		Starts: client.StartParts(ph, p, func(l *client.Loop, q *Params) {
			start(l, ph.ID, q.Connections, q.Concurrency, int64(p.Timeout), ph.Progress)
		}),
		Done: func(res client.Result, wall time.Duration) {
			r := res.(*Result)
			r.Total, r.Used = int64(p.Connections), wall
			client.EnsureHists(&r.Latency)
		},
	}, nil
}
