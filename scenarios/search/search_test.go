package search

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/rate"
	"github.com/wsplan/wsplan/scenarios/scenariotest"
)

// searchDriver is a fake client in front of a fake server that carries
// capacity messages/s: a step above it answers with 100 ms latency, one at
// or below it with 1 ms. Its Window reports the client saturated from
// clientLimit messages/s on (0 = never).
type searchDriver struct {
	conns       int
	capacity    float64
	clientLimit float64
	clientUpto  float64   // the client is bound below this only; 0 = no bound
	targets     []float64 // every rate run's target (settle runs included)
	connects    []int     // connections each connect run asked for
	last        float64
}

func (d *searchDriver) Run(_ context.Context, p client.Params, _ *client.Progress) (client.Result, error) {
	switch q := p.(type) {
	case *rate.Params:
		target := float64(q.Rate) * float64(q.Connections)
		d.last = target
		d.targets = append(d.targets, target)
		n := int64(math.Round(target * q.Duration.D().Seconds()))
		lat := client.NewHistogram()
		v := time.Millisecond
		if target > d.capacity {
			v = 100 * time.Millisecond
		}
		lat.RecordValues(int64(v), max(n, 1))
		return &rate.Result{Conns: q.Connections, Scheduled: n, Sent: n, Recv: n, Used: q.Duration.D(), Latency: client.Hist{Histogram: lat}}, nil
	case *client.ConnectParams:
		d.connects = append(d.connects, q.Connections)
		d.conns += q.Connections
		return &client.ConnectResult{Total: int64(q.Connections), Success: int64(q.Connections)}, nil
	}
	return client.NewResult(p), nil
}

func (d *searchDriver) Conns() int { return d.conns }

// bound reports whether the fake client saturates at target.
func (d *searchDriver) bound(target float64) bool {
	return d.clientLimit > 0 && target >= d.clientLimit && (d.clientUpto == 0 || target < d.clientUpto)
}

// window is the fake Env.Window: server CPU follows the target, the client
// is bound from clientLimit on.
func (d *searchDriver) window() func(metrics.Values, *scenarios.Efficiency, []scenarios.Span) string {
	return func(m metrics.Values, _ *scenarios.Efficiency, _ []scenarios.Span) string {
		m[metrics.CPUAvg] = d.last / 100
		m[metrics.ClientCPUAvg] = 50.0
		bound := d.bound(d.last)
		m[metrics.ClientBound] = bound
		if bound {
			m[metrics.ClientCPUAvg] = 99.0
		}
		return ""
	}
}

// validSearch is a search over 100 open connections with its defaults.
func validSearch(edit func(s *Phase)) (*Phase, scenarios.Context) {
	s := &Phase{Start: 1000, Max: 100000, SLO: `p99 < duration("20ms") && lost == 0`}
	ctx := scenarios.Context{Conns: 100}
	if edit != nil {
		edit(s)
	}
	if s.Vary == VaryConnections {
		ctx = scenarios.Context{}
	}
	scenarios.Defaults(s, ctx)
	return s, ctx
}

