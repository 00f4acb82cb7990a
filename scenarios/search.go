package scenarios

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/exprlimit"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/units"
)

// Search bounds and defaults not expressible as tags.
const (
	// DefaultSearchFactor is Search.Factor when neither factor nor step is
	// given.
	DefaultSearchFactor = 2
	// MaxSearchSteps bounds the growing steps from start to max (the
	// bisection after them is bounded by tolerance): a search is a bounded
	// number of bounded steps.
	MaxSearchSteps = 100
	// Step verdicts (result.Step.Verdict).
	VerdictPass        = "pass"
	VerdictFail        = "fail"
	VerdictClientBound = "client-bound"
)

// The two things a search can grow.
const (
	VaryRate        = "rate"        // messages/s over a fixed set of connections
	VaryConnections = "connections" // connections, each sending Rate msgs/s
)

// Search finds a server's capacity under an SLO: open-loop steps of the
// rate phase's machinery (one client rate run per step, latency from the
// scheduled send) at growing targets, start, start×factor (or start+step)
// … up to max, each measured for step_duration after settle; after the
// first step whose metrics fail the SLO (or that sent less than
// RateShortfall of its timetable: it did not deliver its target),
// bisection between the last passing
// and the first failing target until they are within tolerance. The
// capacity is the highest target that held. A step where the client's CPU
// was saturated stops the search: the client, not the server, set that
// bound ("client-bound at X msg/s: capacity ≥ X").
//
// With vary: connections, the targets are numbers of connections, each
// sending rate msgs/s; the phase opens the connections it lacks before a
// step (at most max, minus those open before it) and keeps them open.
type Search struct {
	Vary         string         `yaml:"vary" default:"rate" doc:"what the steps grow: rate (messages/s over the connections) or connections (each sending rate msgs/s)"`
	Start        units.Rate     `yaml:"start" required:"true" doc:"the first step: messages/s over every connection (vary: rate), or connections (vary: connections)"`
	Factor       float64        `yaml:"factor" min:"0" doc:"each step is the last one × factor, > 1; default 2 unless step is given"`
	Step         units.Rate     `yaml:"step" min:"0" doc:"each step is the last one + step, > 0; instead of factor"`
	Max          units.Rate     `yaml:"max" required:"true" doc:"the highest step; a search that holds the SLO there stops with capacity ≥ max"`
	StepDuration units.Duration `yaml:"step_duration" default:"10s" min:"1ns" doc:"measured sending time of each step"`
	Settle       units.Duration `yaml:"settle" default:"2s" min:"0s" doc:"sending at a step's rate before its measurement starts, not measured; 0 = none"`
	SLO          string         `yaml:"slo" required:"true" doc:"expr boolean over a step's rate metrics that must hold, e.g. p99 < duration(\"50ms\") && lost == 0"`
	Tolerance    float64        `yaml:"tolerance" default:"0.05" min:"0.001" max:"1" doc:"bisection ends when first failing − last passing ≤ tolerance × last passing"`
	Rate         units.Rate     `yaml:"rate" doc:"vary: connections: messages per connection per second (required there; unused with vary: rate)"`
	Connections  int            `yaml:"connections" min:"0" doc:"vary: rate: connections that send; default: every open one"`
	Payload      *units.Size    `yaml:"payload" default:"1KiB" min:"16" max:"64MiB" hint:"the latency marker: 8-byte sequence number and 8-byte scheduled send time" doc:"bytes per message, the 16-byte latency marker included"`
	Batch        units.Size     `yaml:"batch" default:"16KiB" min:"0" doc:"most bytes per write when several messages are due on a connection"`
	MaxInflight  int            `yaml:"max_inflight" min:"0" doc:"messages sent and not echoed per connection; default each step's rate per connection × 1 s, in [16, 1000]"`
	// MaxInflightBytes bounds the payload bytes sent and not echoed over
	// every connection, as the rate phase's.
	MaxInflightBytes units.Size     `yaml:"max_inflight_bytes" default:"64MiB" min:"0" doc:"payload bytes sent and not echoed over every connection"`
	Drain            units.Duration `yaml:"drain" default:"2s" min:"0s" doc:"wait for the echoes still due after each step"`
	LateAfter        units.Duration `yaml:"late_after" default:"1ms" min:"0s" doc:"a message written later than this after its schedule is late"`
	Verify           *bool          `yaml:"verify" default:"true" doc:"compare every echoed payload byte (the marker is always checked)"`
	// Slack, Reads, PayloadKind and File are the rate phase's, for every step.
	Slack       *units.Duration `yaml:"slack" default:"200us" min:"0s" doc:"timer slack: sends due within it share one wake-up (at most this late); 0 = a wake-up per message"`
	PayloadKind string          `yaml:"payload_kind" default:"random" doc:"what messages hold after the marker: random (incompressible bytes), text (chat-like JSON lines), file"`
	File        string          `yaml:"file" doc:"with payload_kind: file, the file whose bytes are cycled to the payload size"`
	Reads       string          `yaml:"reads" default:"batched" doc:"when the client reads what arrives: batched (it sleeps through arrivals until its next send window, latency ends at the kernel's receive timestamp) or prompt (it wakes for each arrival)"`

	open int         // connections open before the phase (Defaults)
	slo  *vm.Program // compiled by Validate
	vars []string    // the variables the SLO reads, for a failing step's why
}

