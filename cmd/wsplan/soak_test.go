package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
)

// soakResult is the part of a result the soak tests read.
type soakResult struct {
	Phase   string         `json:"phase"`
	OK      bool           `json:"ok"`
	Error   string         `json:"error"`
	Metrics map[string]any `json:"metrics"`
	Soak    *struct {
		Interval int64 `json:"interval"`
		Points   []struct {
			T          int64 `json:"t"`
			RSS        int64 `json:"rss"`
			FDs        int64 `json:"fds"`
			Threads    int64 `json:"threads"`
			Done       int64 `json:"done"`
			ClientRSS  int64 `json:"client_rss"`
			Goroutines int64 `json:"goroutines"`
			Drain      bool  `json:"drain"`
		} `json:"points"`
	} `json:"soak"`
}

func readSoak(t *testing.T, path string) []soakResult {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []soakResult `json:"results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Results
}

// TestSoakSeries: a hold phase of a server wsplan started carries its
// resource series: the server's RSS, fds (at least one per connection)
// and threads, the pings done, the client's RSS and goroutines, every
// sample interval, then the drain (rss_after_drain); the connect phase,
// whose load is not constant, carries none.
func TestSoakSeries(t *testing.T) {
	testenv.Slow(t, "a soak series: 4 s; scenarios tests the fit")
	dir := writePlan(t, fmt.Sprintf(`
defaults: {base_port: %d, sample_interval: 200ms}
soak: {drain: 1s}
servers: [{name: gws}]
phases:
  - connect: {connections: 50}
  - hold: {duration: 3s, ping: 100ms}
`, freeBasePort(t, 1)))
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	if code := r.wait(t, time.Minute); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\n%s", code, r.stderrText(), r.stdout.String())
	}
	res := readSoak(t, filepath.Join(dir, "r.json"))
	if len(res) != 2 || res[0].Soak != nil || res[1].Soak == nil {
		t.Fatalf("results %+v: want a soak series on hold only", res)
	}
	s := res[1].Soak
	load, drain := 0, 0
	for _, p := range s.Points {
		if p.Drain {
			drain++
			continue
		}
		load++
		if p.RSS <= 0 || p.FDs < 50 || p.Threads < 1 || p.ClientRSS <= 0 || p.Goroutines < 1 {
			t.Errorf("point %+v: want the server's RSS, ≥ 50 fds, threads, the client's RSS and goroutines", p)
		}
	}
	if load < 12 || drain < 3 || s.Interval != int64(200*time.Millisecond) {
		t.Errorf("%d load points, %d drain points, interval %d: want ~15 and ~5 every 200ms", load, drain, s.Interval)
	}
	if last := s.Points[len(s.Points)-1]; !last.Drain || last.Done < 1000 {
		t.Errorf("last point %+v: want a drain point after ~1500 pings", last)
	}
	m := res[1].Metrics
	for _, k := range []string{"rss_slope", "fds_slope", "threads_slope", "client_rss_slope", "goroutines_slope", "rss_after_drain", "soak_span"} {
		if _, ok := m[k]; !ok {
			t.Errorf("hold metrics lack %s: %v", k, m)
		}
	}
	if _, ok := m["leak"]; ok {
		t.Errorf("leak written for a 3 s hold: too short to tell")
	}
	if !strings.Contains(r.stdout.String(), "[Soak] hold: resources over the phase") {
		t.Errorf("no soak table:\n%s", r.stdout.String())
	}
}
