package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
)

// TestHTMLOfRealRun: a tiny real run (two servers; connect, echo, rate)
// writes --html, and `wsplan report` compares its JSON with itself on one
// page; headless Chromium opens both pages: every chart is drawn with data
// and no error reaches the console. Skips where no chromium is installed.
func TestHTMLOfRealRun(t *testing.T) {
	testenv.Slow(t, "a real run and a headless Chromium per page: 7 s")
	bin := chromiumBinary(t)
	dir := writePlan(t, `
name: tiny
servers: [{name: gorilla}, {name: gws}]
phases:
  - connect: {connections: 40, concurrency: 20}
  - echo: {total: 2000, concurrency: 40, payload: 1KiB}
  - rate: {duration: 2s, rate: 20, payload: 1KiB, drain: 3s}
`)
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--html", "r.html", "--summary", "s.md", "--out", "logs")
	if code := r.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderrText())
	}
	assertNoLeftovers(t, dir)
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"report", filepath.Join(dir, "r.json"), filepath.Join(dir, "r.json"), "--html", filepath.Join(dir, "two.html")}, &stdout, &stderr); code != 0 {
		t.Fatalf("wsplan report: exit %d: %s", code, stderr.String())
	}
	s, err := os.ReadFile(filepath.Join(dir, "s.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"```mermaid\nxychart-beta\n", "Libraries measured: `github.com/gorilla/websocket` v", "wsplan   "} {
		if !strings.Contains(string(s), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	// connect: tps, mem, lat; echo: tps, cpu, mem, lat; rate: tps, cpu,
	// mem, lat and the sent, recv and p99 timelines (late only if any).
	const minCharts = 3 + 4 + 7
	for _, page := range []string{"r.html", "two.html"} {
		t.Run(page, func(t *testing.T) {
			charts, errs := openInChromium(t, bin, filepath.Join(dir, page))
			if len(errs) > 0 {
				t.Errorf("page errors: %q", errs)
			}
			if len(charts) < minCharts {
				t.Errorf("drew %d charts, want at least %d: %+v", len(charts), minCharts, charts)
			}
			for _, c := range charts {
				if !c.Drawn || c.Series == 0 || c.Points == 0 {
					t.Errorf("chart %s (%s): drawn=%v, %d series, %d points", c.ID, c.Type, c.Drawn, c.Series, c.Points)
				}
			}
		})
	}
}

type drawnChart struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Series int    `json:"series"`
	Points int    `json:"points"`
	Drawn  bool   `json:"drawn"`
}

func chromiumBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium binary on PATH (chromium, chromium-browser, google-chrome, headless_shell): install Debian's chromium to run the browser test")
	return ""
}

// openInChromium loads a page in headless Chromium and returns what its
// script reports in #wsplan-drawn and #wsplan-errors.
func openInChromium(t *testing.T, bin, path string) ([]drawnChart, []string) {
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
	text := func(id string) string {
		m := regexp.MustCompile(`<pre id="` + id + `"[^>]*>([^<]*)</pre>`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no #%s in the dumped DOM", id)
		}
		return html.UnescapeString(string(m[1]))
	}
	var d struct {
		Charts    []drawnChart `json:"charts"`
		Resources []string     `json:"resources"`
	}
	if err := json.Unmarshal([]byte(text("wsplan-drawn")), &d); err != nil {
		t.Fatalf("#wsplan-drawn: %v", err)
	}
	var errs []string
	if err := json.Unmarshal([]byte(text("wsplan-errors")), &errs); err != nil {
		t.Fatalf("#wsplan-errors: %v", err)
	}
	if d.Resources == nil || len(d.Resources) > 0 {
		errs = append(errs, fmt.Sprintf("the page loaded resources %q, want none (and the list)", d.Resources))
	}
	return d.Charts, errs
}