// searchMetrics are the metrics a search phase reports (beside
// metrics.Common over the whole search).
var searchMetrics = []metrics.Def{
	{Name: "capacity", Kind: metrics.Float, Doc: "highest target (messages/s over every connection) whose step held the SLO; 0 = none did"},
	{Name: "capacity_conns", Kind: metrics.Count, Doc: "connections of that step (vary: connections: the number of users found)"},
	{Name: "steps", Kind: metrics.Count, Doc: "steps measured, bisection included"},
	{Name: "client_limited", Kind: metrics.Bool, Doc: "the search stopped at a client-bound step: capacity is the client's bound, the server's is higher or unknown"},
	{Name: "max_reached", Kind: metrics.Bool, Doc: "every step up to max held the SLO: capacity ≥ max"},
	{Name: metrics.P50, Kind: metrics.Duration, Doc: "50th percentile latency at the capacity step"},
	{Name: metrics.P99, Kind: metrics.Duration, Doc: "99th percentile latency at the capacity step"},
	{Name: metrics.P999, Kind: metrics.Duration, Doc: "99.9th percentile latency at the capacity step"},
	{Name: "used", Kind: metrics.Duration, Doc: "wall time of the search"},
}

func init() {
	Register(Kind{
		Name:  "search",
		Paced: true,
		Doc:   "capacity under an SLO: open-loop rate steps growing to the first that fails, then bisection; stops when the client saturates",
		New:   func() Phase { return &Search{} },
		Title: "[Search] Report",
		Columns: []Column{
			{Metric: ColFramework},
			{Header: "Capacity", Metric: "capacity", Delta: true, Format: FormatRate},
			{Header: "Conns", Metric: "capacity_conns", Format: FormatInt},
			{Header: "TP50", Metric: metrics.P50, Delta: true},
			{Header: "TP99", Metric: metrics.P99, Delta: true},
			{Header: "TP999", Metric: metrics.P999, Delta: true},
			{Header: "Steps", Metric: "steps", Format: FormatInt},
			{Header: "Client-limited", Metric: "client_limited"},
			{Header: "Max reached", Metric: "max_reached"},
			{Header: "Used", Metric: "used"},
			{Metric: ColServer},
			{Metric: ColClientCPU},
			{Metric: ColVerdict},
		},
		Metrics: searchMetrics,
	})
}

