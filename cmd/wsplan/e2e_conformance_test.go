package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
)

// TestRunConformance runs the conformance phase through the engine on two
// presets: the phase dials each server itself (Env.Target) from the
// orchestrating process, also when the plan has client shards, the JSON
// carries every case, the report lists the cases not OK per server, and
// the failed assertion makes the exit status 1.
func TestRunConformance(t *testing.T) {
	testenv.Slow(t, "2 s: a conformance phase against two presets")
	t.Parallel()
	dir := writePlan(t, `
servers: [{name: gobwas}, {name: nbio_std}]
client: {shards: 2}
phases:
  - conformance: {cases: ["1.1.1", "1.2.2", "2.2", "6.3.1"], parallel: 2}
assert:
  - expr: failed == 0
`)
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	if code := r.wait(t, 2*time.Minute); code != 1 {
		t.Fatalf("exit %d, want 1 (nbio_std fails 1.1.1); stderr:\n%s", code, r.stderrText())
	}
	if !strings.Contains(r.stderrText(), "nbio_std: 2 client shards") {
		t.Errorf("no shards started; stderr:\n%s", r.stderrText())
	}
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run struct {
		Results []struct {
			Server  string         `json:"server"`
			OK      bool           `json:"ok"`
			Error   string         `json:"error"`
			Metrics map[string]any `json:"metrics"`
			Detail  struct {
				Results []struct {
					ID      string `json:"id"`
					Verdict string `json:"verdict"`
				} `json:"results"`
			} `json:"detail"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"gobwas":   "1.1.1=OK 1.2.2=OK 2.2=OK 6.3.1=OK",
		"nbio_std": "1.1.1=FAILED 1.2.2=OK 2.2=OK 6.3.1=NON-STRICT",
	}
	if len(run.Results) != 2 {
		t.Fatalf("%d results, want 2", len(run.Results))
	}
	for _, res := range run.Results {
		var got []string
		for _, c := range res.Detail.Results {
			got = append(got, c.ID+"="+c.Verdict)
		}
		if strings.Join(got, " ") != want[res.Server] || !res.OK || res.Metrics["cases"] != 4.0 {
			t.Errorf("%s: ok=%v (%s), cases=%v, verdicts %q, want %q", res.Server, res.OK, res.Error, res.Metrics["cases"], got, want[res.Server])
		}
	}
	out := r.stdout.String()
	for _, s := range []string{"[Conformance] Report", "nbio_std: 2 cases not OK", "| 1.1.1 | FAILED", "| 6.3.1 | NON-STRICT",
		"nbio_std: 2 of 4 cases do not pass (strict): 1.1.1, 6.3.1"} {
		if !strings.Contains(out, s) {
			t.Errorf("stdout lacks %q:\n%s", s, out)
		}
	}
	if n := strings.Count(out, "cases not OK"); n != 1 {
		t.Errorf("%d tables of cases not OK, want 1 (gobwas passes every case):\n%s", n, out)
	}
	assertNoLeftovers(t, dir)
}
