package search

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/exprlimit"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/rate"
)

// A search's run: the steps, the bisection and each step's verdict.

// searcher is one run of a search phase.
type searcher struct {
	p     *Phase
	env   *scenarios.Env
	steps []result.Step
	out   scenarios.Outcome
	best  int    // index in steps of the capacity step; -1 = none
	file  []byte // payload_kind: file, its bytes (read once at Run)
}

// Run implements Phase.
func (p *Phase) Run(ctx context.Context, env *scenarios.Env) (scenarios.Outcome, error) {
	if err := p.compile(); err != nil {
		return scenarios.Outcome{}, fmt.Errorf("slo: %w", err)
	}
	if p.Vary == VaryRate && env.Driver.Conns() <= 0 {
		return scenarios.Outcome{}, fmt.Errorf("no open connections")
	}
	s := &searcher{p: p, env: env, best: -1}
	var err error
	if s.file, err = scenarios.PayloadFile(p.PayloadKind, p.File, p.Bytes()); err != nil {
		return scenarios.Outcome{}, err
	}
	began := time.Now()
	err = s.search(ctx)
	m := metrics.Values{
		searchCapacity:      float64(0),
		searchCapacityConns: int64(0),
		searchSteps:         int64(len(s.steps)),
		searchClientLimited: false,
		searchMaxReached:    false,
		metrics.P50:         time.Duration(0),
		metrics.P99:         time.Duration(0),
		metrics.P999:        time.Duration(0),
		metrics.Used:        time.Since(began),
	}
	if s.best >= 0 {
		b := s.steps[s.best]
		m[searchCapacity], m[searchCapacityConns] = b.Target, int64(b.Conns)
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
	v[searchClientLimited] = last.Verdict == VerdictClientBound
	v[searchMaxReached] = last.Verdict == VerdictPass && last.Target >= s.target(float64(s.p.Max))
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
			s.stop("; raise max to find the limit", "max reached: every step up to %s held the SLO: capacity ≥ %s msg/s", s.what(x), num(s.target(x)))
			return nil
		}
	}
	if lo == 0 {
		s.stop("; lower start", "slo failed at the first step (%s): capacity < %s msg/s", s.what(hi), num(s.target(hi)))
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
	s.stop(": the client, not the server, set this bound, so an assertion needing more does not pass (give the client more CPUs or shards)",
		"client-bound at %s: capacity ≥ %s msg/s", s.what(x), num(s.target(bound)))
}

// stop ends the search without a verdict on the step: why (a format)
// becomes the outcome's Stop, and a warning with more added.
func (s *searcher) stop(more, why string, args ...any) {
	s.out.Stop = fmt.Sprintf(why, args...)
	s.out.Warnings = append(s.out.Warnings, s.out.Stop+more)
}

// fail ends the search with a failed outcome: stop is its Stop, err its
// Error.
func (s *searcher) fail(stop, err string) {
	s.out.Stop = stop
	s.out.Failed, s.out.Error = true, err
}

// step is one step being measured: its target and the open loop that
// measures it.
type step struct {
	x       float64     // the target: messages/s, or connections
	params  rate.Params // Duration is the settle time, then the measured time
	perConn float64     // messages per connection per second
	short   string      // why the step cannot pass, whatever it measures; "" = none
}

// addShort adds a reason the step cannot pass.
func (st *step) addShort(why string) {
	st.short = strings.TrimPrefix(st.short+"; "+why, "; ")
}

// measure runs one step at x and records it; nil with a nil error when
// the search must stop without a verdict (the reason is in the outcome).
func (s *searcher) measure(ctx context.Context, x float64, bisect bool) (*result.Step, error) {
	st, err := s.prepare(ctx, x)
	if st == nil || err != nil {
		return nil, err
	}
	r, m, err := s.sample(ctx, st)
	if r == nil || err != nil {
		return nil, err // interrupted or stopped: the steps so far are the result
	}
	return s.judge(st, r, m, bisect), nil
}

// prepare sets a step at x up: its connections (with vary: connections,
// opening those it lacks) and its open loop; nil when there is no
// connection to send on.
func (s *searcher) prepare(ctx context.Context, x float64) (*step, error) {
	p, env := s.p, s.env
	st := &step{x: x}
	var conns int
	if p.Vary == VaryConnections {
		want := int(x)
		if open := env.Driver.Conns(); open < want {
			if err := s.open(ctx, want-open); err != nil {
				return nil, err
			}
		}
		conns = min(want, env.Driver.Conns())
		st.perConn = float64(p.Rate)
		if conns < want {
			st.addShort(fmt.Sprintf("only %d of %d connections open", conns, want))
		}
	} else {
		conns = min(p.Connections, env.Driver.Conns())
		if p.Connections == 0 {
			conns = env.Driver.Conns()
		}
		st.perConn = x / float64(max(conns, 1))
	}
	if conns <= 0 {
		why := fmt.Sprintf("no open connections at %s", s.what(x))
		s.fail(why, why)
		return nil, nil
	}
	st.params = rate.Params{
		Duration:    p.Settle,
		Rate:        units.Rate(st.perConn),
		Connections: conns,
		Send:        p.Send,
		PayloadFile: s.file,
	}
	return st, nil
}

