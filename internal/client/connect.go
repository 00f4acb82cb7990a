package client

import (
	"runtime/debug"
	"time"

	"github.com/wsplan/wsplan/internal/units"
)

func init() {
	Register(KindOf[ConnectParams, ConnectResult]("connect"))
}

// ConnectParams configure a connect phase; they are its plan keys too
// (scenarios.Connect holds them inline), declared once in their tags.
type ConnectParams struct {
	Connections int            `yaml:"connections" json:"connections" required:"true" min:"1" doc:"connections to open"`
	Concurrency int            `yaml:"concurrency" json:"concurrency" min:"1" doc:"handshakes in progress at once; default min(1000, connections)"`
	Timeout     units.Duration `yaml:"timeout" json:"timeout" default:"5s" min:"1ns" doc:"time allowed for one attempt"`
	Retries     int            `yaml:"retries" json:"retries" default:"3" doc:"extra attempts per connection; negative = none"`
}

// ConnectResult is what a connect phase measured.
type ConnectResult struct {
	Total   int64         `json:"total"`   // connections asked for
	Success int64         `json:"success"` // open at the end
	Failed  int64         `json:"failed"`  // gave up after all retries
	Retried int64         `json:"retried"` // attempts that failed and were retried
	Used    time.Duration `json:"used"`    // wall time of the phase
	Latency Hist          `json:"latency"` // successful handshakes: TCP connect start to open (the 101 response, or the end of the protocol's greeting), ns
	TCP     Hist          `json:"tcp"`     // successful handshakes: TCP connect, ns
	TLS     Hist          `json:"tls"`     // successful handshakes: TLS handshake, ns; empty on plain connections
	Upgrade Hist          `json:"upgrade"` // successful handshakes: upgrade request to 101 response, ns
	// Greeting is the protocol's handshake after the upgrade (101
	// response to MQTT CONNACK, …), ns; empty for raw connections.
	Greeting Hist `json:"greeting"`
	// TLSResumed counts TLS handshakes that resumed a session.
	TLSResumed int64 `json:"tls_resumed"`
	// Subprotocol, Extensions, TLSVersion and TLSGroup are what the
	// server agreed to: the negotiated subprotocol, permessage-deflate's
	// parameters (pmdeflate.Params.String), the TLS version ("TLS 1.3")
	// and key exchange group ("x25519mlkem768", wstls.GroupName); "" =
	// none. Should connections differ, the values are joined with " | ".
	Subprotocol string  `json:"subprotocol,omitempty"`
	Extensions  string  `json:"extensions,omitempty"`
	TLSVersion  string  `json:"tls_version,omitempty"`
	TLSGroup    string  `json:"tls_group,omitempty"`
	Errors      Reasons `json:"errors"` // failure reason -> count, over every failed attempt (retried or not)
	// Stopped: StopCanceled, StopClosed; "" = it ran to its end.
	Ended
}

// Validate implements Params.
func (p *ConnectParams) Validate() error { return CheckParams(p) }

// Split implements Params: connections and concurrency split evenly over
// the first min(parts, concurrency, connections) parts (a connect phase
// opens connections where there were none) — unless every weight is > 0
// and they differ (remote shards' client.weights): then both split in
// proportion to the weights, each part with connections getting at least
// 1 of concurrency.
func (p *ConnectParams) Split(weights []int) []Params {
	if Weighted(weights) {
		conns := SplitInt64(int64(p.Connections), weights)
		conc := SplitInt64(int64(p.Concurrency), weights)
		return Parts(p, len(weights), func(j int, q *ConnectParams) bool {
			q.Connections, q.Concurrency = int(conns[j]), int(min(max(conc[j], 1), conns[j]))
			return conns[j] > 0
		})
	}
	m := min(len(weights), p.Concurrency, p.Connections)
	return Parts(p, len(weights), func(j int, q *ConnectParams) bool {
		if j >= m {
			return false
		}
		q.Connections, q.Concurrency = Share(p.Connections, m, j), Share(p.Concurrency, m, j)
		return true
	})
}

// Merge implements Result.
func (r *ConnectResult) Merge(other Result) {
	o := other.(*ConnectResult)
	r.Total += o.Total
	r.Success += o.Success
	r.Failed += o.Failed
	r.Retried += o.Retried
	r.Used = max(r.Used, o.Used)
	r.Latency.Add(o.Latency)
	r.TCP.Add(o.TCP)
	r.TLS.Add(o.TLS)
	r.Upgrade.Add(o.Upgrade)
	r.Greeting.Add(o.Greeting)
	r.TLSResumed += o.TLSResumed
	r.Subprotocol = mergeSet(r.Subprotocol, o.Subprotocol)
	r.Extensions = mergeSet(r.Extensions, o.Extensions)
	r.TLSVersion = mergeSet(r.TLSVersion, o.TLSVersion)
	r.TLSGroup = mergeSet(r.TLSGroup, o.TLSGroup)
	r.Errors.Merge(o.Errors)
	r.Stopped = MergeStop(r.Stopped, o.Stopped)
}

