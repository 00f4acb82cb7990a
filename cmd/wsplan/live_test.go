package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/live"
	"github.com/wsplan/wsplan/internal/testenv"
)

// startPrometheus starts Debian's prometheus on a loopback port with the
// remote-write receiver, scraping scrape (host:port) every second; it
// skips the test when prometheus is not installed.
func startPrometheus(t *testing.T, scrape string) string {
	t.Helper()
	exe, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (apt-get install prometheus; .ci/run installs it)")
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: wsplan
    scrape_interval: 1s
    static_configs: [{targets: ['%s']}]
`, scrape)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freeBasePort(t, 1))
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--web.enable-remote-write-receiver")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // only our own child, by pid
		_ = cmd.Wait()
		log.Close()
	})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if r, err := http.Get("http://" + addr + "/-/ready"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return addr
			}
		}
	}
	b, _ := os.ReadFile(log.Name())
	t.Fatalf("prometheus not ready: %s", b)
	return ""
}

// dashboardQueries are the queries of dashboards/wsplan.json, with
// Grafana's variables set to every plan and server and a 10 s rate
// interval.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../dashboards/wsplan.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$__rate_interval", "10s", "$plan", ".*", "$server", ".*")
	var out []string
	var walk func(any)
	walk = func(x any) {
		switch v := x.(type) {
		case map[string]any:
			if e, ok := v["expr"].(string); ok {
				out = append(out, vars.Replace(e))
			}
			for _, y := range v {
				walk(y)
			}
		case []any:
			for _, y := range v {
				walk(y)
			}
		}
	}
	walk(doc)
	if len(out) < 10 {
		t.Fatalf("dashboard: %d queries", len(out))
	}
	return out
}

// promQuery evaluates an instant PromQL query at at and returns its first
// value (failing when it has none).
func promQuery(t *testing.T, addr, q string, at time.Time) float64 {
	t.Helper()
	u := fmt.Sprintf("http://%s/api/v1/query?query=%s&time=%.3f", addr, url.QueryEscape(q), float64(at.UnixMilli())/1000)
	r, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	var res struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &res); err != nil || res.Status != "success" || len(res.Data.Result) == 0 {
		t.Fatalf("query %s: %v: %s", q, err, b)
	}
	v, err := strconv.ParseFloat(res.Data.Result[0].Value[1].(string), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLivePrometheus: a real Prometheus scrapes --metrics-listen during a
// 30 s rate phase and also receives the same series by remote write; its
// rate() of the messages sent matches the phase's achieved rate within
// 2%, both ways, and the p99 of the histogram is within one bucket of the
// run's own.
func TestLivePrometheus(t *testing.T) {
	testenv.Slow(t, "a real Prometheus scraping a 30 s rate phase")
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freeBasePort(t, 1))
	prom := startPrometheus(t, metricsAddr)
	dir := writePlan(t, `servers: [{name: gws}]
phases:
  - connect: {connections: 100, concurrency: 100}
  - rate: {duration: 30s, rate: 50, payload: 64}
  - hold: {duration: 3s}
`)
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs",
		"--metrics-listen", metricsAddr, "--metrics-push", "http://"+prom+"/api/v1/write", "--metrics-interval", "1s")
	r.waitLine(t, `gws: rate done`, 2*time.Minute)
	rateDone := time.Now()
	r.waitLine(t, `gws: hold done`, time.Minute)
	if code := r.wait(t, time.Minute); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderrText())
	}
	res := readJSON(t, filepath.Join(dir, "r.json"))
	m := res.Results[1].Metrics
	achieved, p99 := m["achieved_rate"].(float64), m["p99"].(float64)/1e9

	for _, job := range []string{"wsplan", ""} {
		// 10 s windows well inside the phase; the median, so that one
		// stall of this shared host (caught up later by the pacer) does
		// not decide.
		var rates []float64
		for _, back := range []time.Duration{8, 11, 14} {
			q := fmt.Sprintf(`rate(%s{job=%q,phase="rate"}[10s])`, live.MessagesSent, job)
			rates = append(rates, promQuery(t, prom, q, rateDone.Add(-back*time.Second)))
		}
		slices.Sort(rates)
		t.Logf("job %q: rate() over 10 s windows %.0f/s; achieved %.0f/s", job, rates, achieved)
		if got := rates[1]; math.Abs(got-achieved) > 0.02*achieved {
			t.Errorf("job %q: rate() %.0f/s (windows: %.0f), the phase achieved %.0f/s: off by more than 2%%", job, got, rates, achieved)
		}
		q := promQuery(t, prom, fmt.Sprintf(`histogram_quantile(0.99, sum by (le) (%s_bucket{job=%q,phase="rate"}))`, live.Latency, job), rateDone.Add(2*time.Second))
		t.Logf("job %q: histogram p99 %.6fs, the run's %.6fs", job, q, p99)
		if ratio := q / p99; ratio < 1/math.Sqrt2 || ratio > math.Sqrt2 {
			t.Errorf("job %q: histogram p99 %.6fs, the run's %.6fs: more than one bucket (×√2) apart", job, q, p99)
		}
	}
	// Every query of the Grafana dashboard answers with data (but the
	// per-shard ones: this run has no shards).
	for _, e := range dashboardQueries(t) {
		if !strings.Contains(e, `shard!=""`) {
			promQuery(t, prom, e, rateDone.Add(-8*time.Second))
		}
	}
	if strings.Contains(r.stderrText(), "dropped") {
		t.Errorf("samples dropped with a healthy receiver:\n%s", r.stderrText())
	}
}

// TestLivePushReceiverDown: a receiver that refuses connections or hangs
// changes nothing in the run's results: it ends 0 with every message
// back, and says how many samples it dropped.
func TestLivePushReceiverDown(t *testing.T) {
	testenv.Slow(t, "4 s: a push receiver that hangs, waited out")
	hang := startHangingServer(t)
	t.Setenv("WSPLAN_TEST_PUSH_TOKEN", "s3cret-push-token")
	// The hanging receiver through the plan's metrics: key, with a secret
	// header; the refusing one through the flag.
	dir := writePlan(t, fmt.Sprintf(`metrics: {otlp: "http://%s/v1/metrics", interval: 500ms, headers: {Authorization: "Bearer ${env:WSPLAN_TEST_PUSH_TOKEN}"}}
servers: [{name: gws}]
phases:
  - connect: {connections: 50, concurrency: 50}
  - rate: {duration: 3s, rate: 20, payload: 64}
`, hang))
	refused := fmt.Sprintf("http://127.0.0.1:%d/api/v1/write", freeBasePort(t, 1))
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs",
		"--metrics-push", refused, "--metrics-interval", "500ms")
	if code := r.wait(t, time.Minute); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderrText())
	}
	m := readJSON(t, filepath.Join(dir, "r.json")).Results[1].Metrics
	// Every message due was sent or, on a busy host, counted unsent; none
	// lost.
	num := func(k string) float64 { f, _ := m[k].(float64); return f }
	if num("lost") != 0 || num("scheduled") != 3000 || num("sent")+num("unsent") != 3000 {
		t.Errorf("rate with a dead receiver: scheduled %v, sent %v, unsent %v, lost %v; want 3000 = sent + unsent, none lost", m["scheduled"], m["sent"], m["unsent"], m["lost"])
	}
	if !strings.Contains(r.stderrText(), "samples dropped ("+live.Dropped+")") {
		t.Errorf("no dropped samples reported; stderr:\n%s", r.stderrText())
	}
	if !hang.got(http.Header{"Authorization": {"Bearer s3cret-push-token"}}) {
		t.Error("the plan's push did not reach its receiver with its header")
	}
	if strings.Contains(r.stderrText()+r.stdout.String(), "s3cret-push-token") {
		t.Error("the header's secret was printed")
	}
}

// hangingServer accepts HTTP requests and never answers them (until the
// test ends); it remembers the requests' headers.
type hangingServer struct {
	addr    string
	mu      sync.Mutex
	headers []http.Header
}

func (h *hangingServer) String() string { return h.addr }

// got reports whether a request carried every header of want.
func (h *hangingServer) got(want http.Header) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, hd := range h.headers {
		ok := true
		for k := range want {
			ok = ok && hd.Get(k) == want.Get(k)
		}
		if ok {
			return true
		}
	}
	return false
}

func startHangingServer(t *testing.T) *hangingServer {
	t.Helper()
	hs := &hangingServer{addr: fmt.Sprintf("127.0.0.1:%d", freeBasePort(t, 1))}
	addr := hs.addr
	done := make(chan struct{})
	srv := &http.Server{Addr: addr, ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs.mu.Lock()
		hs.headers = append(hs.headers, r.Header.Clone())
		hs.mu.Unlock()
		select {
		case <-done:
		case <-r.Context().Done():
		}
	})}
	go func() { _ = srv.ListenAndServe() }() // ends with Close
	t.Cleanup(func() {
		close(done)
		srv.Close()
	})
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := (&net.Dialer{}).Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
	}
	return hs
}

// TestLiveShards: with two client shards, the orchestrator exports each
// shard's series (label shard) and merged ones equal to their sum, and to
// the phase's own figures once it ended; the connections opened, every
// reason of the connect failures (at 0), and the hold's open connections
// while it runs.
func TestLiveShards(t *testing.T) {
	testenv.Slow(t, "live metrics over shards: 7 s; internal/live tests the series")
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freeBasePort(t, 1))
	dir := writePlan(t, `client: {shards: 2, loops: 1}
servers: [{name: gws}]
phases:
  - connect: {connections: 100, concurrency: 100}
  - rate: {duration: 3s, rate: 20, payload: 64}
  - hold: {duration: 3s}
`)
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs", "--metrics-listen", metricsAddr)
	r.waitLine(t, `gws: rate done`, time.Minute)
	mfs := scrapeUntilPhase(t, metricsAddr, "hold") // begun right after the line
	if code := r.wait(t, time.Minute); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderrText())
	}
	sum := func(name string, value func(*dto.Metric) float64) (merged float64, shards map[string]float64) {
		shards = map[string]float64{}
		for _, m := range mfs[name].GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.Label {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels[live.LabelPhase] != "rate" {
				continue
			}
			if s := labels[live.LabelShard]; s != "" {
				shards[s] += value(m)
			} else {
				merged += value(m)
			}
		}
		return merged, shards
	}
	merged := func(name, phase string) (vs []float64) {
		for _, m := range mfs[name].GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.Label {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels[live.LabelPhase] == phase && labels[live.LabelShard] == "" {
				vs = append(vs, m.GetCounter().GetValue()+m.GetGauge().GetValue())
			}
		}
		return vs
	}
	if v := merged(live.Connects, "connect"); len(v) != 1 || v[0] != 100 {
		t.Errorf("%s{phase=connect}: %v, want 100", live.Connects, v)
	}
	if v := merged(live.ConnectFailures, "connect"); len(v) != int(client.NumConnectReasons) || slices.Max(v) != 0 {
		t.Errorf("%s{phase=connect}: %v, want every reason at 0", live.ConnectFailures, v)
	}
	if v := merged(live.ConnectionsOpen, "hold"); len(v) != 1 || v[0] != 100 {
		t.Errorf("%s{phase=hold} while it runs: %v, want 100", live.ConnectionsOpen, v)
	}
	sent := readJSON(t, filepath.Join(dir, "r.json")).Results[1].Metrics["sent"].(float64)
	for _, c := range []struct {
		name  string
		value func(*dto.Metric) float64
		want  float64
	}{
		{live.MessagesSent, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() }, sent},
		{live.MessagesReceived, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() }, sent},
		{live.Latency, func(m *dto.Metric) float64 { return float64(m.GetHistogram().GetSampleCount()) }, sent},
	} {
		merged, shards := sum(c.name, c.value)
		if len(shards) != 2 || shards["shard 0"]+shards["shard 1"] != merged || merged != c.want {
			t.Errorf("%s: merged %v, shards %v; want two shards summing to the merged %v", c.name, merged, shards, c.want)
		}
	}
}

// scrapeUntilPhase scrapes addr's /metrics until phase has begun there
// (2 s at most) and returns the last scrape.
func scrapeUntilPhase(t *testing.T, addr, phase string) map[string]*dto.MetricFamily {
	t.Helper()
	var mfs map[string]*dto.MetricFamily
	begun := func() bool {
		for _, m := range mfs[live.PhaseRunning].GetMetric() {
			for _, lp := range m.Label {
				if lp.GetName() == live.LabelPhase && lp.GetValue() == phase {
					return true
				}
			}
		}
		return false
	}
	for deadline := time.Now().Add(2 * time.Second); !begun() && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err = parser.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return mfs
}
