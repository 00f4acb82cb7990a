package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
)

// pingDriver answers a ping phase with a canned result.
type pingDriver struct {
	got client.PingParams
	res client.PingResult
}

func (d *pingDriver) Run(_ context.Context, p client.Params, _ *client.Progress) (client.Result, error) {
	d.got = *p.(*client.PingParams)
	r := d.res
	return &r, nil
}

func (d *pingDriver) Conns() int { return 8 }

func TestPingRun(t *testing.T) {
	h := client.NewHist()
	for _, v := range []int64{1000, 2000, 3000} {
		h.RecordValue(v)
	}
	drv := &pingDriver{res: client.PingResult{Total: 100, Success: 97, Failed: 3, Used: time.Second, Latency: h, Errors: client.Reasons{client.ReasonTimeout: 3}}}
	p := &Ping{PingParams: client.PingParams{Total: 100}}
	Defaults(p, Context{Conns: 10})
	if errs := Check(p, Context{Conns: 10}); len(errs) != 0 || p.Concurrency != 10 || p.Timeout.D() != 10*time.Second {
		t.Fatalf("defaults %+v, errors %v", p, errs)
	}
	out, err := p.Run(t.Context(), &Env{Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	if drv.got != (client.PingParams{Total: 100, Concurrency: 8, Timeout: units.Duration(10 * time.Second)}) {
		t.Errorf("params %+v", drv.got)
	}
	m := out.Metrics
	if m.Int("success") != 97 || m.Float("tps") != 97 || m.Dur("max") < 3000 || m.Int("concurrency") != 8 {
		t.Errorf("metrics %v", m)
	}
	if failed, msg, _ := judged(pingKind, p, out, nil); !failed || msg != "3 of 100 pings failed: timeout ×3" || len(out.Warnings) != 1 {
		t.Errorf("outcome %+v", out)
	}
	q := &Ping{PingParams: client.PingParams{Total: 1, Concurrency: 11}}
	Defaults(q, Context{Conns: 10})
	if errs := Check(q, Context{Conns: 10}); len(errs) != 1 || errs[0].Field != "concurrency" {
		t.Errorf("too much concurrency: %v", errs)
	}
}
