package engine

import (
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/shard"
	"github.com/wsplan/wsplan/scenarios"
)

func TestComputeLayout(t *testing.T) {
	cases := []struct {
		server, client string
		online         []int
		want           Layout
		err            string
	}{
		{"", "", []int{0, 1}, Layout{[]int{0}, []int{1}}, ""},
		{"", "", []int{0, 1, 2, 3}, Layout{[]int{0, 1}, []int{2, 3}}, ""},
		{"", "", []int{0}, Layout{[]int{0}, []int{0}}, ""},
		{"1", "", []int{0, 1}, Layout{[]int{1}, []int{0}}, ""},
		{"0", "0-1", []int{0, 1}, Layout{[]int{0}, []int{0, 1}}, ""},
		{"4-5", "", []int{0, 1}, Layout{}, "CPU 4 is not online here (online: 0-1)"},
		{"x", "", []int{0, 1}, Layout{}, "host.server_cpus"},
	}
	for _, c := range cases {
		got, err := ComputeLayout(c.server, c.client, c.online)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q/%q: err %v, want %q", c.server, c.client, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q/%q on %v = %+v, %v; want %+v", c.server, c.client, c.online, got, err, c.want)
		}
	}
}

func planWith(conns []int, shards int, sources []string) *plan.Plan {
	p := &plan.Plan{Vars: map[string]string{"conns": "1"}}
	p.Defaults.Ports = 2
	p.Client.Shards = plan.ShardCount(shards)
	p.Client.SourceAddrs = sources
	for _, n := range conns {
		p.Phases = append(p.Phases, plan.Phase{Kind: "connect", Spec: &scenarios.Connect{ConnectParams: client.ConnectParams{Connections: n, Concurrency: 10}}})
	}
	return p
}

func TestShardsAndNeeds(t *testing.T) {
	cases := []struct {
		conns   []int
		shards  int
		sources []string
		hard    uint64
		want    int
	}{
		{[]int{1000}, 0, nil, 20000, 0},                  // in process
		{[]int{1000}, 3, nil, 20000, 3},                  // as asked
		{[]int{19000}, -1, nil, 20000, 1},                // auto: fits one
		{[]int{1000000}, -1, nil, 20000, 51},             // auto: fd limit
		{[]int{19000}, -1, []string{"a", "b"}, 20000, 2}, // auto: one per source
		{[]int{10000, 10000}, -1, nil, 20000, 2},         // connect phases add up
	}
	for _, c := range cases {
		p := planWith(c.conns, c.shards, c.sources)
		if got := Shards(p, c.hard); got != c.want {
			t.Errorf("Shards(%v, shards=%d, %v) = %d, want %d", c.conns, c.shards, c.sources, got, c.want)
		}
	}
	n := Needs(planWith([]int{1000000}, -1, []string{"127.0.0.2", "127.0.0.3"}), Layout{[]int{0}, []int{1}}, 20000)
	if n.Conns != 1000000 || n.ServerFDs != 1000000+2+64 || len(n.ClientProcesses) != 51 || n.ConnsVar != "conns" {
		t.Errorf("Needs = conns %d, server fds %d, %d client processes, var %q", n.Conns, n.ServerFDs, len(n.ClientProcesses), n.ConnsVar)
	}
	total := 0
	for i, c := range n.ClientProcesses {
		total += c.Conns
		if c.FDs != c.Conns+64 || len(c.SourceAddrs) != 1 {
			t.Errorf("client %d: %+v", i, c)
		}
	}
	if total != 1000000 {
		t.Errorf("client connections add up to %d", total)
	}
}

func TestShardSources(t *testing.T) {
	all := []string{"a", "b", "c", "d", "e"}
	cases := []struct {
		i, n int
		want []string
	}{
		{0, 2, []string{"a", "c", "e"}},
		{1, 2, []string{"b", "d"}},
		{6, 7, []string{"b"}}, // more shards than sources: shared round-robin
		{0, 1, all},
	}
	for _, c := range cases {
		if got := shardSources(all, c.i, c.n); !reflect.DeepEqual(got, c.want) {
			t.Errorf("shardSources(%d of %d) = %v, want %v", c.i, c.n, got, c.want)
		}
	}
	if got := shardSources(nil, 0, 3); got != nil {
		t.Errorf("no sources: %v", got)
	}
}

func TestPortsFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := l.Addr().String()
	if err := portsFree([]string{busy}); err == nil || !strings.Contains(err.Error(), busy+" is already in use") {
		t.Errorf("busy port: %v", err)
	}
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	if err := portsFree([]string{addr}); err != nil {
		t.Errorf("free port: %v", err)
	}
}

func TestClientBound(t *testing.T) {
	cases := []struct {
		client, server float64
		want           bool
	}{
		{0.95, 0.50, true},    // the client saturated, the server had room
		{0.95, 0.97, true},    // both saturated, the client as much as the server
		{0.903, 0.988, false}, // the server was the tighter side
		{0.85, 0.30, false},   // below the threshold
		{1.0, 1.0, true},
	}
	for _, c := range cases {
		if got := clientBound(c.client, c.server); got != c.want {
			t.Errorf("clientBound(%v, %v) = %v, want %v", c.client, c.server, got, c.want)
		}
	}
}

func TestEfficiency(t *testing.T) {
	eff := scenarios.Efficiency{Rate: "tps", EER: "eer", Count: "success"}
	srv := procstat.Summary{CPUAvg: 80, CPUSeconds: 4}
	cli := procstat.Summary{CPUAvg: 60, CPUSeconds: 3}

	m := metrics.Values{"tps": 40000.0, "success": int64(200000)}
	efficiency(m, eff, &srv, cli, softirqs{})
	if m["eer"] != 500.0 || m["server_cpu_per_1m"] != 20.0 || m["client_cpu_per_1m"] != 15.0 {
		t.Errorf("measured: %v", m)
	}
	// An idle server has no EER rather than a division by zero.
	m = metrics.Values{"tps": 10.0, "success": int64(0)}
	efficiency(m, eff, &procstat.Summary{}, cli, softirqs{})
	if m["eer"] != 0.0 || m["client_cpu_per_1m"] != nil {
		t.Errorf("idle server: %v", m)
	}
	// A phase that measured nothing gets no figures at all.
	m = metrics.Values{}
	efficiency(m, eff, &srv, cli, softirqs{})
	if len(m) != 0 {
		t.Errorf("failed phase: %v", m)
	}
	// A server whose resources are not measured (a url: target without
	// pid:) has the client's figure only: no EER, no server CPU per 1M.
	m = metrics.Values{"tps": 40000.0, "success": int64(200000)}
	efficiency(m, eff, nil, cli, softirqs{})
	if _, ok := m["eer"]; ok || m["server_cpu_per_1m"] != nil || m["client_cpu_per_1m"] != 15.0 {
		t.Errorf("no server resources: %v", m)
	}
	// CPU figures per handshake: milliseconds per unit, no EER.
	perHS := scenarios.Efficiency{Rate: "tps", Count: "success", CPU: &scenarios.CPUFigures{Scale: 1e3, Client: "cli_ms", Server: "srv_ms"}}
	m = metrics.Values{"tps": 2000.0, "success": int64(10000)}
	efficiency(m, perHS, &srv, cli, softirqs{ok: true, client: time.Second})
	if len(m) != 4 || m["srv_ms"] != 0.4 || m["cli_ms"] != 0.3 {
		t.Errorf("per handshake: %v", m)
	}
	// Each kind that reports throughput declares its efficiency metrics,
	// and they are metrics of that kind.
	for _, kind := range []string{"echo", "rate", "connect", "ping", "broadcast"} {
		k, _ := scenarios.Lookup(kind)
		if k.Efficiency == nil {
			t.Fatalf("%s declares no Efficiency", kind)
		}
		defs := map[string]bool{}
		for _, d := range scenarios.MetricDefs(kind) {
			defs[d.Name] = true
		}
		f := k.Efficiency.Figures()
		for _, n := range []string{k.Efficiency.Rate, k.Efficiency.EER, k.Efficiency.Count, f.Client, f.Server, f.ClientNet, f.ServerNet} {
			if n != "" && !defs[n] {
				t.Errorf("%s: %q is not one of its metrics", kind, n)
			}
		}
	}
}

