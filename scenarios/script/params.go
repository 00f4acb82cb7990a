package script

import (
	"fmt"
	"math"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	lang "github.com/wsplan/wsplan/internal/script"
	"github.com/wsplan/wsplan/internal/units"
)

// A script phase runs a conversation (internal/script) on connections of
// its own, one per user: users dial, run the steps (send from templates,
// expect matching messages, think, loop, close) and close. Closed
// arrivals: Users users from the start, each running the steps Iterations
// times or until Duration. Open arrivals: users arrive ArrivalRate per
// second for Duration on a fixed timetable, each on a new connection,
// and run the steps Iterations times. run.go is what a loop runs;
// user.go one user's steps and its messages; script.go the plan side.

// Params configure a script phase (one part of it, after Split).
// They are the phase's plan keys too (Phase holds them
// inline), declared once in their tags; the fields a plan cannot set
// (yaml:"-") are what the scenario and Split derive: the data's rows, the
// users' numbers, the headers in order.
type Params struct {
	Users          int               `yaml:"users" json:"users,omitempty" min:"0" doc:"closed arrivals: users, each on its own connection, from the start"`
	ArrivalRate    units.Rate        `yaml:"arrival_rate" json:"arrival_rate,omitempty" doc:"open arrivals: users arriving per second, each on a new connection, for duration"`
	Duration       units.Duration    `yaml:"duration" json:"duration,omitempty" min:"0s" doc:"open arrivals: how long users arrive; closed: no iteration starts after it"`
	Iterations     int64             `yaml:"iterations" json:"iterations,omitempty" min:"0" doc:"times each user runs the steps; default 1, or with a duration (closed) until it ends"`
	MaxUsers       int               `yaml:"max_users" json:"max_users,omitempty" min:"0" doc:"open arrivals: users running at once at most (later arrivals are dropped, counted); default min(arrivals, 10000)"`
	Concurrency    int               `yaml:"concurrency" json:"concurrency,omitempty" min:"0" doc:"closed arrivals: handshakes in progress at once; default min(1000, users)"`
	ConnectTimeout units.Duration    `yaml:"connect_timeout" json:"connect_timeout" default:"5s" min:"1ns" doc:"time allowed for one handshake attempt"`
	Retries        int               `yaml:"retries" json:"retries,omitempty" default:"3" min:"0" doc:"extra handshake attempts per user"`
	Timeout        units.Duration    `yaml:"timeout" json:"timeout" default:"10s" min:"1ns" max:"120s" doc:"an expect's longest wait when it sets none; a reply later than this ends its user"`
	Drain          units.Duration    `yaml:"drain" json:"drain" default:"10s" min:"0s" doc:"wait after duration for users to finish"`
	LateAfter      units.Duration    `yaml:"late_after" json:"late_after" default:"1ms" min:"0s" doc:"open arrivals: a user dialled later than this after its time is late"`
	Data           *lang.Data        `yaml:"data" json:"-" doc:"rows users take: {file: users.csv, order: sequential | random | unique}"`
	Query          string            `yaml:"query" json:"query,omitempty" doc:"template added to the upgrade request's query, e.g. user={{.row.user}}"`
	Headers        map[string]string `yaml:"headers" json:"-" doc:"upgrade request headers, values are templates (Authorization: Bearer {{.row.token}})"`
	Ignore         []lang.Match      `yaml:"ignore" json:"ignore,omitempty" doc:"messages never taken as replies nor counted unexpected (keepalives, presence): json, expr, regex, prefix"`
	Steps          []lang.Step       `yaml:"steps" json:"steps" required:"true" doc:"the conversation: send, expect, think, loop, close"`

	// HeaderList is Headers in the order the upgrade writes them (name,
	// value template): what the loop reads, and shards get.
	HeaderList [][2]string `yaml:"-" json:"headers,omitempty"`

	// Rows are the data users take (nil = none), by Order; RowSeed varies
	// the random order.
	Rows    *lang.Rows `yaml:"-" json:"rows,omitempty"`
	Order   string     `yaml:"-" json:"order,omitempty"`
	RowSeed uint64     `yaml:"-" json:"row_seed,omitempty"`

	// Closed arrivals: this part's users are numbered First …
	// First+Users-1. Open arrivals: this part takes arrival k =
	// ArrivalFirst + j×ArrivalStride (the user numbered k) at
	// k / ArrivalRate after the start, at most MaxUsers at once here
	// (arrivals beyond are dropped, counted).
	First         int64 `yaml:"-" json:"first,omitempty"`
	ArrivalFirst  int64 `yaml:"-" json:"arrival_first,omitempty"`
	ArrivalStride int64 `yaml:"-" json:"arrival_stride,omitempty"`
}

