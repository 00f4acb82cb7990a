package report

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the current output")

// testKind is a phase kind without a published layout, registered only in
// this test binary, to cover the generic table.
const testKind = "testrate"

func init() {
	scenarios.Register(scenarios.Kind{
		Name: testKind,
		Doc:  "open loop, for the report tests",
		New:  func() scenarios.Phase { return nil },
		Metrics: []metrics.Def{
			{Name: "sent", Kind: metrics.Count, Doc: "messages sent"},
			{Name: "achieved_rate", Kind: metrics.Float, Doc: "messages per second"},
			{Name: "p99", Kind: metrics.Duration, Doc: "99th percentile"},
			{Name: "bytes_recv", Kind: metrics.Bytes, Doc: "bytes received"},
			{Name: "lossy", Kind: metrics.Bool, Doc: "lost messages"},
		},
	})
}

const mib = 1 << 20

func us(f float64) time.Duration { return time.Duration(f * float64(time.Microsecond)) }

// testRun is two servers, a connect, an echo, a generic phase and a rate
// phase: gws is fine but client-bound in echo, gorilla's server died during
// echo (a failed result with partial metrics) and missed a connect
// assertion; in rate, gws kept the timetable while gorilla fell behind
// (late and lost messages, its server bound) and missed a rate assertion.
// gorilla's server-bound rows keep their failed assertions as verdicts.
func testRun() *result.Run {
	started := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	common := func(cpuMin, cpuAvg, cpuMax float64, memMin, memAvg, memMax int64, client float64, bound bool) metrics.Values {
		return metrics.Values{
			"cpu_min": cpuMin, "cpu_avg": cpuAvg, "cpu_max": cpuMax,
			"mem_min": memMin, "mem_avg": memAvg, "mem_max": memMax,
			"client_cpu_avg": client, "client_cpu_s": client / 100, "server_cpu_s": cpuAvg / 100,
			"client_mem_max": int64(48 * mib), "client_cpus": int64(1), "client_bound": bound,
			"server_cpus": int64(1), "server_bound": !bound && cpuAvg >= 90,
		}
	}
	with := func(a, b metrics.Values) metrics.Values {
		for k, v := range b {
			a[k] = v
		}
		return a
	}
	latency := func(min, avg, max, p50, p75, p90, p95, p99, p999 time.Duration) metrics.Values {
		return metrics.Values{"min": min, "avg": avg, "max": max, "p50": p50, "p75": p75, "p90": p90, "p95": p95, "p99": p99, "p999": p999}
	}
	return &result.Run{
		Schema: result.Schema,
		Plan: result.PlanInfo{
			Name: "demo", File: "plans/demo.yaml",
			Description: "Two servers, 1000 connections, 1 KiB echoes.",
			Vars:        map[string]string{"payload": "1024", "conns": "1000"},
		},
		Host: result.Host{
			Kernel: "6.8.0-49-generic", CPUModel: "AMD EPYC 7B13 64-Core Processor", Cores: 2,
			MemTotal: 24683548 * 1024, Go: "go1.26.8",
			Sysctl: map[string]string{
				"net.ipv4.ip_local_port_range": "1024 65535",
				"net.core.somaxconn":           "4096",
				"fs.nr_open":                   "1048576",
			},
			NoFileSoft: 20000, NoFileHard: 1048576, ServerCPUs: "0", ClientCPUs: "1",
		},
		Started:  started,
		Finished: started.Add(62*time.Second + 504*time.Millisecond),
		Results: []result.Result{
			{
				Server: "gws", Framework: "gws", Phase: "connect", Kind: "connect", OK: true,
				Warnings: []string{"12 connection attempts were retried"},
				Metrics: with(with(metrics.Values{
					"tps": 31234.56, "used": 32015 * time.Microsecond, "total": int64(1000), "success": int64(1000),
					"failed": int64(0), "retried": int64(12), "concurrency": int64(200), "conns": int64(1000),
				}, latency(us(95.5), us(850.314), 12345*time.Microsecond, us(702), us(910.2), 1234567*time.Nanosecond,
					us(1999.996), 5*time.Millisecond, 9*time.Millisecond)),
					common(0, 87.5, 87.5, 20*mib, 22*mib+512*1024, 25*mib, 61.25, false)),
			},
			{
				Server: "gws", Framework: "gws", Phase: "echo", Kind: "echo", OK: true,
				Warnings: []string{"client-bound: client CPU 97% of 1 usable core(s); this row measures the client"},
				Metrics: with(with(metrics.Values{
					"tps": 35012.345, "eer": 437.6543, "server_cpu_per_1m": 22.85, "client_cpu_per_1m": 27.71, "used": 57120 * time.Millisecond, "total": int64(2000000),
					"success": int64(2000000), "failed": int64(0), "conns": int64(1000), "concurrency": int64(1000),
					"payload": int64(1024),
				}, latency(19720*time.Nanosecond, 2790*time.Microsecond, 62*time.Second+504*time.Millisecond, us(2501.2),
					us(3000), us(4250.7), us(5120), 11*time.Millisecond, 20*time.Millisecond)),
					common(70.12, 80.0, 95.67, 60*mib, 66*mib, 72*mib, 97.04, true)),
			},
			{
				Server: "gorilla", Framework: "gorilla", Phase: "connect", Kind: "connect", OK: true,
				Metrics: with(with(metrics.Values{
					"tps": 28000.0, "used": 35714 * time.Microsecond, "total": int64(1000), "success": int64(1000),
					"failed": int64(0), "retried": int64(0), "concurrency": int64(200), "conns": int64(1000),
				}, latency(us(101), us(920), 15*time.Millisecond, us(800), us(1000), us(1500), us(2000), us(6100), 10*time.Millisecond)),
					common(10, 90.5, 99.99, 30*mib, 31*mib, 32*mib, 55.5, false)),
			},
			{
				// The server died: no tps or latency, only what the samplers saw.
				Server: "gorilla", Framework: "gorilla", Phase: "echo", Kind: "echo", OK: false,
				Error:     "server exited (signal: killed) during the phase: echo: read tcp 127.0.0.1:40112->127.0.0.1:9001: connection reset by peer | retry",
				ServerLog: "fatal error: out of memory\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/main.go:12 +0x1d",
				Metrics:   common(0, 45.5, 99, 31*mib, 300*mib, 900*mib, 40, false),
			},
			{
				Server: "gws", Framework: "gws", Phase: "custom", Kind: testKind, OK: true,
				Metrics: with(metrics.Values{
					"sent": int64(100000), "achieved_rate": 9876.5, "p99": 1500 * time.Microsecond,
					"bytes_recv": int64(100000 * 1024), "lossy": false,
				}, common(20, 30, 40, 70*mib, 71*mib, 72*mib, 25, false)),
			},
			{
				// A result from before its metrics were filled.
				Server: "gorilla", Framework: "gorilla", Phase: "custom", Kind: testKind, OK: false,
				Error: "skipped: server exited (signal: killed)",
			},
			{
				Server: "gws", Framework: "gws", Phase: "rate", Kind: "rate", OK: true,
				Metrics: with(with(metrics.Values{
					"duration": 10 * time.Second, "drain": 3 * time.Millisecond, "sent": int64(1000000), "recv": int64(1000000),
					"bytes_sent": int64(1000000 * 1024), "bytes_recv": int64(1000000 * 1024), "scheduled": int64(1000000),
					"send_rate": 100000.0, "achieved_rate": 100000.0, "recv_rate": 99970.1, "echo_eer": 1234.5678,
					"late": int64(17), "unsent": int64(0), "lost": int64(0), "failed": int64(0), "conns": int64(500),
					"rate": 200.0, "payload": int64(1024), "client_cpu_per_1m": 9.5, "server_cpu_per_1m": 8.1,
				}, latency(us(60), us(310.5), 41*time.Millisecond, us(250), us(330), us(480), us(620), 1750*time.Microsecond, 9*time.Millisecond)),
					common(70, 81, 92, 40*mib, 44*mib, 48*mib, 88.5, false)),
				Timeline: []result.Point{
					{T: 0, Sent: 100000, Recv: 99970, Late: 17, P50: us(250), P99: us(1700), Max: 41 * time.Millisecond},
					{T: 1, Sent: 0, Recv: 30, P50: us(900), P99: us(2100), Max: us(2100)},
				},
			},
			{
				// Fell behind: a rate shortfall, late and lost messages.
				Server: "gorilla", Framework: "gorilla", Phase: "rate", Kind: "rate", OK: true,
				Warnings: []string{
					"rate shortfall: 700000 of 1000000 scheduled messages sent (70.0%): the server could not keep up (CPU 100% of 1 core; client 61%)",
					"700000 of 1000000 messages late (70.0%; 300000 never sent): their latency counts from their schedule",
					"10000 of 700000 echoes never came (lost) by the end of the drain",
				},
				Metrics: with(with(metrics.Values{
					"duration": 10 * time.Second, "drain": 2 * time.Second, "sent": int64(700000), "recv": int64(690000),
					"bytes_sent": int64(700000 * 1024), "bytes_recv": int64(690000 * 1024), "scheduled": int64(1000000),
					"send_rate": 100000.0, "achieved_rate": 70000.0, "recv_rate": 57500.0, "echo_eer": 575.0,
					"late": int64(700000), "unsent": int64(300000), "lost": int64(10000), "failed": int64(0), "conns": int64(500),
					"rate": 200.0, "payload": int64(1024), "client_cpu_per_1m": 12.5, "server_cpu_per_1m": 14.5,
				}, latency(us(70), 850*time.Millisecond, 3*time.Second, 700*time.Millisecond, us(950000), 1200*time.Millisecond,
					1500*time.Millisecond, 2*time.Second+500*time.Millisecond, 2900*time.Millisecond)),
					common(95, 100, 100, 80*mib, 120*mib, 160*mib, 61.2, false)),
			},
		},
		Assertions: []result.Assertion{
			{Server: "gws", Phase: "connect", Name: "no failures", Expr: "failed == 0", Pass: true,
				Values: map[string]any{"failed": int64(0)}},
			{Server: "gws", Phase: "echo", Expr: `p99 < duration("200ms") && tps > 0.9 * baseline.tps`, Pass: true,
				Values: map[string]any{"p99": 11 * time.Millisecond, "tps": 35012.345, "baseline.tps": 34000.0}},
			{Server: "gorilla", Phase: "connect", Expr: "tps > 1e5 || results.gws.connect.p99 > p99", Pass: false,
				Values: map[string]any{"tps": 28000.0, "p99": us(6100), "results.gws.connect.p99": 5 * time.Millisecond}},
			{Server: "gorilla", Phase: "echo", Expr: `p99 < duration("200ms") && tps > 0.9 * baseline.tps`, Pass: false,
				Error: "phase failed: server exited (signal: killed) during the phase"},
			{Server: "gws", Phase: "rate", Expr: "lost == 0", Pass: true, Values: map[string]any{"lost": int64(0)}},
			{Server: "gorilla", Phase: "rate", Expr: "lost == 0", Pass: false, Values: map[string]any{"lost": int64(10000)}},
		},
	}
}

