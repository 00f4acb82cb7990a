package rate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/scenariotest"
)

// fakeDriver records the parameters phases pass and answers with canned
// results.
type fakeDriver struct {
	conns     int
	connsNext int // Conns() after a phase; -1 = unchanged
	rate      Params
	rateRes   Result
	rateErr   error
}

func (f *fakeDriver) Run(_ context.Context, p client.Params, _ *client.Progress) (client.Result, error) {
	switch q := p.(type) {
	case *Params:
		f.rate = *q
		if f.rateRes.Latency.Histogram == nil {
			return nil, f.rateErr // nothing measured
		}
		r := f.rateRes
		return &r, f.rateErr
	}
	return client.NewResult(p), nil
}

func (f *fakeDriver) Conns() int { return f.conns }

func TestRateValidate(t *testing.T) {
	valid := func() *Phase {
		r := &Phase{Params: Params{Duration: units.Duration(10 * time.Second), Rate: 0.5}}
		scenarios.Defaults(r, scenarios.Context{Conns: 100})
		return r
	}
	if errs := scenarios.Check(valid(), scenarios.Context{Conns: 100}); len(errs) != 0 {
		t.Fatalf("valid rate phase: %v", errs)
	}
	r := valid()
	if r.Bytes() != 1024 || r.Connections != 100 || r.Batch != 16<<10 || r.MaxInflight != 16 || r.Drain.D() != 2*time.Second || r.MaxInflightBytes != 64<<20 ||
		r.LateAfter.D() != time.Millisecond || r.Verify == nil || !*r.Verify {
		t.Errorf("defaults %+v", r)
	}
	cases := []struct {
		edit func(r *Phase)
		ctx  scenarios.Context
		want string
	}{
		{func(r *Phase) { r.Duration = 0 }, scenarios.Context{Conns: 100}, "duration: must be > 0, got 0s"},
		{func(r *Phase) { r.Rate = -1 }, scenarios.Context{Conns: 100}, "rate: must be > 0 messages per connection per second, got -1"},
		{func(r *Phase) { r.Payload = size(0) }, scenarios.Context{Conns: 100}, "payload: must be >= 16 (the latency marker: 8-byte sequence number and 8-byte scheduled send time), got 0"},
		{func(r *Phase) { r.Payload = size(15) }, scenarios.Context{Conns: 100}, "payload: must be >= 16 (the latency marker: 8-byte sequence number and 8-byte scheduled send time), got 15"},
		{func(r *Phase) { r.Payload = size(65 << 20) }, scenarios.Context{Conns: 100}, "payload: must be <= 64MiB, got 65MiB"},
		{func(r *Phase) { r.Connections = 101 }, scenarios.Context{Conns: 100}, "connections: must be <= the connections opened before it (100), got 101"},
		{func(r *Phase) {}, scenarios.Context{}, "needs open connections: put a connect phase before it"},
		{func(r *Phase) { r.Ramp = units.Duration(11 * time.Second) }, scenarios.Context{Conns: 100}, "ramp: must be in [0, duration 10s], got 11s"},
		{func(r *Phase) { r.Batch = -1 }, scenarios.Context{Conns: 100}, "batch: must be >= 0, got -1"},
		{func(r *Phase) { r.MaxInflight = -1 }, scenarios.Context{Conns: 100}, "max_inflight: must be >= 0, got -1"},
		{func(r *Phase) { r.MaxInflightBytes = -1 }, scenarios.Context{Conns: 100}, "max_inflight_bytes: must be >= 0, got -1"},
		{func(r *Phase) { r.Drain = -1 }, scenarios.Context{Conns: 100}, "drain: must be >= 0, got -1ns"},
		{func(r *Phase) { r.LateAfter = -1 }, scenarios.Context{Conns: 100}, "late_after: must be >= 0, got -1ns"},
	}
	for _, c := range cases {
		r := valid()
		c.edit(r)
		errs := scenarios.Check(r, c.ctx)
		if len(errs) != 1 || errs[0].Error() != c.want {
			t.Errorf("got %v, want [%s]", errs, c.want)
		}
	}
}

