package scenarios

import (
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/metrics"
)

func TestParseAllowance(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Allowance
		err  bool
	}{
		{"0", Allowance{}, false},
		{"10", Allowance{N: 10}, false},
		{" 5 ", Allowance{N: 5}, false},
		{"0.1%", Allowance{Percent: 0.1}, false},
		{"100%", Allowance{Percent: 100}, false},
		{"-1", Allowance{}, true},
		{"0%", Allowance{}, true},
		{"101%", Allowance{}, true},
		{"NaN%", Allowance{}, true},
		{"Inf%", Allowance{}, true},
		{"1.5", Allowance{}, true},
		{"ten", Allowance{}, true},
		{"", Allowance{}, true},
	} {
		got, err := ParseAllowance(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseAllowance(%q) = %+v, %v; want %+v, error %v", c.in, got, err, c.want, c.err)
		}
		if err == nil {
			if back, _ := ParseAllowance(got.String()); back != got {
				t.Errorf("%q: String %q reads back as %+v", c.in, got.String(), back)
			}
		}
	}
}

func TestCheckAllow(t *testing.T) {
	faults := []Fault{{Metric: "failed", Of: "total", What: "echoes failed"}, {Metric: "dropped", What: "connections dropped"}}
	errs := CheckAllow(Allow{"failed": {Percent: 1}, "dropped": {N: 2}}, faults)
	if len(errs) != 0 {
		t.Errorf("good allowances: %v", errs)
	}
	errs = CheckAllow(Allow{"lost": {N: 1}, "dropped": {Percent: 5}}, faults)
	if len(errs) != 2 || errs[0].Field != "dropped" || !strings.Contains(errs[0].Msg, "no total") ||
		errs[1].Field != "lost" || !strings.Contains(errs[1].Msg, "it counts failed, dropped") {
		t.Errorf("bad allowances: %v", errs)
	}
	if errs := CheckAllow(Allow{"failed": {}}, nil); len(errs) != 1 || !strings.Contains(errs[0].Msg, "counts no faults") {
		t.Errorf("a phase without faults: %v", errs)
	}
}

func TestJudge(t *testing.T) {
	faults := []Fault{{Metric: "failed", Of: "total", What: "echoes failed"}, {Metric: "dropped", What: "connections dropped"}}
	m := metrics.Values{"failed": int64(12), "total": int64(2000), "dropped": int64(0)}
	why := map[string]string{"failed": "timeout ×12"}
	for _, c := range []struct {
		name   string
		allow  Allow
		gated  func(string) bool
		m      metrics.Values
		failed []string
		notes  []string
	}{
		{"none", nil, nil, metrics.Values{"failed": int64(0), "total": int64(10)}, nil, nil},
		{"fails", nil, nil, m, []string{"12 of 2000 echoes failed: timeout ×12"}, nil},
		{"allowed by count", Allow{"failed": {N: 12}}, nil, m, nil, []string{"12 of 2000 echoes failed: timeout ×12 (allowed: up to 12)"}},
		{"over the count", Allow{"failed": {N: 11}}, nil, m, []string{"12 of 2000 echoes failed: timeout ×12 (allowed: up to 11)"}, nil},
		{"allowed by percent", Allow{"failed": {Percent: 1}}, nil, m, nil, []string{"12 of 2000 echoes failed: timeout ×12 (allowed: up to 1%)"}},
		{"over the percent", Allow{"failed": {Percent: 0.5}}, nil, m, []string{"12 of 2000 echoes failed: timeout ×12 (allowed: up to 0.5%)"}, nil},
		{"another allowed", Allow{"dropped": {N: 100}}, nil, m, []string{"12 of 2000 echoes failed: timeout ×12"}, nil},
		{"an assertion decides", nil, func(s string) bool { return s == "failed" }, m, nil, []string{"12 of 2000 echoes failed: timeout ×12 (an assertion decides)"}},
		{"no total", nil, nil, metrics.Values{"dropped": int64(3)}, []string{"3 connections dropped"}, nil},
	} {
		v := Judge(faults, c.allow, c.m, why, c.gated)
		if strings.Join(v.Failures, "|") != strings.Join(c.failed, "|") || strings.Join(v.Notes, "|") != strings.Join(c.notes, "|") {
			t.Errorf("%s: failures %q notes %q; want %q, %q", c.name, v.Failures, v.Notes, c.failed, c.notes)
		}
	}
}
