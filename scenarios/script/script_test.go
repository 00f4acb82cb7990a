package script

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/scenarios"
)

// TestWatchClientMem: the watch reports how far the client's RSS rose
// above its reading at the start, at its highest (not at the end), and
// its goroutine ends with it.
func TestWatchClientMem(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var rss atomic.Int64
	rss.Store(100 << 20)
	w := watchClientMem(func() scenarios.Mem { return scenarios.Mem{Client: rss.Load()} })
	rss.Store(140 << 20) // users connected
	time.Sleep(3 * memWatchEvery)
	rss.Store(110 << 20) // and gone
	if got := w.stop(); got != 40<<20 {
		t.Fatalf("grew %d, want %d", got, 40<<20)
	}
	if got := watchClientMem(nil).stop(); got != 0 {
		t.Fatalf("no reader: %d", got)
	}
}

// TestScriptValuesPeak: users_peak comes from the result.
func TestScriptValuesPeak(t *testing.T) {
	v, _, _ := scriptValues(&Result{Users: 10, Peak: 7, Connect: client.NewHist()}, nil)
	if v.Int(scriptPeak) != 7 || v.Int(scriptUsers) != 10 {
		t.Fatalf("users_peak %v users %v", v[scriptPeak], v[scriptUsers])
	}
}

// scriptDriver answers a script phase with a canned result.
type scriptDriver struct{ res Result }

func (d *scriptDriver) Run(context.Context, client.Params, *client.Progress) (client.Result, error) {
	r := d.res
	return &r, nil
}

func (d *scriptDriver) Conns() int { return 0 }

// scriptPhase decodes a script phase's body.
func scriptPhase(t *testing.T, body string) *Phase {
	t.Helper()
	p := &Phase{}
	if err := yaml.Unmarshal([]byte(body), p); err != nil {
		t.Fatal(err)
	}
	scenarios.Defaults(p, scenarios.Context{})
	if errs := scenarios.Check(p, scenarios.Context{}); len(errs) != 0 {
		t.Fatalf("%v", errs)
	}
	return p
}

// TestScriptVerdict: a script's counted failures are faults the engine
// judges (no Outcome.Failed): error answers by the protocol's code,
// downgrades, timeouts, lost users. Each fails the phase, naming the
// code, unless the plan allows it (the phase total, or the exchange's
// own part) or an assertion reads it.
func TestScriptVerdict(t *testing.T) {
	p := scriptPhase(t, `
users: 20
steps:
  - loop:
      count: 200
      inflight: 16
      steps:
        - publish: {topic: t, qos: 1, as: pub}
  - publish: {topic: t, qos: 2, as: pub2}
`)
	clean := func() Result {
		return Result{Users: 20, Finished: 20, Answers: 4020, Connect: client.NewHist(), Used: time.Second,
			Exchanges: map[string]*Exchange{"pub": {Count: 4000, Latency: client.NewHist()}, "pub2": {Count: 20, Latency: client.NewHist()}}}
	}
	const denied = client.Reason("mqtt 0x87 not authorized")
	for _, tc := range []struct {
		name  string
		res   func(r *Result)
		allow scenarios.Allow
		fails []string // what the failure says, in order; none = passes
	}{
		{"clean", func(*Result) {}, nil, nil},
		{"error answers", func(r *Result) {
			r.ErrorAnswers = client.Reasons{denied: 1200, "mqtt 0x97 quota exceeded": 3}
			r.Exchanges["pub"].Count, r.Exchanges["pub"].Errors = 2797, 1203
			r.Exchanges["pub"].ErrorCodes = r.ErrorAnswers
		}, nil, []string{"1203 of 4020 error answers: mqtt 0x87 not authorized ×1200; mqtt 0x97 quota exceeded ×3"}},
		{"error answers allowed", func(r *Result) {
			r.ErrorAnswers = client.Reasons{denied: 1200}
			r.Exchanges["pub"].Errors, r.Exchanges["pub"].ErrorCodes = 1200, r.ErrorAnswers
		}, scenarios.Allow{scriptErrors: {N: 1200}}, nil},
		{"error answers over the allowance", func(r *Result) {
			r.ErrorAnswers = client.Reasons{denied: 1200}
			r.Exchanges["pub"].Errors, r.Exchanges["pub"].ErrorCodes = 1200, r.ErrorAnswers
		}, scenarios.Allow{scriptErrors: {Percent: 1}}, []string{"1200 of 4020 error answers: mqtt 0x87 not authorized ×1200 (allowed: up to 1%)"}},
		{"an exchange's errors allowed apart", func(r *Result) {
			r.ErrorAnswers = client.Reasons{denied: 5}
			r.Exchanges["pub2"].Errors, r.Exchanges["pub2"].ErrorCodes = 5, r.ErrorAnswers
		}, scenarios.Allow{"pub2_errors": {N: 5}}, nil},
		{"downgrades", func(r *Result) {
			r.Downgrades = client.Reasons{"mqtt PUBACK to a QoS 2 publish": 20}
			r.Exchanges["pub2"].Count, r.Exchanges["pub2"].Downgraded = 0, 20
		}, nil, []string{"20 of 4020 answers granted less than asked (downgraded): mqtt PUBACK to a QoS 2 publish ×20"}},
		{"timeouts and lost users", func(r *Result) {
			r.Timeouts, r.Unanswered, r.UsersFailed, r.Aborted, r.Finished = 2, 30, 1, 3, 17
			r.Errors = client.Reasons{client.ReasonEOF: 1}
			r.Failures = map[string]client.Reasons{"steps[0].loop.steps[0].publish": {client.ReasonTimeout: 2, ReasonUserEnded: 30}}
		}, nil, []string{"1 of 20 users lost their connection: eof ×1", "2 expects got no reply in time: steps[0].loop.steps[0].publish ×2",
			"30 expects were waiting when their user or the phase ended: user ended ×30"}},
		{"users that could not connect", func(r *Result) {
			r.Users, r.OpenFailed, r.OpenErrors = 18, 2, client.Reasons{"connect: connection refused": 2}
		}, nil, []string{"2 users could not connect: connect: connection refused ×2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drv := &scriptDriver{res: clean()}
			tc.res(&drv.res)
			out, err := p.Run(t.Context(), &scenarios.Env{Driver: drv})
			if err != nil {
				t.Fatal(err)
			}
			if out.Failed {
				t.Fatalf("Outcome.Failed %q: a count is a fault, judged by the engine", out.Error)
			}
			v := scenarios.Judge(scenarios.PhaseFaults(Name, p), tc.allow, out.Metrics, out.Reasons, nil)
			if len(v.Failures) != len(tc.fails) {
				t.Fatalf("failures %q, want %q", v.Failures, tc.fails)
			}
			for i, want := range tc.fails {
				if v.Failures[i] != want {
					t.Errorf("failure %d: %q, want %q", i, v.Failures[i], want)
				}
			}
			if len(tc.fails) == 0 && len(tc.allow) > 0 && len(v.Notes) == 0 {
				t.Errorf("allowed faults leave no note: %+v", v)
			}
		})
	}
}