func TestWindowMetrics(t *testing.T) {
	l := Layout{ServerCPUs: []int{0}, ClientCPUs: []int{1, 2}}
	eff := &scenarios.Efficiency{Rate: "tps", EER: "eer", Count: "success"}
	cases := []struct {
		name        string
		sv, cv      procstat.Summary
		pinned      int // the server's CPUs, 0: not started by wsplan
		usable      int
		eff         *scenarios.Efficiency
		bound       bool
		serverBound bool
		warning     string
	}{
		{"idle client", procstat.Summary{CPUAvg: 90}, procstat.Summary{CPUAvg: 20}, 1, 2, nil, false, true, ""},
		{"bound", procstat.Summary{CPUAvg: 50}, procstat.Summary{CPUAvg: 190}, 1, 2, eff, true, false, "client-bound: client CPU 190% of 2 usable core(s), server 50%; this row measures the client"},
		{"near", procstat.Summary{CPUAvg: 99}, procstat.Summary{CPUAvg: 170}, 1, 2, nil, false, true, "client CPU 170% of 2 usable core(s) (server 99%): close to measuring itself"},
		// The 10k plan's rate phase: the server set the pace.
		{"server at 99%, client at 40%", procstat.Summary{CPUAvg: 99}, procstat.Summary{CPUAvg: 40}, 1, 1, nil, false, true, ""},
		{"server below 90% of its core", procstat.Summary{CPUAvg: 89}, procstat.Summary{CPUAvg: 40}, 1, 1, nil, false, false, ""},
		{"server at 99% of one of its 2 cores", procstat.Summary{CPUAvg: 99}, procstat.Summary{CPUAvg: 40}, 2, 1, nil, false, false, ""},
		{"server's cores not known (pid:)", procstat.Summary{CPUAvg: 99}, procstat.Summary{CPUAvg: 40}, 0, 1, nil, false, false, ""},
		{"both saturated: the client is bound", procstat.Summary{CPUAvg: 95}, procstat.Summary{CPUAvg: 97}, 1, 1, nil, true, false,
			"client-bound: client CPU 97% of 1 usable core(s), server 95%; this row measures the client"},
	}
	for _, c := range cases {
		m := metrics.Values{"tps": 1000.0, "success": int64(1000)}
		got := windowMetrics(m, serverCost{sum: &c.sv, pinned: c.pinned}, clientCost{sum: c.cv}, softirqs{}, l, c.usable, c.eff)
		if got != c.warning {
			t.Errorf("%s: warning %q, want %q", c.name, got, c.warning)
		}
		if m.Bool(metrics.ClientBound) != c.bound || m.Int(metrics.ClientCPUs) != 2 || m.Float(metrics.CPUAvg) != c.sv.CPUAvg {
			t.Errorf("%s: metrics %v", c.name, m)
		}
		if m.Bool(metrics.ServerBound) != c.serverBound || m.Int(metrics.ServerCPUs) != int64(c.pinned) {
			t.Errorf("%s: server_bound %v, server_cpus %d; want %v, %d", c.name, m[metrics.ServerBound], m.Int(metrics.ServerCPUs), c.serverBound, c.pinned)
		}
		// Every metric the engine writes is declared in metrics.Common (or
		// is an efficiency figure), so assertions and reports can name it.
		declared := map[string]bool{"tps": true, "success": true, "eer": true, metrics.ClientCPUPer1M: true, metrics.ServerCPUPer1M: true}
		for _, d := range metrics.Common {
			declared[d.Name] = true
			if _, ok := m[d.Name]; !ok {
				t.Errorf("%s: %s not written", c.name, d.Name)
			}
		}
		for k := range m {
			if !declared[k] {
				t.Errorf("%s: undeclared metric %q written", c.name, k)
			}
		}
		if _, ok := m["eer"]; ok != (c.eff != nil) {
			t.Errorf("%s: eer written = %v, want %v", c.name, ok, c.eff != nil)
		}
	}
}

