package report

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/testenv"
)

func renderHTML(t *testing.T, runs ...*result.Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, runs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func withProvenance(r *result.Run) *result.Run {
	r.Wsplan = &result.Provenance{Version: "(devel)", Revision: "0123456789abcdef", Go: "go1.26.8",
		Libraries: map[string]string{"github.com/lxzan/gws": "v1.8.9", "github.com/gorilla/websocket": "v1.5.3"}}
	return r
}

// resourceRef finds what would make a browser fetch something: src= and
// href= attributes, CSS url() and @import, JS import and fetch().
var resourceRef = regexp.MustCompile(`(?i)(\b(src|href|action|poster|srcset)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?\s*(https?:)?//|@import|\bimport\s*\(|\bimport\s+[^;]*\bfrom\s|\bfetch\s*\(|XMLHttpRequest|new\s+WebSocket|navigator\.sendBeacon)`)

// allowedURLs are the only absolute URLs the page may contain, and why:
// neither is fetched.
var allowedURLs = map[string]string{
	"https://github.com/leeoniya/uPlot": "uPlot's banner comment",
	"http://www.w3.org/2000/svg":        "the SVG namespace name for createElementNS",
}

// TestHTMLNoNetwork: the page references no resource outside itself.
func TestHTMLNoNetwork(t *testing.T) {
	for name, page := range map[string]string{
		"one run":  renderHTML(t, withProvenance(testRun())),
		"two runs": renderHTML(t, baselineRun(), testRun()),
	} {
		t.Run(name, func(t *testing.T) {
			if m := resourceRef.FindAllString(page, -1); len(m) > 0 {
				t.Errorf("resource references: %q", m)
			}
			for _, u := range regexp.MustCompile(`https?://[^\s"'<>)]*`).FindAllString(page, -1) {
				if _, ok := allowedURLs[u]; !ok {
					t.Errorf("absolute URL %q in the page", u)
				}
			}
			for _, want := range []string{"<script>", "uPlot", "window.WSPLAN_CHARTS", "[BenchEcho] Report", "[BenchRate] Report"} {
				if !strings.Contains(page, want) {
					t.Errorf("page lacks %q", want)
				}
			}
		})
	}
}

// TestHTMLTablesMatchTerminal: every cell of the Markdown tables is in the
// page, in order, escaped.
func TestHTMLTablesMatchTerminal(t *testing.T) {
	run := withProvenance(testRun())
	page := renderHTML(t, run)
	var md bytes.Buffer
	if err := Tables(&md, run, nil, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	blocks := parseMarkdownTables(md.String())
	tables := 0
	for _, b := range blocks {
		if b.Header == nil {
			continue
		}
		tables++
		for _, r := range b.Rows {
			if len(r) != len(b.Header) {
				t.Errorf("%s: row has %d cells, header %d: %q", b.Title, len(r), len(b.Header), r)
			}
			want := "<tr><td>" + html.EscapeString(r[0]) + "</td>"
			if !strings.Contains(page, want) {
				t.Errorf("%s: page lacks row %q", b.Title, want)
			}
		}
	}
	if tables != 4 {
		t.Errorf("parsed %d tables, want 4", tables)
	}
	for _, want := range []string{"wsplan (devel) 0123456789ab go1.26.8", "github.com/lxzan/gws v1.8.9", "[Assertions] Report",
		"server exited (signal: killed) during the phase"} {
		if !strings.Contains(page, html.EscapeString(want)) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestParseMarkdownTables(t *testing.T) {
	md := "[X] Report\n\n| A | B |\n|:--|:--|\n| 1 | a\\|b |\n| 2 | - |\n\n- gws: late\nclient-bound: note\n\n[Y] Report: y\n\n| C |\n|---|\n| 3 |\n"
	got := parseMarkdownTables(md)
	want := []mdBlock{
		{Title: "[X] Report", Header: []string{"A", "B"}, Rows: [][]string{{"1", "a|b"}, {"2", "-"}}, Notes: []string{"gws: late", "client-bound: note"}},
		{Title: "[Y] Report: y", Header: []string{"C"}, Rows: [][]string{{"3"}}},
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("got  %s\nwant %s", gb, wb)
	}
}

// unknownKindRun is a run of a kind this build does not know (a file from a
// newer wsplan, as read back from JSON: durations are float nanoseconds): it
// gets a generic table and the charts its metrics allow, its throughput
// chart from the headline its results recorded.
func unknownKindRun() *result.Run {
	return &result.Run{Schema: result.Schema, Plan: result.PlanInfo{Name: "future"}, Results: []result.Result{
		{Server: "gws", Phase: "fanout", Kind: "future", OK: true, Throughput: "tps", Metrics: metrics.Values{"tps": 1234.5, "p50": 2e6, "p99": 9e6, "fanout": 100.0}},
		{Server: "gorilla", Phase: "fanout", Kind: "future", OK: true, Throughput: "tps", Metrics: metrics.Values{"tps": 999.0, "p50": 3e6, "p99": 12e6, "fanout": 100.0}},
	}}
}

// TestChartModel: which charts each phase of the test run gets, and how
// many series; a failed result draws nothing.
func TestChartModel(t *testing.T) {
	type want struct {
		phase  string
		charts map[string]int // chart id suffix → series
	}
	for _, tc := range []struct {
		name string
		runs []*result.Run
		want []want
	}{
		{"one run", []*result.Run{testRun()}, []want{
			{"connect", map[string]int{"throughput": 1, "mem": 1, "lat": 2}},
			{"echo", map[string]int{"throughput": 1, "cpu": 2, "mem": 1, "lat": 1}},
			{"custom", map[string]int{"lat": 1}},
			{"rate", map[string]int{"throughput": 1, "cpu": 2, "mem": 1, "lat": 2, "tl-sent": 1, "tl-recv": 1, "tl-late": 1, "tl-p99": 1}},
		}},
		{"two runs", []*result.Run{baselineRun(), testRun()}, []want{
			{"connect", map[string]int{"throughput": 2, "mem": 2, "lat": 3}},
			{"echo", map[string]int{"throughput": 2, "cpu": 4, "mem": 2, "lat": 2}},
			{"rate", map[string]int{"throughput": 2, "cpu": 4, "mem": 2, "lat": 3, "tl-sent": 2, "tl-recv": 2, "tl-late": 2, "tl-p99": 2}},
			{"custom", map[string]int{"lat": 1}},
		}},
		{"unknown kind", []*result.Run{unknownKindRun()}, []want{
			{"fanout", map[string]int{"throughput": 1, "lat": 2}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secs := chartModel(tc.runs, runLabels(tc.runs))
			if len(secs) != len(tc.want) {
				t.Fatalf("%d sections, want %d", len(secs), len(tc.want))
			}
			for i, w := range tc.want {
				s := secs[i]
				if s.Phase != w.phase {
					t.Errorf("section %d is %s, want %s", i, s.Phase, w.phase)
				}
				got := map[string]int{}
				for _, c := range s.Charts {
					got[strings.SplitN(c.ID, "-", 2)[1]] = len(c.Series)
				}
				gb, _ := json.Marshal(got)
				wb, _ := json.Marshal(w.charts)
				if string(gb) != string(wb) {
					t.Errorf("%s: charts %s, want %s", w.phase, gb, wb)
				}
			}
		})
	}
}

func TestRunLabels(t *testing.T) {
	a, b := testRun(), testRun()
	if got := runLabels([]*result.Run{a, b}); got[0] != "12-02 10:00:00" || got[1] != "12-02 10:00:00 #2" {
		t.Errorf("same plan, same time: %q", got)
	}
	b.Plan.Name = "other"
	if got := runLabels([]*result.Run{a, b}); got[0] != "demo 12-02 10:00:00" || got[1] != "other 12-02 10:00:00" {
		t.Errorf("two plans: %q", got)
	}
}

func TestHTMLNoRuns(t *testing.T) {
	if err := HTML(&bytes.Buffer{}, nil); err == nil {
		t.Error("no error for no runs")
	}
}

// chromium returns a headless-capable Chromium binary, or skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium binary on PATH (chromium, chromium-browser, google-chrome, headless_shell): install Debian's chromium to run the browser test")
	return ""
}

// drawnCharts is what the page's script writes into #wsplan-drawn.
type drawnCharts struct {
	Charts []struct {
		ID     string `json:"id"`
		Type   string `json:"type"`
		Series int    `json:"series"`
		Points int    `json:"points"`
		Drawn  bool   `json:"drawn"`
	} `json:"charts"`
	Resources []string `json:"resources"` // every resource the page loaded
}

// BrowserCheck opens an HTML report in headless Chromium and returns what
// its script says it drew, and its errors. Exported to the package's tests
// only through this file; cmd/wsplan has its own copy for a real run.
func browserCheck(t *testing.T, bin, path string) (drawnCharts, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--window-size=1400,2400", "--virtual-time-budget=5000", "--dump-dom", "file://"+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	dom := string(out)
	text := func(id string) string {
		m := regexp.MustCompile(`<pre id="` + id + `"[^>]*>([^<]*)</pre>`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("no #%s in the dumped DOM:\n%.2000s", id, dom)
		}
		return html.UnescapeString(m[1])
	}
	var d drawnCharts
	if err := json.Unmarshal([]byte(text("wsplan-drawn")), &d); err != nil {
		t.Fatalf("#wsplan-drawn: %v", err)
	}
	var errs []string
	if err := json.Unmarshal([]byte(text("wsplan-errors")), &errs); err != nil {
		t.Fatalf("#wsplan-errors: %v", err)
	}
	return d, errs
}

// TestHTMLInBrowser opens the page of the test run, alone and compared with
// its baseline, in headless Chromium: every chart the model computed is
// drawn, with as many series and points as the model has, and no error
// reached the console or window.onerror.
func TestHTMLInBrowser(t *testing.T) {
	testenv.Slow(t, "a headless Chromium per page: 8 s")
	bin := chromium(t)
	for name, runs := range map[string][]*result.Run{
		"one run":      {withProvenance(testRun())},
		"two runs":     {baselineRun(), testRun()},
		"unknown kind": {unknownKindRun()},
		"empty run":    {{Schema: result.Schema}},
		"matrix":       {result.Collapse(matrixRun())},
		"echo timeline, histograms, search steps, fan-out": {richRun()},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.html")
			if err := os.WriteFile(path, []byte(renderHTML(t, runs...)), 0o644); err != nil {
				t.Fatal(err)
			}
			d, errs := browserCheck(t, bin, path)
			if len(errs) > 0 {
				t.Errorf("page errors: %q", errs)
			}
			if d.Resources == nil || len(d.Resources) > 0 {
				t.Errorf("the page loaded resources %q, want none (and the list)", d.Resources)
			}
			want := map[string][2]int{}
			for _, s := range chartModel(runs, runLabels(runs)) {
				for _, c := range s.Charts {
					n := 0
					for _, sr := range c.Series {
						n += len(sr.Points)
						for _, v := range sr.Values {
							if v != nil {
								n++
							}
						}
					}
					want[c.ID] = [2]int{len(c.Series), n}
				}
			}
			if len(d.Charts) != len(want) {
				t.Errorf("drew %d charts, the model has %d", len(d.Charts), len(want))
			}
			for _, c := range d.Charts {
				w, ok := want[c.ID]
				switch {
				case !ok:
					t.Errorf("%s: drawn but not in the model", c.ID)
				case !c.Drawn:
					t.Errorf("%s (%s): not drawn", c.ID, c.Type)
				case c.Series != w[0] || c.Points != w[1]:
					t.Errorf("%s (%s): drew %d series, %d points; model has %d, %d", c.ID, c.Type, c.Series, c.Points, w[0], w[1])
				case c.Points == 0:
					t.Errorf("%s (%s): no data", c.ID, c.Type)
				}
			}
		})
	}
}

// TestChartsGolden: the charts the page draws for the test run compared
// with its baseline, as the JSON the script receives.
func TestChartsGolden(t *testing.T) {
	runs := []*result.Run{baselineRun(), testRun()}
	b, err := json.MarshalIndent(chartModel(runs, runLabels(runs)), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "charts.json", string(b)+"\n")
}

// TestHTMLEscapes: names and errors from a plan or a server cannot break
// out of the page's markup or its inlined data.
func TestHTMLEscapes(t *testing.T) {
	run := testRun()
	const evil = `</script><b id="evil">x</b>`
	for i := range run.Results {
		if run.Results[i].Server == "gorilla" {
			run.Results[i].Server = evil
			run.Results[i].Error += " " + evil
		}
	}
	run.Plan.Description = evil
	page := renderHTML(t, run)
	if strings.Contains(page, `<b id="evil">`) {
		t.Error("unescaped markup from a server name reached the page")
	}
	if n := strings.Count(page, "</script>"); n != 3 {
		t.Errorf("%d </script> tags, want the page's own 3", n)
	}
}