// TestScriptReceiveMaximum: the least Receive Maximum is a metric, and a
// warning says when it held the steps' inflight down.
func TestScriptReceiveMaximum(t *testing.T) {
	r := &Result{Users: 20, ReceiveMax: 4, Throttled: 20, Inflight: 16, Connect: client.NewHist()}
	v, _, _ := scriptValues(r, nil)
	w := scriptWarnings(r)
	if v.Int(scriptReceiveMax) != 4 || len(w) != 1 || !strings.Contains(w[0], "Receive Maximum (4) held loop inflight 16 to 4 on 20 users") {
		t.Fatalf("receive_maximum %v, warnings %q", v[scriptReceiveMax], w)
	}
	r.ReceiveMax, r.Throttled = 0, 0
	if v, _, _ := scriptValues(r, nil); v[scriptReceiveMax] != nil || len(scriptWarnings(r)) != 0 {
		t.Fatalf("no Receive Maximum announced: %v, %q", v[scriptReceiveMax], scriptWarnings(r))
	}
}

// TestScriptExchangeNames: an exchange whose metrics would be the
// phase's own is refused.
func TestScriptExchangeNames(t *testing.T) {
	p := &Phase{}
	if err := yaml.Unmarshal([]byte("users: 1\nsteps: [{send: x}, {expect: {as: users}}]"), p); err != nil {
		t.Fatal(err)
	}
	scenarios.Defaults(p, scenarios.Context{})
	errs := scenarios.Check(p, scenarios.Context{})
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, `exchange "users": its metric users_failed is one of the phase's own`) {
		t.Fatalf("errors %v", errs)
	}
}

// TestScriptAllowKeys: a script phase may allow its faults, the phase's
// and each named exchange's; a percentage only of a fault with a total.
func TestScriptAllowKeys(t *testing.T) {
	p := scriptPhase(t, "users: 1\nsteps: [{send: x}, {expect: {as: login}}]")
	faults := scenarios.PhaseFaults(Name, p)
	for _, tc := range []struct {
		allow scenarios.Allow
		want  string // "" = accepted
	}{
		{scenarios.Allow{scriptErrors: {Percent: 0.1}, scriptDowngraded: {N: 2}, scriptTimeouts: {N: 1}}, ""},
		{scenarios.Allow{"login_errors": {N: 5}, "login_timeouts": {N: 1}, scriptUsersFailed: {Percent: 1}}, ""},
		{scenarios.Allow{"logout_errors": {N: 5}}, "not a fault this phase counts"},
		{scenarios.Allow{scriptOpenFailed: {Percent: 1}}, "no total to take a percentage of"},
	} {
		errs := scenarios.CheckAllow(tc.allow, faults)
		if tc.want == "" && len(errs) != 0 || tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Msg, tc.want)) {
			t.Errorf("allow %v: %v, want %q", tc.allow, errs, tc.want)
		}
	}
}