// baselineRun is testRun measured a little worse, with only gws's rate
// result besides connect and echo.
func baselineRun() *result.Run {
	b := testRun()
	b.Started = b.Started.Add(-24 * time.Hour)
	for i := range b.Results {
		m := b.Results[i].Metrics
		if v, ok := m["tps"].(float64); ok {
			m["tps"] = v * 0.9
		}
		if v, ok := m["p99"].(time.Duration); ok {
			m["p99"] = v * 2
		}
		if v, ok := m["achieved_rate"].(float64); ok {
			m["achieved_rate"] = v * 0.95
			m["echo_eer"] = m.Float("echo_eer") * 0.9
		}
	}
	b.Results = append(b.Results[:4], b.Results[6])
	b.Results[2].OK = false // gorilla connect: no baseline
	return b
}

// outputs renders every report of a run, by golden file name.
func outputs(t *testing.T, run *result.Run) map[string]string {
	t.Helper()
	out := map[string]string{}
	render := func(name string, f func(w io.Writer) error) {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = b.String()
	}
	render("tables.md", func(w io.Writer) error { return Tables(w, run, nil, "md") })
	render("tables.ascii", func(w io.Writer) error { return Tables(w, run, nil, "ascii") })
	render("tables_baseline.md", func(w io.Writer) error { return Tables(w, run, baselineRun(), "") })
	render("host.txt", func(w io.Writer) error { return Host(w, run) })
	render("assertions.md", func(w io.Writer) error { return Assertions(w, run, "md") })
	render("assertions.ascii", func(w io.Writer) error { return Assertions(w, run, "ascii") })
	render("summary.md", func(w io.Writer) error { return Markdown(w, run, nil) })
	render("junit.xml", func(w io.Writer) error { return JUnit(w, run) })
	return out
}