func TestSearchValidate(t *testing.T) {
	s, ctx := validSearch(nil)
	if errs := scenarios.Check(s, ctx); len(errs) != 0 {
		t.Fatalf("valid search: %v", errs)
	}
	if s.Vary != "rate" || s.Factor != 2 || s.StepDuration.D() != 10*time.Second || s.Settle.D() != 2*time.Second || s.Tolerance != 0.05 ||
		s.Connections != 100 || s.Bytes() != 1024 || s.Drain.D() != 2*time.Second || s.Verify == nil || !*s.Verify {
		t.Errorf("defaults %+v", s)
	}
	if n, c := s.Opens(); n != 0 || c != 0 {
		t.Errorf("vary rate opens %d, %d", n, c)
	}
	conns, cctx := validSearch(func(s *Phase) { s.Vary, s.Rate, s.Start, s.Step, s.Max = VaryConnections, 1, 100, 100, 5000 })
	if errs := scenarios.Check(conns, cctx); len(errs) != 0 {
		t.Fatalf("valid connections search: %v", errs)
	}
	if n, c := conns.Opens(); n != 5000 || c != 1000 {
		t.Errorf("vary connections opens %d, %d; want 5000, 1000", n, c)
	}
	cases := []struct {
		edit func(s *Phase)
		want string
	}{
		{func(s *Phase) { s.SLO = "" }, "slo: is required"},
		{func(s *Phase) { s.SLO = "p99x < 5" }, `slo: "p99x < 5": unknown name p99x (1:1)`},
		{func(s *Phase) { s.SLO = "p99 < 5" }, `slo: "p99 < 5": invalid operation: < (mismatched types time.Duration and int) (1:5): latencies are durations, write the bound as one, e.g. duration("5ms")`},
		{func(s *Phase) { s.SLO = "lost" }, `slo: "lost": expected bool, but got int64`},
		{func(s *Phase) { s.SLO = "map(1..100000000, # * 2) | len() > 0" }, `slo: "map(1..100000000, # * 2) | len() > 0": exceeds expr's memory budget (1000000) when evaluated once at load with every metric zero: build smaller ranges, arrays or strings`},
		{func(s *Phase) { s.Vary = "users" }, `vary: must be rate or connections, got "users"`},
		{func(s *Phase) { s.Start = 0 }, "start: must be > 0 messages/s, got 0"},
		{func(s *Phase) { s.Max = 500 }, "max: must be >= start (1000), got 500"},
		{func(s *Phase) { s.Factor = 1 }, "factor: must be > 1, got 1"},
		{func(s *Phase) { s.Factor = 1.01 }, "factor: makes 101 steps from start 1000 to max 100000, at most 100: grow faster"},
		{func(s *Phase) { s.Factor, s.Step = 3, 10000 }, "step: give factor or step, not both"},
		{func(s *Phase) { s.Factor, s.Step = 0, 500 }, "step: makes 101 steps from start 1000 to max 100000, at most 100: grow faster"},
		{func(s *Phase) { s.Tolerance = 2 }, "tolerance: must be <= 1, got 2"},
		{func(s *Phase) { s.Tolerance = 0.0001 }, "tolerance: must be >= 0.001, got 0.0001"},
		{func(s *Phase) { s.Rate = 5 }, "rate: is for vary: connections (messages per connection per second); with vary: rate, start, step and max are messages/s over every connection"},
		{func(s *Phase) { s.Connections = 101 }, "connections: must be <= the connections opened before it (100), got 101"},
		{func(s *Phase) { s.StepDuration = -1 }, "step_duration: must be > 0, got -1ns"},
		{func(s *Phase) { s.Payload = size(8) }, "payload: must be >= 16 (the latency marker: 8-byte sequence number and 8-byte scheduled send time), got 8"},
		{func(s *Phase) { s.Vary, s.Start, s.Max = VaryConnections, 10, 100 }, "rate: must be > 0 messages per connection per second with vary: connections, got 0"},
		{func(s *Phase) { s.Vary, s.Rate, s.Start, s.Max = VaryConnections, 1, 10.5, 100 }, "start: must be a whole number of connections with vary: connections, got 10.5"},
	}
	for _, c := range cases {
		s, ctx := validSearch(c.edit)
		errs := scenarios.Check(s, ctx)
		if len(errs) != 1 || errs[0].Error() != c.want {
			t.Errorf("got %v,\nwant [%s]", errs, c.want)
		}
	}
	// vary: rate needs open connections.
	s = &Phase{Start: 1000, Max: 2000, SLO: "lost == 0"}
	scenarios.Defaults(s, scenarios.Context{})
	if errs := scenarios.Check(s, scenarios.Context{}); len(errs) != 1 || errs[0].Error() != "needs open connections: put a connect phase before it (or search with vary: connections)" {
		t.Errorf("no connections: %v", errs)
	}
}