// Result is what a script phase measured.
type Result struct {
	// Users.
	Users      int64          `json:"users"`       // users whose connection opened
	Arrivals   int64          `json:"arrivals"`    // open arrivals due (dialled, dropped or never reached)
	Late       int64          `json:"late"`        // arrivals dialled more than LateAfter after their time
	Dropped    int64          `json:"dropped"`     // arrivals not started: MaxUsers were running
	OpenFailed int64          `json:"open_failed"` // users whose connection failed after all retries
	Connect    client.Hist    `json:"connect"`     // handshake latency, ns
	OpenErrors client.Reasons `json:"open_errors"`
	Finished   int64          `json:"finished"` // users that ran every iteration (or closed by a close step)
	Aborted    int64          `json:"aborted"`  // users ended by a timeout or a lost connection
	Cut        int64          `json:"cut"`      // users still running when the phase ended (Duration + Drain, or stopped)
	// Peak is the most users running at once (connected, not ended):
	// each loop's own peak, summed over loops and shards, so exact when
	// every user runs at once and an upper bound otherwise.
	Peak int64 `json:"peak"`

	Iterations int64 `json:"iterations"` // iterations completed
	Sent       int64 `json:"sent"`       // messages sent
	Received   int64 `json:"received"`   // messages received
	// Unexpected counts messages that matched no waiting expect and no
	// ignore pattern; UnexpectedUsers the users that got any.
	Unexpected      int64 `json:"unexpected"`
	UnexpectedUsers int64 `json:"unexpected_users"`
	Ignored         int64 `json:"ignored"` // messages an ignore pattern covered

	// Exchanges are the named expects' figures, by name.
	Exchanges map[string]*Exchange `json:"exchanges,omitempty"`
	// Failures are the steps that failed, by step (its place in the plan,
	// "steps[2].expect") and reason.
	Failures map[string]client.Reasons `json:"failures,omitempty"`
	// UsersFailed counts users ended by a lost connection or a message
	// their protocol could not encode; Errors says why, by reason.
	UsersFailed int64          `json:"users_failed"`
	Errors      client.Reasons `json:"errors"`

	// Timeouts, Mismatched and Unanswered count the expects, named
	// exchange or not, that got no reply in time, a reply to another
	// request, or none before their user or the phase ended.
	Timeouts   int64 `json:"timeouts"`
	Mismatched int64 `json:"mismatched"`
	Unanswered int64 `json:"unanswered"`

	// Answers counts the protocol's answers to the steps' messages
	// (acks, responses, receipts, errors), named exchange or not.
	Answers int64 `json:"answers"`
	// ErrorAnswers are the answers that refused, by the protocol's code
	// ("mqtt 0x87 not authorized", "jsonrpc -32601").
	ErrorAnswers client.Reasons `json:"error_answers,omitempty"`
	// Downgrades are the answers that granted less than asked, by what
	// they were ("mqtt PUBACK to a QoS 2 publish").
	Downgrades client.Reasons `json:"downgrades,omitempty"`

	// ReceiveMax is the least quota of QoS > 0 publishes unanswered that
	// a server announced to the users' connections (MQTT 5's Receive
	// Maximum); 0 = none announced one. Throttled counts the users whose
	// connection's quota was below Inflight, the deepest pipelining
	// (loop inflight) of the steps' QoS > 0 publishes: the client waited
	// for answers rather than send past it.
	ReceiveMax int64 `json:"receive_maximum,omitempty"`
	Throttled  int64 `json:"throttled,omitempty"`
	Inflight   int64 `json:"inflight,omitempty"`

	BytesSent int64         `json:"bytes_sent"` // payload bytes
	BytesRecv int64         `json:"bytes_recv"`
	Used      time.Duration `json:"used"`
	client.Ended
}