func TestRateRun(t *testing.T) {
	lat := client.NewHistogram()
	for _, v := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 100 * time.Millisecond} {
		lat.RecordValue(int64(v))
	}
	sendLate := client.NewHistogram()
	for _, v := range []time.Duration{10 * time.Microsecond, 20 * time.Microsecond, 3 * time.Millisecond} {
		sendLate.RecordValue(int64(v))
	}
	drv := &fakeDriver{conns: 40, connsNext: -1, rateRes: Result{
		Conns: 40, Scheduled: 1000, Sent: 900, Recv: 880, Failed: 2, Late: 50, Unsent: 100,
		BytesSent: 900 * 64, BytesRecv: 882 * 64, Used: 5 * time.Second, Drain: 500 * time.Millisecond,
		Latency: client.Hist{Histogram: lat},
		Seconds: []client.PacedSecond{
			{Sent: 500, Recv: 490, Late: 10, P50: time.Millisecond, P99: 2 * time.Millisecond, Max: 2 * time.Millisecond},
			{Sent: 400, Recv: 390, Late: 40, P50: 100 * time.Millisecond, P99: 100 * time.Millisecond, Max: 100 * time.Millisecond},
			{Recv: 0},
		},
		Errors:   client.Reasons{client.ReasonMarkerMismatch: 2, client.ReasonEOF: 1},
		Slack:    time.Millisecond,
		Wakeups:  890,
		SendLate: client.Hist{Histogram: sendLate},
	}}
	p := &Phase{Params: Params{Duration: units.Duration(5 * time.Second), Rate: 5, Send: Send{Payload: size(64)}}}
	scenarios.Defaults(p, scenarios.Context{Conns: 50}) // 10 of them closed since
	out, err := p.Run(t.Context(), &scenarios.Env{Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	if drv.rate.Connections != 40 || drv.rate.Rate != 5 || *drv.rate.Payload != 64 || !*drv.rate.Verify || drv.rate.MaxInflight != 16 || drv.rate.MaxInflightBytes != 64<<20 {
		t.Errorf("params %+v", drv.rate)
	}
	m := out.Metrics
	for name, want := range map[string]any{
		"sent": int64(900), "recv": int64(880), "failed": int64(2), "lost": int64(18), "late": int64(150), "unsent": int64(100),
		"scheduled": int64(1000), "send_rate": 200.0, "achieved_rate": 180.0, "recv_rate": 160.0, "duration": 5 * time.Second,
		"drain": 500 * time.Millisecond, "conns": int64(40), "payload": int64(64), "bytes_sent": int64(900 * 64),
		"slack": time.Millisecond, "wakeups": int64(890), "wakeups_per_msg": 0.5,
		"behind": 3 * time.Second, // late in seconds 0 and 1, nothing sent in 2–4
	} {
		if fmt.Sprint(m[name]) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", name, m[name], want)
		}
	}
	// A few late messages (not over 1%) are no warning.
	if w := warnings(Result{Scheduled: 1000, Sent: 1000, Recv: 1000, Late: 10}, nil); len(w) != 0 {
		t.Errorf("1%% late: warnings %v", w)
	}
	if w := warnings(Result{Scheduled: 1000, Sent: 1000, Recv: 1000, Late: 11}, nil); len(w) != 1 || !strings.HasSuffix(w[0], "; who could not keep up is not known: no CPU was sampled while sending") {
		t.Errorf("1.1%% late: warnings %v", w)
	}
	if !near(m.Dur("send_late_p50"), 20*time.Microsecond) || !near(m.Dur("send_late_p99"), 3*time.Millisecond) || !near(m.Dur("send_late_max"), 3*time.Millisecond) {
		t.Errorf("send_late p50 %v p99 %v max %v, want 20µs, 3ms, 3ms", m.Dur("send_late_p50"), m.Dur("send_late_p99"), m.Dur("send_late_max"))
	}
	if drv.rate.Slack.D() != client.DefaultSlack {
		t.Errorf("slack passed %v, want the default %v", drv.rate.Slack, client.DefaultSlack)
	}
	if !near(m.Dur("p99"), 100*time.Millisecond) || !near(m.Dur("p50"), 2*time.Millisecond) {
		t.Errorf("p50 %v p99 %v, want 2ms, 100ms (HDR precision)", m.Dur("p50"), m.Dur("p99"))
	}
	scenariotest.CheckDeclaredSet(t, "rate", m)
	if failed, msg, _ := scenariotest.Judged(Name, p, out, nil); !failed || msg != "2 of 900 echoes were corrupt: marker mismatch ×2; 18 of 900 echoes never came by the end of the drain (lost); 1 of 40 connections were lost while sending: eof ×1" {
		t.Errorf("failed %v %q", failed, msg)
	}
	if len(out.Timeline) != 3 || out.Timeline[0].Sent != 500 || !near(out.Timeline[0].P99, 2*time.Millisecond) ||
		!near(out.Timeline[0].P50, time.Millisecond) || !near(out.Timeline[1].P50, 100*time.Millisecond) ||
		out.Timeline[2].P99 != 0 || out.Timeline[2].T != 2 || out.Timeline[1].Late != 40 {
		t.Errorf("timeline %+v", out.Timeline)
	}
	want := []string{
		"connections lowered from 50 to 40: only 40 are open",
		"rate shortfall: 900 of 1000 scheduled messages sent (90.0%): who could not keep up is not known: no CPU was sampled while sending",
		"150 of 1000 messages late (15.0%; 100 never sent): their latency counts from their schedule",
	}
	// Without an engine's window nobody knows who set the pace.
	if got := out.AllWarnings(nil); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRateRunClean(t *testing.T) {
	drv := &fakeDriver{conns: 10, connsNext: -1, rateRes: Result{
		Conns: 10, Scheduled: 100, Sent: 100, Recv: 100, Used: time.Second, Latency: client.NewHist(),
	}}
	p := &Phase{Params: Params{Duration: units.Duration(time.Second), Rate: 10}}
	scenarios.Defaults(p, scenarios.Context{Conns: 10})
	out, err := p.Run(t.Context(), &scenarios.Env{Driver: drv})
	if err != nil || out.Failed || len(out.AllWarnings(nil)) != 0 {
		t.Errorf("clean run: %+v, %v", out, err)
	}
	if m := out.Metrics; m.Int("lost") != 0 || m.Int("late") != 0 || m.Float("achieved_rate") != 100 || m.Dur("p99") != 0 {
		t.Errorf("metrics %v", m)
	}
}

// near reports whether d is within the histograms' 0.1% of want.
func near(d, want time.Duration) bool {
	return d >= want && d <= want+want/1000
}

func size(n int64) *units.Size {
	s := units.Size(n)
	return &s
}

// TestRateRunInterrupted: a phase cut short keeps what it measured, with
// the error; a phase that measured nothing returns only the error.
func TestRateRunInterrupted(t *testing.T) {
	drv := &fakeDriver{conns: 10, connsNext: -1, rateErr: context.Canceled, rateRes: Result{
		Conns: 10, Scheduled: 50, Sent: 50, Recv: 48, Used: 500 * time.Millisecond, Latency: client.NewHist(), Ended: client.Ended{Stopped: client.StopCanceled},
	}}
	p := &Phase{Params: Params{Duration: units.Duration(time.Second), Rate: 10}}
	scenarios.Defaults(p, scenarios.Context{Conns: 10})
	out, err := p.Run(t.Context(), &scenarios.Env{Driver: drv})
	if err != context.Canceled || out.Metrics.Int("sent") != 50 || out.Metrics.Int("lost") != 2 {
		t.Errorf("interrupted: %v, %v", out.Metrics, err)
	}
	drv.rateRes = Result{}
	out, err = p.Run(t.Context(), &scenarios.Env{Driver: drv})
	if err != context.Canceled || out.Metrics != nil {
		t.Errorf("nothing measured: %v, %v", out.Metrics, err)
	}
}

// TestRateShortfallSide: the shortfall names the side that could not keep
// up from the figures the engine writes after the run over the seconds
// sending was behind (KeptUp, table-tested in behind_test.go), not from
// the whole window's: a server at 99% of its core while behind is named
// though its window average, drain included, is far lower.
func TestRateShortfallSide(t *testing.T) {
	r := Result{Scheduled: 20000000, Sent: 1666522, Recv: 1666522}
	const head = "rate shortfall: 1666522 of 20000000 scheduled messages sent (8.3%): "
	cases := []struct {
		name string
		m    metrics.Values
		want string
	}{
		{"server while behind", metrics.Values{metrics.CPUAvg: 60.0, metrics.ClientCPUAvg: 30.0, metrics.ServerCPUs: int64(1), metrics.ServerBound: false,
			metrics.CPUBehind: 99.33, metrics.ClientCPUBehind: 40.0, metrics.ClientCores: int64(1), metrics.Behind: 3 * time.Second},
			"the server could not keep up (CPU 99% of 1 core while behind; client 40% of 1 core)"},
		{"client while behind", metrics.Values{metrics.CPUAvg: 50.0, metrics.ClientCPUAvg: 70.0, metrics.ServerCPUs: int64(1), metrics.ClientBound: false,
			metrics.CPUBehind: 60.0, metrics.ClientCPUBehind: 97.0, metrics.ClientCores: int64(1), metrics.Behind: 3 * time.Second},
			"the client could not keep up (CPU 97% of 1 core while behind; server 60% of 1 core)"},
		{"neither while behind, though the window says server-bound", metrics.Values{metrics.CPUAvg: 95.0, metrics.ServerCPUs: int64(1), metrics.ServerBound: true,
			metrics.CPUBehind: 50.0, metrics.ClientCPUBehind: 40.0, metrics.ClientCores: int64(1), metrics.Behind: time.Second},
			"neither side was CPU-bound while behind (server 50% of 1 core, client 40% of 1 core): the network, the kernel, or a limit of the server's other than CPU"},
	}
	for _, c := range cases {
		w := warnings(r, c.m)
		if len(w) == 0 || w[0] != head+c.want {
			t.Errorf("%s: %q, want %q", c.name, w, head+c.want)
		}
	}
	// Late without a shortfall: the late warning names the side; with
	// one, only the shortfall does.
	const late = "200 of 1000 messages late (20.0%; 0 never sent): their latency counts from their schedule"
	if w := warnings(Result{Scheduled: 1000, Sent: 1000, Recv: 1000, Late: 200}, cases[0].m); len(w) != 1 || w[0] != late+"; "+cases[0].want {
		t.Errorf("late, no shortfall: %q", w)
	}
	if w := warnings(Result{Scheduled: 1000, Sent: 900, Recv: 900, Late: 100, Unsent: 100}, cases[0].m); len(w) != 2 || strings.Contains(w[1], "could not keep up") {
		t.Errorf("late with a shortfall: %q", w)
	}
	// Through a phase's Outcome, as the engine reads it: after the
	// outcome's own warnings, in the order RateWarnings gives them.
	drv := &fakeDriver{conns: 10, connsNext: -1, rateRes: Result{
		Conns: 10, Scheduled: 100, Sent: 50, Recv: 50, Used: time.Second, Latency: client.NewHist(),
	}}
	p := &Phase{Params: Params{Duration: units.Duration(time.Second), Rate: 10, Connections: 20}}
	scenarios.Defaults(p, scenarios.Context{Conns: 10})
	out, err := p.Run(t.Context(), &scenarios.Env{Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	got := out.AllWarnings(cases[0].m)
	if len(got) < 2 || got[0] != "connections lowered from 20 to 10: only 10 are open" ||
		got[1] != "rate shortfall: 50 of 100 scheduled messages sent (50.0%): the server could not keep up (CPU 99% of 1 core while behind; client 40% of 1 core)" {
		t.Errorf("warnings %q", got)
	}
}
