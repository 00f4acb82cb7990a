package churn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/scenariotest"
)

// churnDriver answers a churn phase with a canned result.
type churnDriver struct {
	got Params
	res Result
}

func (d *churnDriver) Run(_ context.Context, p client.Params, _ *client.Progress) (client.Result, error) {
	d.got = *p.(*Params)
	r := d.res
	return &r, nil
}

func (d *churnDriver) Conns() int { return 200 }

// TestChurnPhase: defaults and rules (one of rate, fraction, lifetime), a
// fraction turned into a rate over the open connections, the metrics,
// and a row failed by replacements that failed or connections dropped,
// with their reasons.
func TestChurnPhase(t *testing.T) {
	ctx := scenarios.Context{Conns: 200}
	p := &Phase{Params: Params{Duration: units.Duration(10 * time.Second), Fraction: 0.5}}
	scenarios.Defaults(p, ctx)
	if errs := scenarios.Check(p, ctx); len(errs) != 0 || p.Close != CloseClean || p.LifetimeDist != LifetimeExponential || p.Timeout.D() != 5*time.Second || p.CloseTimeout.D() != 5*time.Second {
		t.Fatalf("defaults %+v, errors %v", p, errs)
	}
	h := client.NewHist()
	h.RecordValue(int64(time.Millisecond))
	drv := &churnDriver{res: Result{Conns: 200, Alive: 197, Cycles: 1000, Clean: 1000, CloseLatency: h, PingLatency: client.NewHist(),
		Connect: client.ConnectResult{Total: 1000, Success: 998, Failed: 2, Latency: h, Errors: client.Reasons{"connect: connection refused": 2}},
		Dropped: 1, Errors: client.Reasons{client.ReasonEOF: 1}, Used: 11 * time.Second}}
	out, err := p.Run(t.Context(), &scenarios.Env{Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	if drv.got.Rate != 100 || drv.got.Close != CloseClean || drv.got.Duration.D() != 10*time.Second || drv.got.Fraction != 0 {
		t.Errorf("params %+v: want rate 0.5 × 200 connections", drv.got)
	}
	m := out.Metrics
	if m.Int(churnCycles) != 1000 || m.Float(churnConnectRate) != 99.8 || m.Float(churnTargetRate) != 100 || m.Dur(churnCloseP99) < time.Millisecond || m.Int("failed") != 2 || m.Int(churnAlive) != 197 {
		t.Errorf("metrics %v", m)
	}
	if failed, msg, _ := scenariotest.Judged(Name, p, out, nil); !failed || msg != "2 of 1000 replacements failed: connect: connection refused ×2; 1 of 200 connections dropped: eof ×1" {
		t.Errorf("outcome %v %q", failed, msg)
	}
	if failed, msg, notes := scenariotest.Judged(Name, p, out, scenarios.Allow{metrics.Failed: {N: 2}, metrics.Dropped: {Percent: 1}}); failed || len(notes) != 2 {
		t.Errorf("allowed: outcome %v %q, notes %q", failed, msg, notes)
	}
	for _, c := range []struct {
		p    Phase
		want string
	}{
		{Phase{Params: Params{Duration: units.Duration(time.Second)}}, "rate: give one of rate"},
		{Phase{Params: Params{Duration: units.Duration(time.Second), Rate: 1, Lifetime: units.Duration(time.Second)}}, "rate: give one of rate"},
		{Phase{Params: Params{Duration: units.Duration(time.Second), Rate: 1, Close: "slam"}}, `close: must be clean, reset or mixed, got "slam"`},
	} {
		q := c.p
		scenarios.Defaults(&q, ctx)
		var msgs []string
		for _, e := range scenarios.Check(&q, ctx) {
			msgs = append(msgs, e.Error())
		}
		if got := strings.Join(msgs, "; "); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
	lone := &Phase{Params: Params{Duration: units.Duration(time.Second), Rate: 1}}
	scenarios.Defaults(lone, scenarios.Context{})
	if errs := scenarios.Check(lone, scenarios.Context{}); len(errs) != 1 || !strings.Contains(errs[0].Msg, "connect phase") {
		t.Errorf("no open connections: %v", errs)
	}
}