func TestGolden(t *testing.T) {
	for name, got := range outputs(t, testRun()) {
		golden(t, name, got)
	}
}

// TestRoundTrip writes the run as --json does, reads it back as `wsplan
// compare` does, and expects every report byte for byte as before.
func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	if err := testRun().WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := result.ReadFile(path, scenarios.ResultDefs)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range outputs(t, back) {
		golden(t, name, got)
	}
	// The baseline itself read back from a file gives the same deltas.
	bpath := filepath.Join(t.TempDir(), "base.json")
	if err := baselineRun().WriteFile(bpath); err != nil {
		t.Fatal(err)
	}
	base, err := result.ReadFile(bpath, scenarios.ResultDefs)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Tables(&b, back, base, "md"); err != nil {
		t.Fatal(err)
	}
	golden(t, "tables_baseline.md", b.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (go test ./report -update rewrites it):\n%s", name, path, lineDiff(string(want), got))
	}
}

// lineDiff is a small line diff: the common prefix and suffix are elided,
// the differing middle is shown as -want / +got.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	pre := 0
	for pre < len(w) && pre < len(g) && w[pre] == g[pre] {
		pre++
	}
	suf := 0
	for suf < len(w)-pre && suf < len(g)-pre && w[len(w)-1-suf] == g[len(g)-1-suf] {
		suf++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "@@ line %d @@\n", pre+1)
	for _, l := range w[pre : len(w)-suf] {
		b.WriteString("-" + l + "\n")
	}
	for _, l := range g[pre : len(g)-suf] {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

func TestLineDiff(t *testing.T) {
	got := lineDiff("a\nb\nc\nd\n", "a\nB\nc\nd\n")
	want := "@@ line 2 @@\n-b\n+B\n"
	if got != want {
		t.Errorf("lineDiff = %q, want %q", got, want)
	}
}

func TestVerdictAndClientCPU(t *testing.T) {
	var b bytes.Buffer
	if err := Tables(&b, testRun(), nil, "md"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"[Connections] Report\n",
		"[BenchEcho] Report\n",
		"[Testrate] Report: custom\n",
		"[BenchRate] Report\n",
		"- gorilla: rate shortfall: 700000 of 1000000 scheduled messages sent (70.0%)",
		"| 97.0% (bound) | client-bound  ",
		"| FAIL (1 assert) |",
		"| FAIL: server exited (signal: killed) during the phase |",
		"- gorilla: failed: server exited (signal: killed) during the phase: echo: read tcp", // full error under the table
		"connection reset by peer | retry (server log: fatal error: out of memory)\n",        // and the log's telling line
		"- gws: 12 connection attempts were retried\n",
		ClientBoundNote + "\n",
		`connection reset by peer | retry`, // not escaped outside the table
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tables lack %q", want)
		}
	}
	// client-bound is noted under the echo table only.
	if n := strings.Count(out, ClientBoundNote); n != 1 {
		t.Errorf("client-bound note printed %d times, want 1", n)
	}
}