// Defaults implements ContextDefaults: factor 2 unless step is given; it
// remembers the connections open before the phase (Opens).
func (p *Search) Defaults(c Context) {
	if p.Factor == 0 && p.Step == 0 {
		p.Factor = DefaultSearchFactor
	}
	p.open = c.Conns
	if p.Vary == VaryRate && p.Connections == 0 {
		p.Connections = c.Conns
	}
}

// Opens implements Opener: with vary: connections, the search opens up to
// max connections minus those open before it (the host's preflight counts
// them); with vary: rate, none.
func (p *Search) Opens() (conns, concurrency int) {
	if p.Vary != VaryConnections {
		return 0, 0
	}
	n := max(0, int(p.Max)-p.open)
	return n, min(DefaultConnectConcurrency, n)
}

// Message implements Messenger: search messages are binary.
func (p *Search) Message() (int, bool) { return p.Bytes(), false }

// Bytes returns the payload size in bytes (the default before Defaults ran).
func (p *Search) Bytes() int {
	if p.Payload == nil {
		return DefaultRatePayload
	}
	return int(*p.Payload)
}

// Validate implements Phase. It compiles the SLO against a rate step's
// metrics and evaluates it once against zero values, with the assertions'
// memory budget and time bound: a typo, a wrong type or an expression too
// costly to evaluate fails the plan's load.
func (p *Search) Validate(c Context) []FieldError {
	errs := append(checkReads(p.Reads), validatePayloadKind(p.PayloadKind, p.File, p.Bytes())...)
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{field, fmt.Sprintf(format, args...)})
	}
	conns := p.Vary == VaryConnections
	switch p.Vary {
	case VaryRate:
		if c.Conns == 0 {
			add("", "needs open connections: put a connect phase before it (or search with vary: connections)")
		}
		if c.Conns > 0 && p.Connections > c.Conns {
			add("connections", "must be <= the connections opened before it (%d), got %d", c.Conns, p.Connections)
		}
		if p.Rate != 0 {
			add("rate", "is for vary: connections (messages per connection per second); with vary: rate, start, step and max are messages/s over every connection")
		}
	case VaryConnections:
		if !(p.Rate > 0) {
			add("rate", "must be > 0 messages per connection per second with vary: connections, got %s", p.Rate)
		}
		if p.Connections != 0 {
			add("connections", "is for vary: rate; with vary: connections, start, step and max are connections")
		}
	default:
		add("vary", "must be %s or %s, got %q", VaryRate, VaryConnections, p.Vary)
	}
	unit := "messages/s"
	if conns {
		unit = "connections"
	}
	if !(p.Start > 0) {
		add("start", "must be > 0 %s, got %s", unit, p.Start)
	}
	if !(p.Max >= p.Start) {
		add("max", "must be >= start (%s), got %s", p.Start, p.Max)
	}
	if conns {
		for _, f := range []struct {
			name string
			v    units.Rate
		}{{"start", p.Start}, {"step", p.Step}, {"max", p.Max}} {
			if f.v != units.Rate(math.Trunc(float64(f.v))) {
				add(f.name, "must be a whole number of connections with vary: connections, got %s", f.v)
			}
		}
	}
	switch {
	case p.Factor != 0 && p.Step != 0:
		add("step", "give factor or step, not both")
	case p.Step == 0 && p.Factor <= 1:
		add("factor", "must be > 1, got %g", p.Factor)
	case p.Start > 0 && p.Max >= p.Start:
		if n := p.growingSteps(); n > MaxSearchSteps {
			field := "factor"
			if p.Step != 0 {
				field = "step"
			}
			add(field, "makes %d steps from start %s to max %s, at most %d: grow faster", n, p.Start, p.Max, MaxSearchSteps)
		}
	}
	if err := p.compile(); err != nil {
		add("slo", "%q: %v", p.SLO, err)
	}
	return errs
}