// Exchange is one named exchange's figures: its latency runs from the
// scheduled time of the send before the expect to the message that
// completed it.
type Exchange struct {
	Count      int64       `json:"count"`      // completed
	Timeouts   int64       `json:"timeouts"`   // no complete reply in time
	Mismatched int64       `json:"mismatched"` // a reply that met the expect's fixed conditions but not its request's (another request's id)
	Failed     int64       `json:"failed"`     // waiting when the connection was lost or the phase ended
	Errors     int64       `json:"errors"`     // the protocol answered with an error
	Downgraded int64       `json:"downgraded"` // the protocol's answer granted less than asked (a lower QoS)
	Latency    client.Hist `json:"latency"`    // ns, completed ones
	// ErrorCodes and DowngradeCodes say what the errors and downgrades
	// were, by the protocol's code.
	ErrorCodes     client.Reasons `json:"error_codes,omitempty"`
	DowngradeCodes client.Reasons `json:"downgrade_codes,omitempty"`
}

// Failure reasons of a script's steps.
const (
	ReasonMismatch    client.Reason = "mismatched"   // a reply to another request
	ReasonUserEnded   client.Reason = "user ended"   // waiting when its user ended on another failure
	ReasonPhaseEnd    client.Reason = "phase ended"  // waiting when the phase ended
	ReasonErrorAnswer client.Reason = "error answer" // the protocol answered with an error (JSON-RPC error, STOMP ERROR, GraphQL error) and said no code
	ReasonDowngraded  client.Reason = "downgraded"   // the protocol granted less than asked and said nothing more
)

// open reports whether arrivals are open.
func (p *Params) open() bool { return p.ArrivalRate > 0 }

// Validate implements Params.
func (p *Params) Validate() error {
	var errs []error
	if p.open() == (p.Users > 0) {
		errs = append(errs, fmt.Errorf("want users (closed arrivals) or arrival_rate (open arrivals), one of them"))
	}
	if p.open() && p.Duration <= 0 {
		errs = append(errs, fmt.Errorf("open arrivals need a duration > 0, got %v", p.Duration))
	}
	if !p.open() && p.Iterations <= 0 && p.Duration <= 0 {
		errs = append(errs, fmt.Errorf("users need iterations or a duration"))
	}
	if _, cerrs := p.compile(nil); len(cerrs) > 0 {
		for _, e := range cerrs {
			errs = append(errs, e)
		}
	}
	return client.CheckParams(p, errs...)
}

// compile compiles the steps against the rows' columns and the rule of
// the server's protocol for the verbs it answers (nil = not known).
func (p *Params) compile(answers lang.AnswerRule) (*lang.Program, []lang.Error) {
	var cols []string
	if p.Rows != nil {
		cols = p.Rows.Columns
	}
	return lang.Compile(lang.Source{Steps: p.Steps, Ignore: p.Ignore, Columns: cols, Timeout: p.Timeout.D(), Answers: answers})
}

// Split implements Params: closed arrivals' users in contiguous ranges
// (evenly over the first min(parts, users) parts, or by weight like a
// connect phase), open arrivals' timetable by stride: part j of m takes
// every m-th arrival. Each part gets the rows its users take.
func (p *Params) Split(weights []int) []client.Params {
	if p.open() {
		stride := max(p.ArrivalStride, 1)
		m := int64(len(weights))
		return client.Parts(p, len(weights), func(j int, q *Params) bool {
			q.ArrivalFirst = p.ArrivalFirst + int64(j)*stride
			q.ArrivalStride = stride * m
			q.MaxUsers = max(1, client.Share(p.MaxUsers, int(m), j))
			return true
		})
	}
	counts := make([]int64, len(weights))
	if client.Weighted(weights) {
		counts = client.SplitInt64(int64(p.Users), weights)
	} else {
		m := min(len(weights), p.Users)
		for j := 0; j < m; j++ {
			counts[j] = int64(client.Share(p.Users, m, j))
		}
	}
	first := p.First
	return client.Parts(p, len(weights), func(j int, q *Params) bool {
		n := counts[j]
		if n == 0 {
			return false
		}
		q.First, q.Users = first, int(n)
		q.Concurrency = max(1, int(int64(p.Concurrency)*n/int64(p.Users)))
		if p.Rows != nil {
			q.Rows = p.Rows.Part(p.Order, first, n)
		}
		first += n
		return true
	})
}

