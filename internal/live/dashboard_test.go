package live

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboardExprs are the PromQL queries of dashboards/wsplan.json.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../dashboards/wsplan.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	return out
}

var (
	seriesRx   = regexp.MustCompile(`\bwsplan_[a-z_]+`)
	matcherRx  = regexp.MustCompile(`\{([^}]*)\}`)
	labelRx    = regexp.MustCompile(`(\w+)\s*(?:=~|!~|!=|=)`)
	groupingRx = regexp.MustCompile(`\b(?:by|on|without|ignoring)\s*\(([^)]*)\)`)
)

// TestDashboardSeries: every series the dashboard queries is one wsplan
// exports (a histogram with its _bucket, _sum or _count), every label it
// matches or groups by is one the series carry (and le), and the
// dashboard shows throughput, latency, connections, errors, CPU, memory
// and drops, and the connect failures by reason. TestLivePrometheus runs
// the same queries on a real Prometheus.
func TestDashboardSeries(t *testing.T) {
	exprs := dashboardExprs(t)
	allowed := append(slices.Clone(Labels), "le")
	used := map[string]bool{}
	byReason := false
	for _, e := range exprs {
		for _, g := range groupingRx.FindAllStringSubmatch(e, -1) {
			byReason = byReason || strings.Contains(e, ConnectFailures) && slices.Contains(strings.Split(strings.ReplaceAll(g[1], " ", ""), ","), LabelReason)
		}
		for _, name := range seriesRx.FindAllString(e, -1) {
			base := name
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suf); ok && slices.ContainsFunc(Defs, func(d Def) bool { return d.Name == b && d.Type == Histogram }) {
					base = b
				}
			}
			if !slices.ContainsFunc(Defs, func(d Def) bool { return d.Name == base }) {
				t.Errorf("dashboard queries %s, which wsplan does not export: %s", name, e)
			}
			used[base] = true
		}
		var labels []string
		for _, m := range matcherRx.FindAllStringSubmatch(e, -1) {
			for _, l := range labelRx.FindAllStringSubmatch(m[1], -1) {
				labels = append(labels, l[1])
			}
		}
		for _, g := range groupingRx.FindAllStringSubmatch(e, -1) {
			for _, l := range strings.Split(g[1], ",") {
				labels = append(labels, strings.TrimSpace(l))
			}
		}
		for _, l := range labels {
			if !slices.Contains(allowed, l) {
				t.Errorf("dashboard uses label %q, not one of %v: %s", l, allowed, e)
			}
		}
	}
	for _, n := range []string{MessagesSent, MessagesReceived, Latency, ConnectionsOpen, MessagesFailed, ConnectFailures, ServerCPU, ClientCPU, ServerMemory, ClientMemory, Dropped} {
		if !used[n] {
			t.Errorf("the dashboard does not show %s", n)
		}
	}
	if !byReason {
		t.Errorf("the dashboard does not show %s by %s", ConnectFailures, LabelReason)
	}
}