// growingSteps counts the steps from start to max (max included), up to
// MaxSearchSteps+1.
func (p *Search) growingSteps() int {
	n := 1
	for x := float64(p.Start); x < float64(p.Max) && n <= MaxSearchSteps; n++ {
		x = p.next(x)
	}
	return n
}

// next is the step after x, at most max; with vary: connections, a whole
// number of connections greater than x.
func (p *Search) next(x float64) float64 {
	y := x * p.Factor
	if p.Step != 0 {
		y = x + float64(p.Step)
	}
	if p.Vary == VaryConnections {
		y = max(math.Round(y), x+1)
	}
	return min(y, float64(p.Max))
}

// sloEnv is the SLO's environment: a rate step's metrics (its own and
// metrics.Common over the step) at their zero values.
func sloEnv() map[string]any {
	e := map[string]any{}
	for _, d := range MetricDefs("rate") {
		e[d.Name] = d.Kind.Zero()
	}
	return e
}

// compile compiles the SLO (once) and dry-runs it.
func (p *Search) compile() error {
	if p.slo != nil || strings.TrimSpace(p.SLO) == "" {
		return nil // required: the tag check says so
	}
	prog, err := expr.Compile(p.SLO, expr.Env(sloEnv()), expr.AsBool(), exprlimit.Builtins())
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		if strings.Contains(msg, "mismatched types time.Duration") || strings.Contains(msg, "and time.Duration)") {
			msg += `: latencies are durations, write the bound as one, e.g. duration("5ms")`
		}
		return fmt.Errorf("%s", msg)
	}
	if err := exprlimit.DryRun(prog, sloEnv(), exprlimit.DryRunTimeout); err != nil {
		return err
	}
	p.slo = prog
	p.vars = identifiers(prog.Node())
	return nil
}

// identifiers lists the variables an expression reads, sorted.
func identifiers(root ast.Node) []string {
	v := &identVisitor{seen: map[string]bool{}}
	ast.Walk(&root, v)
	out := make([]string, 0, len(v.seen))
	for n := range v.seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

type identVisitor struct{ seen map[string]bool }

func (v *identVisitor) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok {
		if _, metric := sloEnv()[id.Value]; metric {
			v.seen[id.Value] = true
		}
	}
}

// searcher is one run of a search phase.
type searcher struct {
	p     *Search
	env   *Env
	rate  *Efficiency // the rate kind's efficiency figures, for each step's metrics
	steps []result.Step
	out   Outcome
	best  int    // index in steps of the capacity step; -1 = none
	file  []byte // payload_kind: file, its bytes (read once at Run)
}

// Run implements Phase.
func (p *Search) Run(ctx context.Context, env *Env) (Outcome, error) {
	if err := p.compile(); err != nil {
		return Outcome{}, fmt.Errorf("slo: %w", err)
	}
	if p.Vary == VaryRate && env.Driver.Conns() <= 0 {
		return Outcome{}, fmt.Errorf("no open connections")
	}
	s := &searcher{p: p, env: env, best: -1}
	var err error
	if s.file, err = payloadFile(p.PayloadKind, p.File, p.Bytes()); err != nil {
		return Outcome{}, err
	}
	if k, ok := Lookup("rate"); ok {
		s.rate = k.Efficiency
	}
	began := time.Now()
	err = s.search(ctx)
	m := metrics.Values{
		"capacity":       float64(0),
		"capacity_conns": int64(0),
		"steps":          int64(len(s.steps)),
		"client_limited": false,
		"max_reached":    false,
		metrics.P50:      time.Duration(0),
		metrics.P99:      time.Duration(0),
		metrics.P999:     time.Duration(0),
		"used":           time.Since(began),
	}
	if s.best >= 0 {
		b := s.steps[s.best]
		m["capacity"], m["capacity_conns"] = b.Target, int64(b.Conns)
		m[metrics.P50], m[metrics.P99], m[metrics.P999] = b.P50, b.P99, b.P999
	}
	for k, v := range s.limits() {
		m[k] = v
	}
	s.out.Metrics = m
	s.out.Steps = s.steps
	return s.out, err
}

