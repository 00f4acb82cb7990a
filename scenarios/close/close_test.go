package close

import (
	"context"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/scenariotest"
)

// closeDriver answers a close phase with a canned result.
type closeDriver struct {
	got Params
	res Result
}

func (d *closeDriver) Run(_ context.Context, p client.Params, _ *client.Progress) (client.Result, error) {
	d.got = *p.(*Params)
	r := d.res
	return &r, nil
}

func (d *closeDriver) Conns() int { return 8 }

// TestCloseRun: defaults, the client's parameters, the metrics, and a
// failed outcome with the failures' reasons and the other codes warned.
func TestCloseRun(t *testing.T) {
	h := client.NewHist()
	for _, v := range []int64{1000, 2000, 3000} {
		h.RecordValue(v)
	}
	drv := &closeDriver{res: Result{Total: 8, Success: 6, OtherCode: 1, Failed: 2, Used: time.Second, Latency: h,
		Codes: client.Reasons{"server close 1001": 1}, Errors: client.Reasons{client.ReasonTimeout: 2}}}
	p := &Phase{}
	scenarios.Defaults(p, scenarios.Context{Conns: 10})
	if errs := scenarios.Check(p, scenarios.Context{Conns: 10}); len(errs) != 0 || p.Connections != 10 || p.Concurrency != 10 || p.Timeout.D() != 5*time.Second {
		t.Fatalf("defaults %+v, errors %v", p, errs)
	}
	out, err := p.Run(t.Context(), &scenarios.Env{Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	if drv.got != (Params{Connections: 8, Concurrency: 8, Timeout: units.Duration(5 * time.Second)}) {
		t.Errorf("params %+v", drv.got)
	}
	m := out.Metrics
	if m.Int(metrics.Success) != 6 || m.Float(metrics.TPS) != 6 || m.Int(otherCode) != 1 || m.Dur(metrics.Max) < 3000 || m.Int(metrics.Conns) != 8 {
		t.Errorf("metrics %v", m)
	}
	want := []string{
		"connections lowered from 10 to 8: only 8 connections are open",
		"1 of 6 closes were answered with another status code than 1000: server close 1001 ×1",
	}
	if failed, msg, _ := scenariotest.Judged(Name, p, out, nil); !failed || msg != "2 of 8 closes failed: timeout ×2" || len(out.Warnings) != 2 || out.Warnings[0] != want[0] || out.Warnings[1] != want[1] {
		t.Errorf("outcome %+v", out)
	}
	for _, c := range []struct {
		p     *Phase
		field string
	}{
		{&Phase{Params: Params{Connections: 11}}, "connections"},
		{&Phase{Params: Params{Connections: 4, Concurrency: 5}}, "concurrency"},
	} {
		scenarios.Defaults(c.p, scenarios.Context{Conns: 10})
		if errs := scenarios.Check(c.p, scenarios.Context{Conns: 10}); len(errs) != 1 || errs[0].Field != c.field {
			t.Errorf("%+v: %v, want an error on %s", c.p, errs, c.field)
		}
	}
	none := &Phase{}
	scenarios.Defaults(none, scenarios.Context{})
	if errs := scenarios.Check(none, scenarios.Context{}); len(errs) != 1 || errs[0].Field != "" {
		t.Errorf("no connections open: %v", errs)
	}
}

// TestCloseServer: the phase on the client against a real server closes
// the connections it is given and times each handshake.
func TestCloseServer(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	c, err := client.New(client.Options{Targets: []string{srv.Addr()}, Loops: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r, err := c.Connect(t.Context(), client.ConnectParams{Connections: 40, Concurrency: 20, Timeout: units.Duration(5 * time.Second)}, nil); err != nil || r.Success != 40 {
		t.Fatalf("connect: %+v, %v", r, err)
	}
	p := &Phase{Params: Params{Connections: 30, Concurrency: 7}}
	scenarios.Defaults(p, scenarios.Context{Conns: 40})
	out, err := p.Run(t.Context(), &scenarios.Env{Driver: c, Progress: &client.Progress{}})
	if err != nil || out.Failed {
		t.Fatalf("close: %v %q", err, out.Error)
	}
	m := out.Metrics
	if m.Int(metrics.Total) != 30 || m.Int(metrics.Success) != 30 || m.Int(metrics.Failed) != 0 || m.Int(otherCode) != 0 ||
		m.Dur(metrics.P50) <= 0 || m.Int(metrics.Conns) != 10 || m.Int(metrics.Concurrency) != 7 || out.Histogram == "" {
		t.Errorf("metrics %v", m)
	}
	if len(out.Warnings) != 0 {
		t.Errorf("warnings %q", out.Warnings)
	}
}