// arrivals returns the open arrivals this part takes: those with k < the
// whole phase's arrivals (rate × duration).
func (p *Params) arrivals() int64 {
	total := int64(math.Floor(float64(p.ArrivalRate) * p.Duration.D().Seconds()))
	if p.ArrivalFirst >= total {
		return 0
	}
	stride := max(p.ArrivalStride, 1)
	return (total - p.ArrivalFirst + stride - 1) / stride
}

// Merge implements Result.
func (r *Result) Merge(other client.Result) {
	o := other.(*Result)
	r.Users += o.Users
	r.Arrivals += o.Arrivals
	r.Late += o.Late
	r.Dropped += o.Dropped
	r.OpenFailed += o.OpenFailed
	r.Connect.Add(o.Connect)
	r.OpenErrors.Merge(o.OpenErrors)
	r.Finished += o.Finished
	r.Aborted += o.Aborted
	r.Cut += o.Cut
	r.Peak += o.Peak
	r.Iterations += o.Iterations
	r.Sent += o.Sent
	r.Received += o.Received
	r.Unexpected += o.Unexpected
	r.UnexpectedUsers += o.UnexpectedUsers
	r.Ignored += o.Ignored
	for name, e := range o.Exchanges {
		r.exchange(name).merge(e)
	}
	for step, rs := range o.Failures {
		if r.Failures == nil {
			r.Failures = map[string]client.Reasons{}
		}
		m := r.Failures[step]
		m.Merge(rs)
		r.Failures[step] = m
	}
	r.UsersFailed += o.UsersFailed
	r.Timeouts += o.Timeouts
	r.Mismatched += o.Mismatched
	r.Unanswered += o.Unanswered
	r.Errors.Merge(o.Errors)
	r.Answers += o.Answers
	r.ErrorAnswers.Merge(o.ErrorAnswers)
	r.Downgrades.Merge(o.Downgrades)
	if o.ReceiveMax > 0 && (r.ReceiveMax == 0 || o.ReceiveMax < r.ReceiveMax) {
		r.ReceiveMax = o.ReceiveMax
	}
	r.Throttled += o.Throttled
	r.Inflight = max(r.Inflight, o.Inflight)
	r.BytesSent += o.BytesSent
	r.BytesRecv += o.BytesRecv
	r.Used = max(r.Used, o.Used)
	r.Stopped = client.MergeStop(r.Stopped, o.Stopped)
}

// exchange returns the named exchange, adding it if needed.
func (r *Result) exchange(name string) *Exchange {
	if r.Exchanges == nil {
		r.Exchanges = map[string]*Exchange{}
	}
	e := r.Exchanges[name]
	if e == nil {
		e = &Exchange{Latency: client.NewHist()}
		r.Exchanges[name] = e
	}
	return e
}

func (e *Exchange) merge(o *Exchange) {
	e.Count += o.Count
	e.Timeouts += o.Timeouts
	e.Mismatched += o.Mismatched
	e.Failed += o.Failed
	e.Errors += o.Errors
	e.Downgraded += o.Downgraded
	e.ErrorCodes.Merge(o.ErrorCodes)
	e.DowngradeCodes.Merge(o.DowngradeCodes)
	e.Latency.Add(o.Latency)
}

// fail counts a step's failure.
func (r *Result) fail(step string, reason client.Reason) {
	if r.Failures == nil {
		r.Failures = map[string]client.Reasons{}
	}
	m := r.Failures[step]
	m.Add(reason)
	r.Failures[step] = m
}