// limits are the bool metrics that say capacity is a lower bound.
func (s *searcher) limits() metrics.Values {
	n := len(s.steps)
	v := metrics.Values{}
	if n == 0 {
		return v
	}
	last := s.steps[n-1]
	v["client_limited"] = last.Verdict == VerdictClientBound
	v["max_reached"] = last.Verdict == VerdictPass && last.Target >= s.target(float64(s.p.Max))
	return v
}

// target is the messages/s of a step at x (messages/s, or connections).
func (s *searcher) target(x float64) float64 {
	if s.p.Vary == VaryConnections {
		return x * float64(s.p.Rate)
	}
	return x
}

// what names a step for people: "20000 msg/s", "400 connections × 1 msg/s".
func (s *searcher) what(x float64) string {
	if s.p.Vary == VaryConnections {
		return fmt.Sprintf("%d connections × %s msg/s", int(x), s.p.Rate)
	}
	return fmt.Sprintf("%s msg/s", num(x))
}

func num(x float64) string { return units.Rate(math.Round(x*100) / 100).String() }

// search grows the steps to the first failing one, then bisects.
func (s *searcher) search(ctx context.Context) error {
	p := s.p
	lo, hi := 0.0, 0.0 // last passing, first failing (0 = none yet)
	for x := float64(p.Start); ; x = p.next(x) {
		st, err := s.measure(ctx, x, false)
		if err != nil || st == nil {
			return err
		}
		switch st.Verdict {
		case VerdictClientBound:
			s.clientBound(x, st, lo)
			return nil
		case VerdictFail:
			hi = x
		default:
			lo = x
		}
		if hi > 0 {
			break
		}
		if x >= float64(p.Max) {
			s.out.Stop = fmt.Sprintf("max reached: every step up to %s held the SLO: capacity ≥ %s msg/s", s.what(x), num(s.target(x)))
			s.out.Warnings = append(s.out.Warnings, s.out.Stop+"; raise max to find the limit")
			return nil
		}
	}
	if lo == 0 {
		s.out.Stop = fmt.Sprintf("slo failed at the first step (%s): capacity < %s msg/s", s.what(hi), num(s.target(hi)))
		s.out.Warnings = append(s.out.Warnings, s.out.Stop+"; lower start")
		return nil
	}
	firstFail := hi
	for !s.close(lo, hi) {
		mid := (lo + hi) / 2
		if p.Vary == VaryConnections {
			mid = math.Floor(mid)
		}
		st, err := s.measure(ctx, mid, true)
		if err != nil || st == nil {
			return err
		}
		switch st.Verdict {
		case VerdictClientBound:
			s.clientBound(mid, st, lo)
			return nil
		case VerdictFail:
			hi = mid
		default:
			lo = mid
		}
	}
	s.out.Stop = fmt.Sprintf("slo failed at %s; bisected to %s (passes) – %s (fails), within %s%%: capacity %s msg/s",
		s.what(firstFail), s.what(lo), s.what(hi), num(100*p.Tolerance), num(s.target(lo)))
	return nil
}

// close reports whether the bisection is done: the gap is within
// tolerance of the passing side (and, for connections, no whole number is
// left between them).
func (s *searcher) close(lo, hi float64) bool {
	if s.p.Vary == VaryConnections && hi-lo <= 1 {
		return true
	}
	return hi-lo <= s.p.Tolerance*lo
}

// clientBound ends the search at a client-bound step at x: capacity is at
// least x if the step held the SLO anyway, else at least the last passing
// step lo.
func (s *searcher) clientBound(x float64, st *result.Step, lo float64) {
	bound := lo
	if st.Why == "" { // the SLO held, with the client saturated
		bound = x
		s.best = len(s.steps) - 1
	}
	s.out.Stop = fmt.Sprintf("client-bound at %s: capacity ≥ %s msg/s", s.what(x), num(s.target(bound)))
	s.out.Warnings = append(s.out.Warnings, s.out.Stop+": the client, not the server, set this bound, so an assertion needing more does not pass (give the client more CPUs or shards)")
}