// sample settles the step, then measures it in a sampling window of its
// own (the step's CPU, memory and client_bound); r is nil when the search
// must stop (interrupted, or every connection lost while settling).
func (s *searcher) sample(ctx context.Context, st *step) (*rate.Result, metrics.Values, error) {
	env := s.env
	if st.params.Duration > 0 {
		settle := st.params
		if _, err := scenarios.Drive[rate.Result](ctx, env, &settle); err != nil {
			return nil, nil, err
		}
	}
	st.params.Duration = s.p.StepDuration
	if conns, open := st.params.Connections, env.Driver.Conns(); open < conns {
		// Connections were lost while settling: measure what is left,
		// and the step cannot pass.
		if open <= 0 {
			s.stop("", "every connection was lost at %s", s.what(st.x))
			return nil, nil, nil
		}
		st.addShort(fmt.Sprintf("%d of %d connections lost while settling", conns-open, conns))
		st.params.Connections = open
		if s.p.Vary == VaryRate {
			st.perConn = st.x / float64(open) // the step's target stays
			st.params.Rate = units.Rate(st.perConn)
		}
	}
	var stop func(metrics.Values, *scenarios.Efficiency, []scenarios.Span) string
	if env.Window != nil {
		stop = env.Window()
	}
	start := time.Now()
	r, err := scenarios.Drive[rate.Result](ctx, env, &st.params)
	m := metrics.Values{}
	var behind []scenarios.Span
	if r != nil {
		m = rate.Values(*r, st.perConn, int64(s.p.Bytes()))
		behind, m[metrics.Behind] = rate.Behind(start, *r, &st.params)
	}
	if stop != nil {
		stop(m, rate.Efficiency, behind)
	}
	return r, m, err
}

// judge records the step measured as r and m, with its verdict: corrupt
// echoes, no connection left or an SLO that cannot be evaluated stop the
// search (nil); else pass, fail (the SLO did not hold, or the step could
// not deliver its target) or client-bound.
func (s *searcher) judge(st *step, r *rate.Result, m metrics.Values, bisect bool) *result.Step {
	x := st.x
	rec := s.record(x, m, bisect)
	switch {
	case r.Failed > 0:
		rec.Verdict, rec.Why = VerdictFail, fmt.Sprintf("%d echoes corrupt", r.Failed)
		s.fail(fmt.Sprintf("corrupt echoes at %s", s.what(x)),
			fmt.Sprintf("%d of %d echoes were corrupt at %s: %s", r.Failed, r.Sent, s.what(x), scenarios.ErrorSummary(r.Errors)))
		return nil
	case r.Stopped == client.StopNoConnections:
		rec.Verdict, rec.Why = VerdictFail, "every connection was lost"
		s.stop("", "every connection was lost at %s", s.what(x))
		return nil
	}
	ok, why, err := s.holds(m)
	if err != nil {
		rec.Verdict, rec.Why = VerdictFail, "slo: "+err.Error()
		s.fail(fmt.Sprintf("slo could not be evaluated at %s", s.what(x)), fmt.Sprintf("slo %q at %s: %v", s.p.SLO, s.what(x), err))
		return nil
	}
	if rate.Shortfall(*r) {
		// The step did not deliver its target: whatever held, it held at a
		// lower rate. Not a pass; a step whose client saturated while it
		// was behind (whoBehind) says client-bound below, whatever the
		// whole window's average.
		clientBound, _ := scenarios.BoundBehind(m)
		kept := scenarios.KeptUp(m)
		st.addShort(fmt.Sprintf("shortfall: %d of %d scheduled sent (%.0f%%): %s", r.Sent, r.Scheduled, 100*float64(r.Sent)/float64(r.Scheduled), kept))
		rec.ClientBound = rec.ClientBound || clientBound
	}
	if st.short != "" {
		ok, why = false, st.short+"; "+why
	}
	switch {
	case rec.ClientBound:
		rec.Verdict = VerdictClientBound
		if !ok {
			rec.Why = why
		}
	case ok:
		rec.Verdict = VerdictPass
		s.best = len(s.steps) - 1
	default:
		rec.Verdict, rec.Why = VerdictFail, why
	}
	return rec
}

// open opens n more connections for a vary: connections step, with the
// connect phase's defaults; failures show as the step's shortfall.
func (s *searcher) open(ctx context.Context, n int) error {
	q := &client.ConnectParams{Connections: n, Concurrency: scenarios.OpenConcurrency(n)}
	decl.Defaults(q)
	_, err := scenarios.Drive[client.ConnectResult](ctx, s.env, q)
	return err
}

// record appends the step measured at x with metrics m.
func (s *searcher) record(x float64, m metrics.Values, bisect bool) *result.Step {
	s.steps = append(s.steps, result.Step{
		Target:      s.target(x),
		Conns:       int(m.Int(metrics.Conns)),
		Achieved:    m.Float(metrics.AchievedRate),
		Scheduled:   m.Int(metrics.Scheduled),
		Sent:        m.Int(metrics.Sent),
		Recv:        m.Int(metrics.Recv),
		Late:        m.Int(metrics.Late),
		Lost:        m.Int(metrics.Lost),
		Failed:      m.Int(metrics.Failed),
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