// Start implements Params.
func (p *ConnectParams) Start(ph *PhaseEnv) (*PhasePlan, error) {
	c := ph.Client
	ph.Progress.Begin(int64(p.Connections))
	parts := p.Split(ph.Open)
	m := 0
	for _, q := range parts {
		if q != nil {
			m++
		}
	}
	plan := &PhasePlan{Starts: make([]func(*Loop), len(parts))}
	for j, q := range parts {
		if q == nil {
			continue
		}
		q := q.(*ConnectParams)
		job := &DialJob{
			Phase:    ph.ID,
			N:        q.Connections,
			First:    c.NextConn + int64(j),
			Stride:   int64(m),
			Conc:     q.Concurrency,
			Timeout:  int64(p.Timeout),
			Retries:  max(p.Retries, 0),
			Progress: ph.Progress,
		}
		plan.Starts[j] = func(l *Loop) { l.DialStart(job) }
	}
	c.NextConn += int64(p.Connections)
	plan.Done = func(res Result, wall time.Duration) {
		r := res.(*ConnectResult)
		r.Total = int64(p.Connections)
		r.Used = wall
		EnsureHists(&r.Latency, &r.TCP, &r.TLS, &r.Upgrade, &r.Greeting)
		// The storm's garbage (a TLS handshake leaves about 70 KB: key
		// shares, messages, key schedule) goes back to the system now, in
		// this phase's CPU: the client's RSS after it is what its
		// connections keep.
		debug.FreeOSMemory()
	}
	return plan, nil
}

// DialJob is one loop's share of a connect phase.
type DialJob struct {
	Phase    int64
	N        int   // connections to open here
	First    int64 // connection number of the first; the k-th is first+k*stride
	Stride   int64
	Conc     int   // attempts in flight here at most
	Timeout  int64 // per attempt, ns
	Retries  int
	Progress *Progress
	// Hooks for a kind that opens connections of its own in a step of
	// its own (broadcast's open step); nil = a plain connect phase. req
	// returns connection idx's upgrade request (else its target's);
	// opened is told of each connection that finished its handshake;
	// done takes over when the dial ends here, instead of reporting the
	// connect result.
	Req    func(idx int64, target int) *UpgradeRequest
	Opened func(c *Conn, idx int64)
	Done   func(l *Loop, part *ConnectResult, stopped bool)
}

// dialRun is a connect phase running in a loop: a dialer that opens
// job.n connections, job.conc at a time, and ends when every one is open
// or given up.
type dialRun struct {
	BaseRun
	d         Dialer
	job       DialJob
	started   int   // connections begun
	unflushed int64 // finished connections not yet added to Progress
	filling   bool  // dialFill is starting attempts: hooks must not recurse into it
}

// DialStart begins a connect phase in this loop.
func (l *Loop) DialStart(job *DialJob) {
	r := &dialRun{BaseRun: BaseRun{job.Phase}, job: *job}
	r.d.Init(r, job.Timeout, job.Retries, job.Req)
	l.ph = r
	l.SetTick(time.Duration(job.Timeout / 10))
	l.dialFill(r)
}

// dialFill starts attempts until the concurrency or the count is reached,
// and ends the phase when nothing is left.
func (l *Loop) dialFill(r *dialRun) {
	if r.filling {
		return
	}
	r.filling = true
	for len(r.d.Inflight) < r.job.Conc && r.started < r.job.N {
		idx := r.job.First + int64(r.started)*r.job.Stride
		r.started++
		l.Dial(&r.d, idx, 0)
		if l.ph != r {
			return
		}
	}
	r.filling = false
	if r.started == r.job.N && len(r.d.Inflight) == 0 {
		r.Finish(l, false, 0)
	}
}

// Dialed implements dialHooks.
func (r *dialRun) Dialed(l *Loop, c *Conn, idx int64, _ int64) {
	c.Flags |= fNew
	r.progress(1)
	if r.job.Opened != nil {
		r.job.Opened(c, idx)
	}
	if l.ph == r {
		l.dialFill(r)
	}
}

// GaveUp implements dialHooks.
func (r *dialRun) GaveUp(l *Loop, _ int64, _ Reason) {
	r.progress(1)
	if l.ph == r {
		l.dialFill(r)
	}
}

// progress publishes finished connections in batches.
func (r *dialRun) progress(n int64) {
	r.unflushed += n
	if r.job.Progress != nil && r.unflushed >= ProgressBatch {
		r.job.Progress.Done.Add(r.unflushed)
		r.unflushed = 0
	}
}

// Lost implements LoopRun: a connection this phase opened that the server
// dropped before the phase ended counts as failed (handshakes in progress
// are the dialer's: loop.lost hands them to it).
func (r *dialRun) Lost(_ *Loop, _ *Conn, flags uint8, reason Reason) {
	if flags&fNew != 0 {
		r.d.Part.Success--
		r.d.Part.Failed++
		r.d.Part.Errors.Add(reason)
	}
}

// Tick implements LoopRun: it fails attempts past their deadline and
// publishes progress.
func (r *dialRun) Tick(l *Loop, now int64) {
	r.d.Tick(l, now)
	if l.ph == r && r.job.Progress != nil && r.unflushed > 0 {
		r.job.Progress.Done.Add(r.unflushed)
		r.unflushed = 0
	}
}

// Finish implements LoopRun: it ends the connect phase here and reports
// this loop's share. stopped means it was cut short: attempts in flight
// are abandoned (not counted as failures).
func (r *dialRun) Finish(l *Loop, stopped bool, _ int64) {
	l.ph = nil
	if stopped {
		r.d.Abandon(l)
	}
	for _, c := range l.open {
		c.Flags &^= fNew
	}
	if r.job.Progress != nil && r.unflushed > 0 {
		r.job.Progress.Done.Add(r.unflushed)
	}
	part := r.d.Result()
	if r.job.Done != nil {
		r.job.Done(l, part, stopped)
		return
	}
	l.Finished(r.job.Phase, part, stopped)
}

// Weighted reports whether weights are all > 0 and not all equal.
func Weighted(weights []int) bool {
	differ := false
	for _, w := range weights {
		if w <= 0 {
			return false
		}
		differ = differ || w != weights[0]
	}
	return differ
}
