package hold

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/scenariotest"
)

// driver records the parameters a hold phase passes and answers with a
// canned result; connsNext is Conns() after the phase (-1 = unchanged).
type driver struct {
	conns, connsNext int
	got              Params
	res              Result
}

func (d *driver) Run(_ context.Context, p client.Params, _ *client.Progress) (client.Result, error) {
	d.got = *p.(*Params)
	if d.connsNext >= 0 {
		d.conns = d.connsNext
	}
	r := d.res
	return &r, nil
}

func (d *driver) Conns() int { return d.conns }

// TestDrainMatchesDoc: the pongs metric's doc says the drain is 1 s.
func TestDrainMatchesDoc(t *testing.T) {
	if DefaultDrain != time.Second {
		t.Errorf("DefaultDrain is %v: hold's pongs metric doc says 1 s", DefaultDrain)
	}
}

func TestHoldRun(t *testing.T) {
	for _, tt := range []struct {
		name     string
		hold     Phase
		res      Result
		after    int
		failed   string
		warnings []string
		pings    int64
	}{
		{"idle", Phase{Params: Params{Duration: units.Duration(time.Second)}}, Result{Conns: 10, Alive: 10, Used: time.Second}, 10, "", nil, 0},
		{"pings answered", Phase{Params: Params{Duration: units.Duration(time.Second), Ping: units.Duration(100 * time.Millisecond)}},
			Result{Conns: 10, Alive: 10, Pings: 100, Pongs: 100, Used: time.Second}, 10, "", nil, 100},
		{"pongs missing", Phase{Params: Params{Duration: units.Duration(time.Second), Ping: units.Duration(100 * time.Millisecond)}},
			Result{Conns: 10, Alive: 10, Pings: 100, Pongs: 90, Used: time.Second}, 10, "10 of 100 pings got no pong", nil, 100},
		{"drops", Phase{Params: Params{Duration: units.Duration(time.Second)}},
			Result{Conns: 10, Alive: 7, Used: time.Second, Errors: client.Reasons{"eof": 3}}, 7, "3 of 10 connections dropped while held: eof ×3", nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			drv := &driver{conns: 10, connsNext: tt.after, res: tt.res}
			h := tt.hold
			out, err := h.Run(t.Context(), &scenarios.Env{Driver: drv})
			if err != nil {
				t.Fatal(err)
			}
			if drv.got != tt.hold.Params {
				t.Errorf("params %+v", drv.got)
			}
			m := out.Metrics
			if m.Int("conns") != 10 || m.Int("alive") != int64(tt.after) || m.Int("dropped") != 10-int64(tt.after) ||
				m.Int("pings") != tt.pings || m.Int("pongs") != tt.res.Pongs || m.Dur("duration") != time.Second {
				t.Errorf("metrics %v", m)
			}
			if failed, msg, _ := scenariotest.Judged(Name, &h, out, nil); msg != tt.failed || failed != (tt.failed != "") {
				t.Errorf("failed %v %q, want %q", failed, msg, tt.failed)
			}
			if fmt.Sprint(out.Warnings) != fmt.Sprint(tt.warnings) {
				t.Errorf("warnings %v, want %v", out.Warnings, tt.warnings)
			}
		})
	}
	if errs := scenarios.Check(&Phase{Params: Params{Duration: units.Duration(time.Second), Ping: -1}}, scenarios.Context{Conns: 1}); len(errs) != 1 || errs[0].Field != "ping" {
		t.Errorf("negative ping: %v", errs)
	}
}