// TestMissingMetrics renders results without any metric: "-" cells, no
// panic, whatever the kind.
func TestMissingMetrics(t *testing.T) {
	run := &result.Run{Schema: result.Schema, Results: []result.Result{
		{Server: "a", Phase: "connect", Kind: "connect", Error: "server did not start"},
		{Server: "a", Phase: "echo", Kind: "echo", Metrics: metrics.Values{}},
		{Server: "a", Phase: "mystery", Kind: "mystery", OK: true, Metrics: metrics.Values{
			"widgets": int64(3), "wait": 1500 * time.Millisecond, "ratio": 0.5, "odd": true, "cpu_avg": 12.0}},
	}}
	for _, format := range Formats {
		if err := Tables(io.Discard, run, run, format); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := Tables(&b, run, nil, "md"); err != nil {
		t.Fatal(err)
	}
	var withBase bytes.Buffer
	if err := Tables(&withBase, run, run, "md"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, want string }{
		{b.String(), "| a         | -   | -   | -   | -   | -    | -    | -    | -    | -    | -    | -     | -       | -      | -           | -       | -       | -       | -       | -       | -       | -             | -             | -          | FAIL: server did not start |"},
		{b.String(), "- a: failed: no reason recorded\n"},
		// An unknown kind shows the metrics it has, sorted, typed by value.
		{b.String(), "| Framework | odd | ratio | wait  | widgets | CPU Min | CPU Avg | CPU Max |"},
		{b.String(), "| a         | yes | 0.50  | 1.50s | 3       | -       | 12.00%  | -       |"},
		// Counts and bools get no delta; failed baseline rows give none.
		{withBase.String(), "| a         | yes | 0.50 (+0.0%) | 1.50s (+0.0%) | 3       | -       | 12.00% (+0.0%) | -       |"},
		{withBase.String(), "- a: no baseline result for echo\n"},
	} {
		if !strings.Contains(c.out, c.want) {
			t.Errorf("tables lack\n%s\ngot\n%s", c.want, c.out)
		}
	}
}

func TestEmptyRun(t *testing.T) {
	var b bytes.Buffer
	run := &result.Run{}
	if err := Tables(&b, run, nil, "md"); err != nil {
		t.Fatal(err)
	}
	if err := Assertions(&b, run, "md"); err != nil {
		t.Fatal(err)
	}
	if err := Host(&b, run); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&b, run, nil); err != nil {
		t.Fatal(err)
	}
	if err := JUnit(&b, run); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "(no results)\n") {
		t.Errorf("empty run: got %q", b.String())
	}
}