// measure runs one step at x and records it; nil with a nil error when
// the search must stop without a verdict (the reason is in the outcome).
func (s *searcher) measure(ctx context.Context, x float64, bisect bool) (*result.Step, error) {
	p, env := s.p, s.env
	var conns int
	var perConn float64
	short := ""
	if p.Vary == VaryConnections {
		want := int(x)
		if open := env.Driver.Conns(); open < want {
			if err := s.open(ctx, want-open); err != nil {
				return nil, err
			}
		}
		conns = min(want, env.Driver.Conns())
		perConn = float64(p.Rate)
		if conns < want {
			short = fmt.Sprintf("only %d of %d connections open", conns, want)
		}
	} else {
		conns = min(p.Connections, env.Driver.Conns())
		if p.Connections == 0 {
			conns = env.Driver.Conns()
		}
		perConn = x / float64(max(conns, 1))
	}
	if conns <= 0 {
		s.out.Stop = fmt.Sprintf("no open connections at %s", s.what(x))
		s.out.Failed, s.out.Error = true, s.out.Stop
		return nil, nil
	}
	params := client.RateParams{
		Duration:         p.Settle.D(),
		Rate:             perConn,
		Payload:          p.Bytes(),
		Connections:      conns,
		Batch:            int(p.Batch),
		MaxInflight:      p.MaxInflight,
		MaxInflightBytes: int64(p.MaxInflightBytes),
		Drain:            p.Drain.D(),
		LateAfter:        p.LateAfter.D(),
		Verify:           p.Verify == nil || *p.Verify,
		Slack:            clientSlack(p.Slack),
		Reads:            p.Reads,
		PayloadKind:      p.PayloadKind,
		PayloadFile:      s.file,
	}
	if params.Duration > 0 {
		settle := params
		if _, err := run[client.RateResult](ctx, env, &settle); err != nil {
			return nil, err
		}
	}
	var stop func(metrics.Values, *Efficiency) string
	if env.Window != nil {
		stop = env.Window()
	}
	params.Duration = p.StepDuration.D()
	if open := env.Driver.Conns(); open < conns {
		// Connections were lost while settling: measure what is left,
		// and the step cannot pass.
		short = strings.TrimPrefix(short+fmt.Sprintf("; %d of %d connections lost while settling", conns-open, conns), "; ")
		params.Connections = open
		if p.Vary == VaryRate && open > 0 {
			perConn = x / float64(open) // the step's target stays
			params.Rate = perConn
		}
		if open <= 0 {
			s.out.Stop = fmt.Sprintf("every connection was lost at %s", s.what(x))
			s.out.Warnings = append(s.out.Warnings, s.out.Stop)
			return nil, nil
		}
	}
	r, err := run[client.RateResult](ctx, env, &params)
	m := metrics.Values{}
	if r != nil {
		m = RateMetrics(*r, perConn, int64(p.Bytes()))
	}
	if stop != nil {
		stop(m, s.rate)
	}
	if r == nil || err != nil {
		return nil, err // interrupted: the steps so far are the result
	}
	st := s.record(x, m, bisect)
	switch {
	case r.Failed > 0:
		st.Verdict, st.Why = VerdictFail, fmt.Sprintf("%d echoes corrupt", r.Failed)
		s.out.Stop = fmt.Sprintf("corrupt echoes at %s", s.what(x))
		s.out.Failed = true
		s.out.Error = fmt.Sprintf("%d of %d echoes were corrupt at %s: %s", r.Failed, r.Sent, s.what(x), errorSummary(r.Errors))
		return nil, nil
	case r.Stopped == client.StopNoConnections:
		st.Verdict, st.Why = VerdictFail, "every connection was lost"
		s.out.Stop = fmt.Sprintf("every connection was lost at %s", s.what(x))
		s.out.Warnings = append(s.out.Warnings, s.out.Stop)
		return nil, nil
	}
	ok, why, err := s.holds(m)
	if err != nil {
		st.Verdict, st.Why = VerdictFail, "slo: "+err.Error()
		s.out.Stop = fmt.Sprintf("slo could not be evaluated at %s", s.what(x))
		s.out.Failed, s.out.Error = true, fmt.Sprintf("slo %q at %s: %v", p.SLO, s.what(x), err)
		return nil, nil
	}
	if r.Scheduled > 0 && float64(r.Sent) < RateShortfall*float64(r.Scheduled) {
		// The step did not deliver its target: whatever held, it held at a
		// lower rate. Not a pass (a step where the client saturated says
		// client-bound below).
		short = strings.TrimPrefix(short+fmt.Sprintf("; shortfall: %d of %d scheduled sent (%.0f%%)", r.Sent, r.Scheduled, 100*float64(r.Sent)/float64(r.Scheduled)), "; ")
	}
	if short != "" {
		ok, why = false, short+"; "+why
	}
	switch {
	case m.Bool(metrics.ClientBound):
		st.Verdict = VerdictClientBound
		if !ok {
			st.Why = why
		}
	case ok:
		st.Verdict = VerdictPass
		s.best = len(s.steps) - 1
	default:
		st.Verdict, st.Why = VerdictFail, why
	}
	return st, nil
}