// runSearch runs a search against d with the fake window.
func runSearch(t *testing.T, d *searchDriver, edit func(s *Phase)) (scenarios.Outcome, *Phase) {
	t.Helper()
	s, ctx := validSearch(func(s *Phase) {
		s.StepDuration, s.Settle = units.Duration(time.Second), units.Duration(100*time.Millisecond)
		if edit != nil {
			edit(s)
		}
	})
	if errs := scenarios.Check(s, ctx); len(errs) != 0 {
		t.Fatal(errs)
	}
	env := &scenarios.Env{Driver: d, Window: func() func(metrics.Values, *scenarios.Efficiency, []scenarios.Span) string { return d.window() }}
	out, err := s.Run(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	return out, s
}

func TestSearchRun(t *testing.T) {
	cases := []struct {
		name        string
		capacity    float64 // the fake server's
		clientLimit float64
		clientUpto  float64
		edit        func(s *Phase)
		targets     []float64 // measured steps
		bisect      int       // the first bisection step's index; -1 = none
		capacityOut float64
		conns       int64
		limited     bool
		maxReached  bool
		stop        string
	}{
		{
			name: "bisection", capacity: 10000,
			targets: []float64{1000, 2000, 4000, 8000, 16000, 12000, 10000, 11000, 10500}, bisect: 5,
			capacityOut: 10000, conns: 100,
			stop: "slo failed at 16000 msg/s; bisected to 10000 msg/s (passes) – 10500 msg/s (fails), within 5%: capacity 10000 msg/s",
		},
		{
			name: "linear steps", capacity: 2600, edit: func(s *Phase) { s.Factor, s.Step, s.Max, s.Tolerance = 0, 1000, 10000, 0.1 },
			targets: []float64{1000, 2000, 3000, 2500, 2750}, bisect: 3,
			capacityOut: 2500, conns: 100,
			stop: "slo failed at 3000 msg/s; bisected to 2500 msg/s (passes) – 2750 msg/s (fails), within 10%: capacity 2500 msg/s",
		},
		{
			name: "client saturates first", capacity: 10000, clientLimit: 4000,
			targets: []float64{1000, 2000, 4000}, bisect: -1,
			capacityOut: 4000, conns: 100, limited: true,
			stop: "client-bound at 4000 msg/s: capacity ≥ 4000 msg/s",
		},
		{
			name: "client saturates on a failing step", capacity: 3000, clientLimit: 4000,
			targets: []float64{1000, 2000, 4000}, bisect: -1,
			capacityOut: 2000, conns: 100, limited: true,
			stop: "client-bound at 4000 msg/s: capacity ≥ 2000 msg/s",
		},
		{
			name: "client saturates while bisecting", capacity: 10000, clientLimit: 11000, clientUpto: 14000,
			targets: []float64{1000, 2000, 4000, 8000, 16000, 12000}, bisect: 5,
			capacityOut: 8000, conns: 100, limited: true,
			stop: "client-bound at 12000 msg/s: capacity ≥ 8000 msg/s",
		},
		{
			name: "max reached", capacity: 1e9, edit: func(s *Phase) { s.Max = 5000 },
			targets: []float64{1000, 2000, 4000, 5000}, bisect: -1,
			capacityOut: 5000, conns: 100, maxReached: true,
			stop: "max reached: every step up to 5000 msg/s held the SLO: capacity ≥ 5000 msg/s",
		},
		{
			name: "first step fails", capacity: 500,
			targets: []float64{1000}, bisect: -1,
			stop: "slo failed at the first step (1000 msg/s): capacity < 1000 msg/s",
		},
		{
			name: "connections", capacity: 300,
			edit: func(s *Phase) {
				s.Vary, s.Rate, s.Start, s.Factor, s.Step, s.Max = VaryConnections, 1, 100, 0, 100, 1000
			},
			targets: []float64{100, 200, 300, 400, 350, 325, 312}, bisect: 4,
			capacityOut: 300, conns: 300,
			stop: "slo failed at 400 connections × 1 msg/s; bisected to 300 connections × 1 msg/s (passes) – 312 connections × 1 msg/s (fails), within 5%: capacity 300 msg/s",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := &searchDriver{conns: 100, capacity: c.capacity, clientLimit: c.clientLimit, clientUpto: c.clientUpto}
			edit := c.edit
			if c.name == "connections" {
				d.conns = 0
			}
			out, _ := runSearch(t, d, edit)
			var got []float64
			for i, st := range out.Steps {
				got = append(got, st.Target)
				if st.Bisect != (c.bisect >= 0 && i >= c.bisect) {
					t.Errorf("step %d bisect = %v", i, st.Bisect)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.targets) {
				t.Errorf("steps %v, want %v", got, c.targets)
			}
			// Every step was settled first: two rate runs per step.
			if len(d.targets) != 2*len(c.targets) {
				t.Errorf("%d rate runs for %d steps", len(d.targets), len(c.targets))
			}
			m := out.Metrics
			if m.Float("capacity") != c.capacityOut || m.Int("capacity_conns") != c.conns || m.Bool("client_limited") != c.limited ||
				m.Bool("max_reached") != c.maxReached || m.Int("steps") != int64(len(c.targets)) {
				t.Errorf("metrics %v", m)
			}
			if c.capacityOut > 0 && !scenariotest.Near(m.Dur("p99"), time.Millisecond) {
				t.Errorf("p99 at capacity %v", m["p99"])
			}
			if out.Stop != c.stop {
				t.Errorf("stop %q,\nwant %q", out.Stop, c.stop)
			}
			if out.Failed {
				t.Errorf("failed: %s", out.Error)
			}
			for _, st := range out.Steps {
				want := VerdictPass
				switch {
				case d.bound(st.Target):
					want = VerdictClientBound
				case st.Target > c.capacity:
					want = VerdictFail
				}
				if st.Verdict != want || (st.Target > c.capacity) != (st.Why != "") {
					t.Errorf("step %v: verdict %q why %q, want %q", st.Target, st.Verdict, st.Why, want)
				}
				if st.Why != "" && st.Why != "lost=0 p99=100.01ms" {
					t.Errorf("why %q", st.Why)
				}
				if st.ServerCPU != st.Target/100 || st.ClientBound != (want == VerdictClientBound) {
					t.Errorf("step %+v", st)
				}
			}
			if c.limited {
				if len(out.Warnings) != 1 || !strings.HasPrefix(out.Warnings[0], c.stop+": the client, not the server, set this bound") {
					t.Errorf("warnings %q", out.Warnings)
				}
			}
			if c.name == "connections" {
				// Opened as the steps needed them, never closed.
				if fmt.Sprint(d.connects) != "[100 100 100 100]" || d.conns != 400 {
					t.Errorf("connects %v", d.connects)
				}
				for _, st := range out.Steps {
					if float64(st.Conns) != st.Target {
						t.Errorf("step %v ran on %d connections", st.Target, st.Conns)
					}
				}
			}
		})
	}
}

// An SLO that fails at run time (modulo by a zero metric) fails the phase
// with the reason, the steps so far kept.
func TestSearchSLORuntimeError(t *testing.T) {
	d := &searchDriver{conns: 100, capacity: 1e9}
	out, _ := runSearch(t, d, func(s *Phase) { s.SLO = "lost % failed == 0" })
	if !out.Failed || !strings.Contains(out.Error, "integer divide by zero") || len(out.Steps) != 1 || !strings.HasPrefix(out.Steps[0].Why, "slo: ") {
		t.Errorf("failed %v error %q steps %+v", out.Failed, out.Error, out.Steps)
	}
}

// shortDriver sends only 90% of what each step schedules, lossless and
// fast, above 1500 msg/s: those steps held the SLO at a rate below their
// targets.
type shortDriver struct{ searchDriver }

func (d *shortDriver) Run(ctx context.Context, p client.Params, pr *client.Progress) (client.Result, error) {
	res, err := d.searchDriver.Run(ctx, p, pr)
	if r, ok := res.(*rate.Result); ok && d.last > 1500 {
		r.Sent = r.Scheduled * 9 / 10
		r.Recv = r.Sent
	}
	return res, err
}

// A step that did not send its timetable is not a pass, whatever the SLO
// says; its why names who could not keep up from the CPU while it was
// behind. A client saturated while behind makes the step client-bound
// (the search stops there) though its whole window, the drain included,
// was not.
func TestSearchShortfallFails(t *testing.T) {
	behind := func(server, client float64) func() func(metrics.Values, *scenarios.Efficiency, []scenarios.Span) string {
		return func() func(metrics.Values, *scenarios.Efficiency, []scenarios.Span) string {
			return func(m metrics.Values, _ *scenarios.Efficiency, spans []scenarios.Span) string {
				if len(spans) == 0 {
					t.Error("a step's window was given no spans to judge who was behind over")
				}
				m[metrics.ClientBound], m[metrics.ServerCPUs] = false, int64(1)
				m[metrics.CPUBehind], m[metrics.ClientCPUBehind], m[metrics.ClientCores] = server, client, int64(1)
				return ""
			}
		}
	}
	cases := []struct {
		name     string
		window   func() func(metrics.Values, *scenarios.Efficiency, []scenarios.Span) string
		capacity float64
		steps    int
		verdict  string
		why      string
		stop     string
	}{
		{"no engine", nil, 1500, 6, VerdictFail,
			"shortfall: 1800 of 2000 scheduled sent (90%): who could not keep up is not known: no CPU was sampled while sending; lost=0 p99=", ""},
		{"server behind", behind(99, 30), 1500, 6, VerdictFail,
			"shortfall: 1800 of 2000 scheduled sent (90%): the server could not keep up (CPU 99% of 1 core while sending; client 30% of 1 core); lost=0 p99=", ""},
		{"client behind", behind(40, 97), 1000, 2, VerdictClientBound,
			"shortfall: 1800 of 2000 scheduled sent (90%): the client could not keep up (CPU 97% of 1 core while sending; server 40% of 1 core); lost=0 p99=",
			"client-bound at 2000 msg/s: capacity ≥ 1000 msg/s"},
	}
	for _, c := range cases {
		d := &shortDriver{searchDriver{conns: 100, capacity: 1e9}}
		s, ctx := validSearch(func(s *Phase) { s.Max, s.StepDuration, s.Settle = 4000, units.Duration(time.Second), 0 })
		if errs := scenarios.Check(s, ctx); len(errs) != 0 {
			t.Fatal(errs)
		}
		out, err := s.Run(t.Context(), &scenarios.Env{Driver: d, Window: c.window})
		if err != nil {
			t.Fatal(err)
		}
		if out.Metrics.Float("capacity") != c.capacity || len(out.Steps) != c.steps {
			t.Errorf("%s: capacity %v, steps %+v", c.name, out.Metrics["capacity"], out.Steps)
			continue
		}
		if st := out.Steps[1]; st.Verdict != c.verdict || !strings.HasPrefix(st.Why, c.why) || st.ClientBound != (c.verdict == VerdictClientBound) {
			t.Errorf("%s: step 2: %q %q client-bound %v", c.name, st.Verdict, st.Why, st.ClientBound)
		}
		if c.stop != "" && out.Stop != c.stop {
			t.Errorf("%s: stop %q, want %q", c.name, out.Stop, c.stop)
		}
	}
}

// dropDriver loses half of its connections in the settle run of the second
// step.
type dropDriver struct {
	searchDriver
	runs int
}

func (d *dropDriver) Run(ctx context.Context, p client.Params, pr *client.Progress) (client.Result, error) {
	res, err := d.searchDriver.Run(ctx, p, pr)
	if _, ok := p.(*rate.Params); ok {
		if d.runs++; d.runs == 3 {
			d.conns = 50
		}
	}
	return res, err
}

// Connections lost while a step settles: the step is measured on those
// left and fails.
func TestSearchConnectionsLostWhileSettling(t *testing.T) {
	d := &dropDriver{searchDriver: searchDriver{conns: 100, capacity: 1e9}}
	s, ctx := validSearch(func(s *Phase) {
		s.Max, s.StepDuration, s.Settle = 4000, units.Duration(time.Second), units.Duration(100*time.Millisecond)
	})
	if errs := scenarios.Check(s, ctx); len(errs) != 0 {
		t.Fatal(errs)
	}
	out, err := s.Run(t.Context(), &scenarios.Env{Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	// The second step fails; the bisection after it runs on the 50 left.
	if len(out.Steps) != 6 || out.Metrics.Float("capacity") != 1937.5 {
		t.Fatalf("capacity %v steps %+v", out.Metrics["capacity"], out.Steps)
	}
	if st := out.Steps[1]; st.Verdict != VerdictFail || st.Conns != 50 || st.Achieved != 2000 || !strings.HasPrefix(st.Why, "50 of 100 connections lost while settling; lost=0") {
		t.Errorf("step 2: %+v", st)
	}
}

// pacingDriver records the pacing each rate run was given.
type pacingDriver struct {
	searchDriver
	slack []units.Duration // as declared; absent = the tag default
	reads []string
	kinds []string
}

func (d *pacingDriver) Run(ctx context.Context, p client.Params, pr *client.Progress) (client.Result, error) {
	if q, ok := p.(*rate.Params); ok {
		slack := must(decl.Default(&rate.Phase{}, "slack")).(units.Duration)
		if q.Slack != nil {
			slack = *q.Slack
		}
		d.slack, d.reads, d.kinds = append(d.slack, slack), append(d.reads, q.Reads), append(d.kinds, q.PayloadKind)
	}
	return d.searchDriver.Run(ctx, p, pr)
}

// TestSearchPacing: every step (settle runs too) is paced with the
// phase's slack and read mode, as a rate phase's, and carries its
// payload_kind; bad reads or payload_kind is a load error.
func TestSearchPacing(t *testing.T) {
	zero := units.Duration(0)
	for _, c := range []struct {
		slack *units.Duration
		reads string
		want  units.Duration
	}{{nil, "", units.Duration(client.DefaultSlack)}, {&zero, client.ReadsPrompt, 0}} {
		d := &pacingDriver{searchDriver: searchDriver{conns: 100, capacity: 2500}}
		s, ctx := validSearch(func(s *Phase) { s.Max, s.Slack, s.Reads, s.PayloadKind = 4000, c.slack, c.reads, "text" })
		if errs := scenarios.Check(s, ctx); len(errs) != 0 {
			t.Fatal(errs)
		}
		if _, err := s.Run(t.Context(), &scenarios.Env{Driver: d}); err != nil {
			t.Fatal(err)
		}
		if len(d.slack) < 4 {
			t.Fatalf("%d rate runs, want the steps and their settles", len(d.slack))
		}
		for i := range d.slack {
			if want := cmp.Or(c.reads, client.ReadsBatched); d.slack[i] != c.want || d.reads[i] != want || d.kinds[i] != "text" {
				t.Errorf("run %d: slack %v reads %q payload_kind %q, want %v %q text", i, d.slack[i], d.reads[i], d.kinds[i], c.want, want)
			}
		}
	}
	s, ctx := validSearch(func(s *Phase) { s.Reads = "lazy" })
	if errs := scenarios.Check(s, ctx); len(errs) != 1 || errs[0].Field != "reads" || errs[0].Msg != `must be batched or prompt, got "lazy"` {
		t.Errorf("reads: lazy: %v", errs)
	}
	s, ctx = validSearch(func(s *Phase) { s.PayloadKind = "poems" })
	if errs := scenarios.Check(s, ctx); len(errs) != 1 || errs[0].Field != "payload_kind" {
		t.Errorf("payload_kind: poems: %v", errs)
	}
}

// size is a payload key of n bytes.
func size(n int64) *units.Size {
	s := units.Size(n)
	return &s
}

// must returns a decl.Default's value.
func must(v any, _ bool) any { return v }
