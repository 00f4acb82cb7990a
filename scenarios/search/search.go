// Package search is the search phase kind: a server's capacity under an
// SLO, found by open-loop steps of the rate kind (scenarios/rate runs
// each step and measures it; run.go grows, bisects and judges them). It
// registers itself with the scenarios in init; its steps are rate phases
// to the client, so removing rate removes it (internal/layering's
// kindUses); scenarios/all imports it.
package search

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/wsplan/wsplan/internal/exprlimit"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/rate"
)

// The search phase's key and the metrics only it reports (each step's are
// the open loop's, openloop.go).
const (
	Name                = "search"
	searchCapacity      = "capacity"
	searchCapacityConns = "capacity_conns"
	searchSteps         = "steps"
	searchClientLimited = "client_limited"
	searchMaxReached    = "max_reached"
)

// Search bounds and defaults not expressible as tags.
const (
	// DefaultFactor is Search.Factor when neither factor nor step is
	// given.
	DefaultFactor = 2
	// MaxSteps bounds the growing steps from start to max (the
	// bisection after them is bounded by tolerance): a search is a bounded
	// number of bounded steps.
	MaxSteps = 100
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

// Phase finds a server's capacity under an SLO: open-loop steps of the
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
type Phase struct {
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
	// The rate phase's keys of how it sends, passed to every step.
	rate.Send `yaml:",inline"`

	open int         // connections open before the phase (Defaults)
	slo  *vm.Program // compiled by Validate
	vars []string    // the variables the SLO reads, for a failing step's why
}

// searchMetrics are the metrics a search phase reports (beside
// metrics.Common over the whole search).
var searchMetrics = []metrics.Def{
	{Name: searchCapacity, Kind: metrics.Float, Doc: "highest target (messages/s over every connection) whose step held the SLO; 0 = none did"},
	{Name: searchCapacityConns, Kind: metrics.Count, Doc: "connections of that step (vary: connections: the number of users found)"},
	{Name: searchSteps, Kind: metrics.Count, Doc: "steps measured, bisection included"},
	{Name: searchClientLimited, Kind: metrics.Bool, Doc: "the search stopped at a client-bound step: capacity is the client's bound, the server's is higher or unknown"},
	{Name: searchMaxReached, Kind: metrics.Bool, Doc: "every step up to max held the SLO: capacity ≥ max"},
	{Name: metrics.P50, Kind: metrics.Duration, Doc: "50th percentile latency at the capacity step"},
	{Name: metrics.P99, Kind: metrics.Duration, Doc: "99th percentile latency at the capacity step"},
	{Name: metrics.P999, Kind: metrics.Duration, Doc: "99.9th percentile latency at the capacity step"},
	{Name: metrics.Used, Kind: metrics.Duration, Doc: "wall time of the search"},
}

func init() {
	scenarios.Register(scenarios.Kind{
		Name:       Name,
		Paced:      true,
		Throughput: scenarios.Throughput{Metric: searchCapacity, Unit: "msg/s at the SLO", Messages: true},
		Doc:        "capacity under an SLO: open-loop rate steps growing to the first that fails, then bisection; stops when the client saturates",
		New:        func() scenarios.Phase { return &Phase{} },
		Title:      "[Search] Report",
		Columns: []scenarios.Column{
			{Metric: scenarios.ColFramework},
			{Header: "Capacity", Metric: searchCapacity, Delta: true, Format: scenarios.FormatRate},
			{Header: "Conns", Metric: searchCapacityConns, Format: scenarios.FormatInt},
			{Header: "TP50", Metric: metrics.P50, Delta: true},
			{Header: "TP99", Metric: metrics.P99, Delta: true},
			{Header: "TP999", Metric: metrics.P999, Delta: true},
			{Header: "Steps", Metric: searchSteps, Format: scenarios.FormatInt},
			{Header: "Client-limited", Metric: searchClientLimited},
			{Header: "Max reached", Metric: searchMaxReached},
			{Header: "Used", Metric: metrics.Used},
			{Metric: scenarios.ColServer},
			{Metric: scenarios.ColClientCPU},
			{Metric: scenarios.ColVerdict},
		},
		Metrics: searchMetrics,
	})
}

// Defaults implements ContextDefaults: factor 2 unless step is given; it
// remembers the connections open before the phase (Opens).
func (p *Phase) Defaults(c scenarios.Context) {
	if p.Factor == 0 && p.Step == 0 {
		p.Factor = DefaultFactor
	}
	p.open = c.Conns
	if p.Vary == VaryRate && p.Connections == 0 {
		p.Connections = c.Conns
	}
}

// Opens implements Opener: with vary: connections, the search opens up to
// max connections minus those open before it (the host's preflight counts
// them); with vary: rate, none.
func (p *Phase) Opens() (conns, concurrency int) {
	if p.Vary != VaryConnections {
		return 0, 0
	}
	n := max(0, int(p.Max)-p.open)
	return n, min(scenarios.DefaultConnectConcurrency, n)
}

// Message implements Messenger: search messages are binary.
func (p *Phase) Message() (int, bool) { return p.Bytes(), false }

// Bytes returns the payload size in bytes (its tag default before Defaults
// ran).
func (p *Phase) Bytes() int { return scenarios.SizeOr(p, "payload", p.Payload) }

// Validate implements Phase. It compiles the SLO against a rate step's
// metrics and evaluates it once against zero values, with the assertions'
// memory budget and time bound: a typo, a wrong type or an expression too
// costly to evaluate fails the plan's load.
func (p *Phase) Validate(c scenarios.Context) []scenarios.FieldError {
	errs := append(scenarios.CheckReads(p.Reads), scenarios.ValidatePayloadKind(p.PayloadKind, p.File, p.Bytes())...)
	add := func(field, format string, args ...any) {
		errs = append(errs, scenarios.FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
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
		if n := p.growingSteps(); n > MaxSteps {
			field := "factor"
			if p.Step != 0 {
				field = "step"
			}
			add(field, "makes %d steps from start %s to max %s, at most %d: grow faster", n, p.Start, p.Max, MaxSteps)
		}
	}
	if err := p.compile(); err != nil {
		add("slo", "%q: %v", p.SLO, err)
	}
	return errs
}

// growingSteps counts the steps from start to max (max included), up to
// MaxSteps+1.
func (p *Phase) growingSteps() int {
	n := 1
	for x := float64(p.Start); x < float64(p.Max) && n <= MaxSteps; n++ {
		x = p.next(x)
	}
	return n
}

// next is the step after x, at most max; with vary: connections, a whole
// number of connections greater than x.
func (p *Phase) next(x float64) float64 {
	y := x * p.Factor
	if p.Step != 0 {
		y = x + float64(p.Step)
	}
	if p.Vary == VaryConnections {
		y = max(math.Round(y), x+1)
	}
	return min(y, float64(p.Max))
}

// sloEnv is the SLO's environment: a step's open-loop metrics (its own and
// metrics.Common over the step) at their zero values.
func sloEnv() map[string]any {
	e := map[string]any{}
	for _, d := range metrics.Join(rate.Defs, metrics.Common) {
		e[d.Name] = d.Kind.Zero()
	}
	return e
}

// compile compiles the SLO (once) and dry-runs it.
func (p *Phase) compile() error {
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