func TestUnknownFormat(t *testing.T) {
	for _, f := range []func() error{
		func() error { return Tables(io.Discard, testRun(), nil, "html") },
		func() error { return Assertions(io.Discard, testRun(), "html") },
	} {
		if err := f(); err == nil || !strings.Contains(err.Error(), `unknown format "html": want md or ascii`) {
			t.Errorf("error = %v, want unknown format", err)
		}
	}
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(p), nil
}

func TestWriteErrors(t *testing.T) {
	run := testRun()
	for name, f := range map[string]func(w io.Writer) error{
		"tables":     func(w io.Writer) error { return Tables(w, run, nil, "ascii") },
		"host":       func(w io.Writer) error { return Host(w, run) },
		"assertions": func(w io.Writer) error { return Assertions(w, run, "md") },
		"markdown":   func(w io.Writer) error { return Markdown(w, run, nil) },
		"junit":      func(w io.Writer) error { return JUnit(w, run) },
	} {
		for _, after := range []int{0, 1, 3} {
			if err := f(&failWriter{after: after}); err == nil || !strings.Contains(err.Error(), "disk full") {
				t.Errorf("%s with a writer failing after %d writes: error = %v, want disk full", name, after, err)
			}
		}
	}
}

// TestASCIIBox checks every line of an ascii table has the same width.
func TestASCIIBox(t *testing.T) {
	var b bytes.Buffer
	if err := Tables(&b, testRun(), nil, "ascii"); err != nil {
		t.Fatal(err)
	}
	width := 0
	for _, l := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "|") {
			width = 0 // between tables
			continue
		}
		n := len([]rune(l))
		if width == 0 {
			width = n
		} else if n != width {
			t.Fatalf("ascii line %q is %d wide, want %d", l, n, width)
		}
	}
}

