package client

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/units"
)

func init() {
	Register(Kind{Name: "close", NewParams: func() Params { return &CloseParams{} }, NewResult: func() Result { return &CloseResult{} }})
}

// CloseCode is the status code a close phase's close frames carry (1000,
// normal closure); a server's close frame that answers with another code
// counts as CloseResult.OtherCode.
const CloseCode = CloseNormal

// closePayload is CloseCode as a close frame's payload, and closeAnswered
// the reason the loop gives a connection whose server answered with it.
var (
	closePayload  = []byte{CloseCode >> 8, CloseCode & 0xff}
	closeAnswered = ReasonServerClose + Reason(" "+Itoa(CloseCode))
)

// CloseParams configure a close phase: Connections of the open
// connections each send a close frame, at most Concurrency at once, and
// each close handshake is timed until the server's close frame arrives.
// Every connection the phase sent a close on is closed at its end. They
// are the phase's plan keys too (scenarios.Close holds them inline),
// declared once in their tags; the scenario fills and lowers Connections
// and Concurrency to the connections open.
type CloseParams struct {
	Connections int            `yaml:"connections" json:"connections" min:"0" doc:"connections to close; default: every open one"`
	Concurrency int            `yaml:"concurrency" json:"concurrency" min:"0" doc:"close handshakes in progress at once; default: every connection the phase closes"`
	Timeout     units.Duration `yaml:"timeout" json:"timeout" default:"5s" min:"1ns" max:"120s" doc:"longest wait for the server's close frame; a connection without it by then fails and is dropped"`
}

// CloseResult is what a close phase measured.
type CloseResult struct {
	Total     int64         `json:"total"`      // connections asked to close
	Success   int64         `json:"success"`    // closes the server answered with a close frame
	OtherCode int64         `json:"other_code"` // of those, answered with a code other than CloseCode (or none)
	Failed    int64         `json:"failed"`     // connections lost, or timed out, before the server's close frame
	Used      time.Duration `json:"used"`
	Latency   Hist          `json:"latency"` // ns, close frame written to the server's close frame received
	Codes     Reasons       `json:"codes"`   // the server's close of another code ("server close 1001") -> count
	Errors    Reasons       `json:"errors"`  // failure reason -> count
	Stopped   StopReason    `json:"stopped"` // StopCanceled, StopClosed; "" = it ran to its end
}

// Kind implements Params.
func (p *CloseParams) Kind() string { return "close" }

// Validate implements Params: the declared bounds, and a phase that
// closes something.
func (p *CloseParams) Validate() error {
	var conns, conc error
	if p.Connections <= 0 {
		conns = fmt.Errorf("connections must be > 0, got %d", p.Connections)
	}
	if p.Concurrency <= 0 || p.Concurrency > p.Connections {
		conc = fmt.Errorf("concurrency must be in [1, connections %d], got %d", p.Connections, p.Concurrency)
	}
	return CheckParams(p, conns, conc)
}

// Split implements Params: connections in proportion to the parts' open
// connections, concurrency in proportion to those (at least one per part
// that closes any).
func (p *CloseParams) Split(weights []int) []Params {
	conns := Distribute(p.Connections, weights)
	conc := Distribute(p.Concurrency, conns)
	out := make([]Params, len(weights))
	for i := range out {
		if conns[i] > 0 {
			q := *p
			q.Connections, q.Concurrency = conns[i], max(conc[i], 1)
			out[i] = &q
		}
	}
	return out
}

// Merge implements Result.
func (r *CloseResult) Merge(other Result) {
	o := other.(*CloseResult)
	r.Total += o.Total
	r.Success += o.Success
	r.OtherCode += o.OtherCode
	r.Failed += o.Failed
	r.Used = max(r.Used, o.Used)
	r.Latency.Add(o.Latency)
	r.Codes.Merge(o.Codes)
	r.Errors.Merge(o.Errors)
	r.Stopped = MergeStop(r.Stopped, o.Stopped)
}

// Stop implements Result.
func (r *CloseResult) Stop() StopReason { return r.Stopped }

// CloseHandshakes runs a close phase (see CloseParams).
func (c *Client) CloseHandshakes(ctx context.Context, p CloseParams, pr *Progress) (CloseResult, error) {
	return RunAs[CloseResult](c, ctx, &p, pr)
}

// Start implements Params: each loop closes its share of the connections.
func (p *CloseParams) Start(ph *PhaseEnv) (*PhasePlan, error) {
	total := ph.OpenTotal()
	if p.Connections > total {
		return nil, fmt.Errorf("client: close: connections %d exceeds the %d open connections", p.Connections, total)
	}
	ph.Progress.Begin(int64(p.Connections))
	plan := &PhasePlan{Starts: make([]func(*Loop), len(ph.Open))}
	for i, part := range p.Split(ph.Open) {
		if part == nil {
			continue
		}
		q := part.(*CloseParams)
		id, pr := ph.ID, ph.Progress
		plan.Starts[i] = func(l *Loop) { l.closeStart(id, q.Connections, q.Concurrency, int64(p.Timeout), pr) }
	}
	plan.Done = func(res Result, why StopReason, wall time.Duration) StopReason {
		r := res.(*CloseResult)
		r.Total, r.Used = int64(p.Connections), wall
		if r.Latency.Histogram == nil {
			r.Latency = NewHist()
		}
		if why == "" {
			why = r.Stopped
		}
		r.Stopped = why
		return why
	}
	return plan, nil
}