// TestWindowMetricsShards: remote shards are judged each against its own
// cores (a saturated one makes the row client-bound, naming it), never the
// orchestrator's; local shards also count against this host's client CPUs.
func TestWindowMetricsShards(t *testing.T) {
	l := Layout{ServerCPUs: []int{0}, ClientCPUs: []int{1}}
	sv := procstat.Summary{CPUAvg: 40}
	a := shard.Cost{Shard: "127.0.0.1:7070", CPUAvg: 35, CPUSeconds: 3.5, Usable: 2}
	busy := shard.Cost{Shard: "127.0.0.1:7071", CPUAvg: 97, CPUSeconds: 9.7, Usable: 1}
	cases := []struct {
		name    string
		cc      clientCost
		bound   []bool
		warning string
	}{
		{"remote, idle", clientCost{sum: procstat.Summary{CPUAvg: 36}, shards: []shard.Cost{a}, remote: true}, []bool{false}, ""},
		{"remote, one saturated", clientCost{sum: procstat.Summary{CPUAvg: 133}, shards: []shard.Cost{a, busy}, remote: true}, []bool{false, true},
			"client-bound: 127.0.0.1:7071 CPU 97% of 1 usable core(s), server 40%; this row measures the client"},
		{"remote, on a busy CPU", clientCost{sum: procstat.Summary{CPUAvg: 50}, shards: []shard.Cost{{Shard: "127.0.0.1:7072", CPUAvg: 50, WaitAvg: 45, Usable: 1}}, remote: true}, []bool{true},
			"client-bound: 127.0.0.1:7072 CPU 50% (+45% waiting for a CPU) of 1 usable core(s), server 40%; this row measures the client"},
		{"local shards share this host's client CPU", clientCost{sum: procstat.Summary{CPUAvg: 96}, shards: []shard.Cost{
			{Shard: "shard 0", CPUAvg: 48, Usable: 1}, {Shard: "shard 1", CPUAvg: 48, Usable: 1}}}, []bool{false, false},
			"client-bound: client CPU 96% of 1 usable core(s), server 40%; this row measures the client"},
	}
	for _, c := range cases {
		m := metrics.Values{}
		if got := windowMetrics(m, serverCost{sum: &sv, pinned: 1}, c.cc, softirqs{}, l, 1, nil); got != c.warning {
			t.Errorf("%s: warning %q, want %q", c.name, got, c.warning)
		}
		if m.Bool(metrics.ClientBound) != (c.warning != "") || m.Float(metrics.ClientCPUAvg) != c.cc.sum.CPUAvg {
			t.Errorf("%s: metrics %v", c.name, m)
		}
		shards := clientShards(c.cc, m, l)
		for i, s := range shards {
			if s.Bound != c.bound[i] || s.Name != c.cc.shards[i].Shard || s.CPUSeconds != c.cc.shards[i].CPUSeconds {
				t.Errorf("%s: shard %d: %+v, want bound %v", c.name, i, s, c.bound[i])
			}
		}
	}
}

func TestWindowMetricsNoServer(t *testing.T) {
	l := Layout{ServerCPUs: []int{0}, ClientCPUs: []int{1}}
	eff := &scenarios.Efficiency{Rate: "tps", EER: "eer", Count: "success"}
	m := metrics.Values{"tps": 1000.0, "success": int64(1000)}
	windowMetrics(m, serverCost{}, clientCost{sum: procstat.Summary{CPUAvg: 50, CPUSeconds: 1}}, softirqs{ok: true, client: time.Second}, l, 1, eff)
	for k := range m {
		if metrics.ServerResource(k, "eer") {
			t.Errorf("server metric %s written for a server without resources: %v", k, m)
		}
	}
	if b, ok := m[metrics.ServerBound].(bool); !ok || b || m.Int(metrics.ServerCPUs) != 0 {
		t.Errorf("a server not measured: server_bound %v, server_cpus %v", m[metrics.ServerBound], m[metrics.ServerCPUs])
	}
	if m.Float(metrics.ClientCPUAvg) != 50 || m.Float(metrics.ClientCPUPer1M) != 1000 {
		t.Errorf("client metrics: %v", m)
	}
}

