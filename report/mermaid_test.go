package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

func TestMermaid(t *testing.T) {
	many := &result.Run{}
	for i := 0; i < 7; i++ {
		many.Results = append(many.Results, result.Result{Server: fmt.Sprintf("s%d", i), Phase: "e", Kind: "echo", OK: true,
			Metrics: metrics.Values{"tps": float64(1000 * (i + 1))}})
	}
	connectOnly := &result.Run{Results: []result.Result{{Server: "a", Phase: "connect", Kind: "connect", OK: true, Metrics: metrics.Values{"tps": 5.0}}}}
	for _, tc := range []struct {
		name    string
		run     *result.Run
		want    []string
		notWant []string
	}{
		{"test run", testRun(), []string{"```mermaid\nxychart-beta\n    title \"echo: echoes/s (tps)\"", "bar [35012.35, 0]", "Failed, shown as 0: gorilla.",
			"<details>", "line [99970, 30]"}, []string{"horizontal", "custom", "connect"}},
		{"seven servers lie horizontal", many, []string{"xychart-beta horizontal", "y-axis \"echoes/s\" 0 --> 10000", "bar [1000, 2000, 3000, 4000, 5000, 6000, 7000]"}, []string{"<details>"}},
		{"connect only: nothing", connectOnly, nil, []string{"mermaid"}},
		// An echo phase's 52000/s must not flatten a rate phase's 4000/s:
		// one y axis per phase.
		{"echo and rate timelines: an axis per phase", richTimelines(), []string{
			"echo, gws: echoes received per second (worst second's p99: 7 ms)\"\n    x-axis \"second\" [\"0\", \"1\", \"2\", \"3\", \"4\"]\n    y-axis \"echoes/s\" 0 --> 100000",
			"rate, gws: echoes received per second (worst second's p99: 2 ms)\"\n    x-axis \"second\" [\"0\", \"1\"]\n    y-axis \"echoes/s\" 0 --> 5000"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Mermaid(&b, tc.run); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("lacks %q in:\n%s", w, b.String())
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("has %q in:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestMermaidHelpers(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want float64
	}{{0, 1}, {-3, 1}, {0.7, 1}, {1, 1}, {1.1, 2}, {2.2, 2.5}, {3, 5}, {35012, 50000}, {99970, 100000}, {100001, 200000}} {
		if got := niceCeil(tc.in); got != tc.want {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := mermaidString("a \"b\"\n c"); got != `"a 'b' c"` {
		t.Errorf("mermaidString = %s", got)
	}
	if got := mermaidNumber(1234.5678); got != "1234.57" {
		t.Errorf("mermaidNumber = %s", got)
	}
}

// TestSummaryProvenance: the summary and the host banner say which wsplan
// build measured the run and which library versions.
func TestSummaryProvenance(t *testing.T) {
	var b bytes.Buffer
	if err := Markdown(&b, withProvenance(testRun()), nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"wsplan   (devel) 0123456789ab go1.26.8\n",
		"Libraries measured: `github.com/gorilla/websocket` v1.5.3, `github.com/lxzan/gws` v1.8.9.\n"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("summary lacks %q", w)
		}
	}
}

// richTimelines is richRun's echo phase with a rate phase's timeline.
func richTimelines() *result.Run {
	run := richRun()
	run.Results = append(run.Results[:2:2], result.Result{Server: "gws", Framework: "gws", Phase: "rate", Kind: "rate", OK: true,
		Metrics:  metrics.Values{"recv_rate": 4000.0},
		Timeline: []result.Point{{T: 0, Sent: 4000, Recv: 4000, P99: 2_000_000}, {T: 1, Sent: 4000, Recv: 3990, P99: 1_000_000}}})
	return run
}