// TestRateTable: the rate table has the published columns, in order, then
// Achieved, Late, Lost, TP50, TP99, Client CPU and Verdict.
func TestRateTable(t *testing.T) {
	var b bytes.Buffer
	if err := Tables(&b, testRun(), nil, "md"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i := strings.Index(out, "[BenchRate] Report\n")
	if i < 0 {
		t.Fatalf("no rate table in\n%s", out)
	}
	header := strings.SplitN(out[i:], "\n", 4)[2]
	var cols []string
	for _, c := range strings.Split(strings.Trim(header, "|"), "|") {
		cols = append(cols, strings.TrimSpace(c))
	}
	want := []string{"Framework", "Duration", "EchoEER", "Packet Sent", "Bytes Sent", "Packet Recv", "Bytes Recv", "Conns", "SendRate", "Payload",
		"CPU Min", "CPU Avg", "CPU Max", "MEM Min", "MEM Avg", "MEM Max", "Achieved", "Late", "Lost", "TP50", "TP99", "Client CPU", "Verdict"}
	if strings.Join(cols, ",") != strings.Join(want, ",") {
		t.Errorf("rate columns\n%v\nwant\n%v", cols, want)
	}
	for _, row := range []string{
		"| gws       | 10.00s   | 1234.57 | 1000000     | 976.56M    | 1000000     | 976.56M    | 500   | 100000   | 1024    |",
		"| 100000   | 17     | 0     | 250.00us | 1.75ms | 88.5%",
		"| 70000    | 700000 | 10000 | 700.00ms | 2.50s  | 61.2%      | FAIL (1 assert) |",
	} {
		if !strings.Contains(out, row) {
			t.Errorf("rate table lacks %q in\n%s", row, out[i:])
		}
	}
}

// TestTimelineRoundTrip: the timeline survives --json and a read back.
func TestTimelineRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	run := testRun()
	if err := run.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"timeline": [`) || !strings.Contains(string(raw), `"p99": 1700000`) {
		t.Errorf("JSON lacks the timeline:\n%s", raw)
	}
	back, err := result.ReadFile(path, scenarios.ResultDefs)
	if err != nil {
		t.Fatal(err)
	}
	got, want := back.Find("gws", "rate").Timeline, run.Find("gws", "rate").Timeline
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("timeline read back as %v, want %v", got, want)
	}
	if back.Find("gws", "echo").Timeline != nil {
		t.Errorf("echo result has a timeline")
	}
}

// TestOptionalColumns: the connect table shows its TLS columns only when a
// server of the table spoke TLS, and "-" for the plain ones beside it.
func TestOptionalColumns(t *testing.T) {
	plain := result.Result{Server: "ws", Phase: "connect", Kind: "connect", OK: true, Metrics: metrics.Values{"tps": 100.0}}
	secure := result.Result{Server: "wss", Phase: "connect", Kind: "connect", OK: true, Metrics: metrics.Values{
		"tps": 80.0, "tls_handshakes_per_s": 80.0, "tls_p99": 12 * time.Millisecond, "tls_resumed": int64(0)}}
	for _, c := range []struct {
		results []result.Result
		want    []string
		lacks   string
	}{
		{[]result.Result{plain}, nil, "TLS P99"},
		{[]result.Result{plain, secure}, []string{"| TLS/s | TLS P99 | Resumed |", "| 80    | 12.00ms | 0       |", "| -           | -     | -       | -       |"}, ""},
	} {
		var b bytes.Buffer
		if err := Tables(&b, &result.Run{Schema: result.Schema, Results: c.results}, nil, "md"); err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), strings.Join(strings.Fields(w), " ")) {
				t.Errorf("table lacks %q:\n%s", w, b.String())
			}
		}
		if c.lacks != "" && strings.Contains(b.String(), c.lacks) {
			t.Errorf("plain-only table shows %q:\n%s", c.lacks, b.String())
		}
	}
}

func TestLastLogLine(t *testing.T) {
	for _, c := range []struct{ log, want string }{
		{"", ""},
		{"starting\nlistening\n\n  \n", "listening"},
		{"node-ws: the ws package is not installed: run `npm ci --prefix examples/node-ws`\n", "node-ws: the ws package is not installed: run `npm ci --prefix examples/node-ws`"},
		{"ok\npanic: boom\n\ngoroutine 1 [running]:\nmain.main()\n", "panic: boom"},
		{strings.Repeat("x", 300), strings.Repeat("x", maxLogLine) + "…"},
	} {
		if got := lastLogLine(c.log); got != c.want {
			t.Errorf("lastLogLine(%q) = %q, want %q", c.log, got, c.want)
		}
	}
}