// TestEfficiencyLoopbackDelivery: the _net figures move each side's
// softirq time to the other: the client spent 3 s of which 1.2 s softirq
// (delivering into the server), the server 4 s of which 0.2 s (into the
// client); without softirq figures there are none.
func TestEfficiencyLoopbackDelivery(t *testing.T) {
	eff := scenarios.Efficiency{Rate: "tps", EER: "eer", Count: "success"}
	srv := procstat.Summary{CPUAvg: 80, CPUSeconds: 4}
	cli := procstat.Summary{CPUAvg: 60, CPUSeconds: 3}
	m := metrics.Values{"tps": 40000.0, "success": int64(200000)}
	efficiency(m, eff, &srv, cli, softirqs{ok: true, client: 1200 * time.Millisecond, server: 200 * time.Millisecond})
	near := func(got any, want float64) bool { f, _ := got.(float64); return f > want-1e-9 && f < want+1e-9 }
	if !near(m[metrics.ClientCPUPer1MNet], 10) || !near(m[metrics.ServerCPUPer1MNet], 25) || m[metrics.ClientCPUPer1M] != 15.0 {
		t.Errorf("net figures: %v", m)
	}
	// Never below zero, whatever the softirq figures say.
	m = metrics.Values{"tps": 40000.0, "success": int64(200000)}
	efficiency(m, eff, &srv, cli, softirqs{ok: true, client: 10 * time.Second})
	if m[metrics.ClientCPUPer1MNet] != 0.0 {
		t.Errorf("client net %v, want 0", m[metrics.ClientCPUPer1MNet])
	}
	m = metrics.Values{"tps": 40000.0, "success": int64(200000)}
	efficiency(m, eff, &srv, cli, softirqs{})
	if _, ok := m[metrics.ClientCPUPer1MNet]; ok {
		t.Errorf("net figures without softirq figures: %v", m)
	}
	for _, c := range []struct {
		a, b []int
		want bool
	}{{[]int{0}, []int{1}, true}, {[]int{0, 1}, []int{1}, false}, {nil, []int{1}, false}, {[]int{2, 3}, []int{0, 1}, true}} {
		if got := disjoint(c.a, c.b); got != c.want {
			t.Errorf("disjoint(%v, %v) = %v", c.a, c.b, got)
		}
	}
}

func TestWrapperWarning(t *testing.T) {
	cases := []struct {
		name string
		sv   procstat.Summary
		want bool
	}{
		{"one process", procstat.Summary{Procs: 1, CPUSeconds: 5, RootCPUSeconds: 0}, false},
		{"wrapper idle", procstat.Summary{Procs: 2, CPUSeconds: 5, RootCPUSeconds: 0.01}, true},
		{"root works", procstat.Summary{Procs: 3, CPUSeconds: 5, RootCPUSeconds: 4}, false},
		{"all idle", procstat.Summary{Procs: 2, CPUSeconds: 0.01, RootCPUSeconds: 0}, false},
	}
	for _, c := range cases {
		got := wrapperWarning(c.sv)
		if (got != "") != c.want {
			t.Errorf("%s: warning %q, want one: %v", c.name, got, c.want)
		}
	}
	if got := wrapperWarning(procstat.Summary{Procs: 2, CPUSeconds: 5, RootCPUSeconds: 0.01}); got != "the server's started process used 0.01 of the 5.00 CPU-seconds of its 2 processes: it is a wrapper; the figures are the whole process tree's" {
		t.Errorf("warning text %q", got)
	}
}
