package report

import (
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

// TestVerdict: the Verdict cell of every kind's table and of the compact
// view. A row the server bound says so where it would say ok; a failure
// keeps its words; client-bound is added to a failure.
func TestVerdict(t *testing.T) {
	m := func(client, server bool) metrics.Values {
		return metrics.Values{metrics.ClientBound: client, metrics.ServerBound: server}
	}
	cases := []struct {
		name    string
		res     result.Result
		asserts int
		want    string
	}{
		{"ok", result.Result{OK: true, Metrics: m(false, false)}, 0, "ok"},
		{"server-bound", result.Result{OK: true, Metrics: m(false, true)}, 0, "server-bound"},
		{"client-bound", result.Result{OK: true, Metrics: m(true, false)}, 0, "client-bound"},
		{"failed, server-bound", result.Result{OK: false, Error: "server exited", Metrics: m(false, true)}, 0, "FAIL: server exited"},
		{"assert failed, server-bound", result.Result{OK: true, Metrics: m(false, true)}, 1, "FAIL (1 assert)"},
		{"failed, client-bound", result.Result{OK: false, Error: "boom", Metrics: m(true, false)}, 0, "FAIL: boom; client-bound"},
		{"no metrics", result.Result{OK: true}, 0, "ok"},
	}
	for _, c := range cases {
		if got := verdict(row{res: &c.res, asserts: c.asserts}); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestServerBoundRow: the 10k plan's rate phase, server at 99% of its
// one core, client at 40%: the rate table's Verdict says server-bound,
// as do the generic table's and the compact view's.
func TestServerBoundRow(t *testing.T) {
	common := metrics.Values{metrics.CPUAvg: 99.0, metrics.ClientCPUAvg: 40.0, metrics.ServerCPUs: int64(1),
		metrics.ClientBound: false, metrics.ServerBound: true}
	run := &result.Run{Results: []result.Result{
		{Server: "gws", Phase: "rate", Kind: "rate", OK: true, Metrics: common},
		{Server: "gws", Phase: "custom", Kind: testKind, OK: true, Metrics: common},
	}}
	for name, render := range map[string]func(*strings.Builder) error{
		"tables":  func(b *strings.Builder) error { return Tables(b, run, nil, "md") },
		"compact": func(b *strings.Builder) error { return Compact(b, run, "md") },
	} {
		var b strings.Builder
		if err := render(&b); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(b.String(), "| server-bound |"); n != 2 {
			t.Errorf("%s: %d rows say server-bound, want 2:\n%s", name, n, b.String())
		}
	}
}