// open opens n more connections for a vary: connections step; failures
// show as the step's shortfall.
func (s *searcher) open(ctx context.Context, n int) error {
	_, err := run[client.ConnectResult](ctx, s.env, &client.ConnectParams{
		Connections: n,
		Concurrency: min(DefaultConnectConcurrency, n),
		Timeout:     5 * time.Second,
		Retries:     3,
	})
	return err
}

// record appends the step measured at x with metrics m.
func (s *searcher) record(x float64, m metrics.Values, bisect bool) *result.Step {
	s.steps = append(s.steps, result.Step{
		Target:      s.target(x),
		Conns:       int(m.Int("conns")),
		Achieved:    m.Float("achieved_rate"),
		Scheduled:   m.Int("scheduled"),
		Sent:        m.Int("sent"),
		Recv:        m.Int("recv"),
		Late:        m.Int("late"),
		Lost:        m.Int("lost"),
		Failed:      m.Int("failed"),
		P50:         m.Dur(metrics.P50),
		P99:         m.Dur(metrics.P99),
		P999:        m.Dur(metrics.P999),
		ServerCPU:   m.Float(metrics.CPUAvg),
		ClientCPU:   m.Float(metrics.ClientCPUAvg),
		ClientBound: m.Bool(metrics.ClientBound),
		Bisect:      bisect,
	})
	return &s.steps[len(s.steps)-1]
}

// holds evaluates the SLO on a step's metrics; why lists the values it
// read.
func (s *searcher) holds(m metrics.Values) (ok bool, why string, err error) {
	e := sloEnv()
	for k, v := range m {
		if _, known := e[k]; known {
			e[k] = v
		}
	}
	v, err := exprlimit.Eval(s.p.slo, e)
	if err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		return false, "", fmt.Errorf("%s", first)
	}
	ok, _ = v.(bool) // AsBool guarantees a bool
	parts := make([]string, 0, len(s.p.vars))
	for _, n := range s.p.vars {
		parts = append(parts, n+"="+sloValue(e[n]))
	}
	return ok, strings.Join(parts, " "), nil
}

// sloValue formats a metric value for a step's why.
func sloValue(v any) string {
	switch x := v.(type) {
	case time.Duration:
		return x.Round(10 * time.Microsecond).String()
	case float64:
		return num(x)
	}
	return fmt.Sprint(v)
}
