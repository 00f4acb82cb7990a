package ping

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// driver answers a ping phase with a canned result.
type driver struct {
	got Params
	res Result
}

func (d *driver) Run(_ context.Context, p client.Params, _ *client.Progress) (client.Result, error) {
	d.got = *p.(*Params)
	r := d.res
	return &r, nil
}

func (d *driver) Conns() int { return 8 }

func TestPingRun(t *testing.T) {
	h := client.NewHist()
	for _, v := range []int64{1000, 2000, 3000} {
		h.RecordValue(v)
	}
	drv := &driver{res: Result{Total: 100, Success: 97, Failed: 3, Used: time.Second, Latency: h, Errors: client.Reasons{client.ReasonTimeout: 3}}}
	p := &Phase{Params: Params{Total: 100}}
	scenarios.Defaults(p, scenarios.Context{Conns: 10})
	if errs := scenarios.Check(p, scenarios.Context{Conns: 10}); len(errs) != 0 || p.Concurrency != 10 || p.Timeout.D() != 10*time.Second {
		t.Fatalf("defaults %+v, errors %v", p, errs)
	}
	out, err := p.Run(t.Context(), &scenarios.Env{Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	if drv.got != (Params{Total: 100, Concurrency: 8, Timeout: units.Duration(10 * time.Second)}) {
		t.Errorf("params %+v", drv.got)
	}
	m := out.Metrics
	if m.Int("success") != 97 || m.Float("tps") != 97 || m.Dur("max") < 3000 || m.Int("concurrency") != 8 {
		t.Errorf("metrics %v", m)
	}
	v := scenarios.Judge(scenarios.PhaseFaults(Name, p), nil, out.Metrics, out.Reasons, nil)
	if msg := strings.Join(v.Failures, "; "); out.Failed || msg != "3 of 100 pings failed: timeout ×3" || len(out.Warnings) != 1 {
		t.Errorf("outcome %+v: %s", out, msg)
	}
	q := &Phase{Params: Params{Total: 1, Concurrency: 11}}
	scenarios.Defaults(q, scenarios.Context{Conns: 10})
	if errs := scenarios.Check(q, scenarios.Context{Conns: 10}); len(errs) != 1 || errs[0].Field != "concurrency" {
		t.Errorf("too much concurrency: %v", errs)
	}
}