// The states of a connection in a close run (closeRun.sent holds the loop
// clock of its close frame while the handshake is in progress).
const (
	closeWaiting = -1 // its close frame is not sent yet
	closeDone    = -2 // answered, failed or lost
)

// closeRun is a close phase running in a loop. Its connections are the
// loop's first open ones; conn.slot holds a connection's index.
type closeRun struct {
	BaseRun
	conns     []*Conn
	sent      []int64 // per connection: the loop clock its close left, or closeWaiting, closeDone
	next      int     // the next connection to send a close on
	inflight  int
	timeout   int64
	pr        *Progress
	unflushed int64
	part      CloseResult
}

// closeStart begins a close phase in this loop: n connections, conc of
// them closing at once.
func (l *Loop) closeStart(id int64, n, conc int, timeout int64, pr *Progress) {
	n = min(n, len(l.Open()))
	r := &closeRun{BaseRun: BaseRun{id}, conns: append([]*Conn(nil), l.Open()[:n]...), sent: make([]int64, n),
		timeout: timeout, pr: pr, part: CloseResult{Latency: NewHist()}}
	l.SetRun(r)
	l.SetTick(time.Duration(timeout / 10))
	for i, c := range r.conns {
		c.Slot = int64(i)
		r.sent[i] = closeWaiting
	}
	now := l.Now()
	for range min(conc, n) {
		if l.Run() != r {
			return
		}
		r.send(l, now)
	}
	r.maybeDone(l)
}

// send writes the close frame of the next connection still open.
func (r *closeRun) send(l *Loop, now int64) {
	for r.next < len(r.conns) {
		i := r.next
		r.next++
		if r.sent[i] != closeWaiting {
			continue // lost before its turn: already counted
		}
		r.sent[i] = now
		r.inflight++
		r.conns[i].Flags |= FlagClosing // the server's close answers this one: not a close of its own
		l.SendControl(r.conns[i], OpClose, closePayload)
		return
	}
}

// slot returns c's index in the run, or -1.
func (r *closeRun) slot(c *Conn) int {
	if i := c.Slot; i >= 0 && i < int64(len(r.conns)) && r.conns[i] == c {
		return int(i)
	}
	return -1
}

// Lost implements LoopRun: the loop drops a connection when the server's
// close frame arrives (reason ReasonServerClose, with the server's code):
// the handshake in progress on it succeeded. Any other reason, or the
// server's close before the client's, fails the connection's close.
func (r *closeRun) Lost(l *Loop, c *Conn, _ uint8, reason Reason) {
	i := r.slot(c)
	if i < 0 || r.sent[i] == closeDone {
		return
	}
	answered := r.sent[i] >= 0 && strings.HasPrefix(string(reason), string(ReasonServerClose))
	if r.sent[i] >= 0 {
		r.inflight--
	}
	switch {
	case answered:
		Record(r.part.Latency.Histogram, l.Now()-r.sent[i])
		r.part.Success++
		if reason != closeAnswered {
			r.part.OtherCode++
			r.part.Codes.Add(reason)
		}
	case r.sent[i] < 0:
		r.part.Failed++
		r.part.Errors.Add("before its close: " + reason)
	default:
		r.part.Failed++
		r.part.Errors.Add(reason)
	}
	r.sent[i] = closeDone
	r.progress()
	if l.Run() == r {
		r.send(l, l.Now())
		r.maybeDone(l)
	}
}

// Tick implements LoopRun: it fails closes older than the timeout
// (dropping their connections) and publishes progress.
func (r *closeRun) Tick(l *Loop, now int64) {
	for i, c := range r.conns {
		if l.Run() != r {
			return
		}
		if r.sent[i] >= 0 && now-r.sent[i] > r.timeout {
			l.Drop(c, ReasonTimeout)
		}
	}
	if r.pr != nil && r.unflushed > 0 {
		r.pr.Done.Add(r.unflushed)
		r.unflushed = 0
	}
}

func (r *closeRun) progress() {
	if r.unflushed++; r.unflushed >= ProgressBatch && r.pr != nil {
		r.pr.Done.Add(r.unflushed)
		r.unflushed = 0
	}
}

// maybeDone ends the phase here once every close was answered or failed.
func (r *closeRun) maybeDone(l *Loop) {
	if l.Run() != r || r.inflight > 0 || r.next < len(r.conns) {
		return
	}
	r.Finish(l, false, 0)
}

// Finish implements LoopRun: a connection whose close frame left and that
// is still open (the phase was cut short) is closed now.
func (r *closeRun) Finish(l *Loop, stopped bool, _ int64) {
	for i, c := range r.conns {
		if r.sent[i] >= 0 && c.State() == StateOpen {
			l.CloseFD(c)
		}
		c.Slot = 0
	}
	if r.pr != nil && r.unflushed > 0 {
		r.pr.Done.Add(r.unflushed)
	}
	l.Finished(r.ID(), &r.part, stopped)
}
