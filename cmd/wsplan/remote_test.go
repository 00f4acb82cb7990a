package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
)

// startShardListen starts `wsplan shard --listen` on a free loopback port
// and returns its address once it listens. wrap, if any, runs it (e.g.
// taskset -c 1).
func startShardListen(t *testing.T, dir, certs string, idle time.Duration, wrap ...string) (string, *exec.Cmd) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freeBasePort(t, 1))
	exe, err := exec.LookPath("wsplan")
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, strings.ReplaceAll(addr, ":", "_")+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	argv := append(wrap, exe, "shard", "--listen", addr, "--certs", certs, "--idle-exit", idle.String(), "--loops", "1")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		// The test reads the exit through done.
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill() // only our own child, by pid
			<-done
		}
	})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "listening on") {
			return addr, cmd
		}
	}
	b, _ := os.ReadFile(logPath)
	t.Fatalf("shard did not listen: %s", b)
	return "", nil
}

// TestRunRemoteShards: `wsplan run` with client.remote drives two remote
// shards on loopback; every phase is ok, its start skew is in the JSON,
// and a plan naming a shard nobody serves fails preflight (exit 2) naming
// it.
func TestRunRemoteShards(t *testing.T) {
	testenv.Slow(t, "3 s: a plan across remote shard processes")
	t.Parallel()
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	out, err := exec.Command(mustLook(t), "shard", "certs", certs).CombinedOutput()
	if err != nil {
		t.Fatalf("shard certs: %v: %s", err, out)
	}
	a, _ := startShardListen(t, dir, certs, time.Minute)
	b, _ := startShardListen(t, dir, certs, time.Minute)
	plan := fmt.Sprintf(`client: {remote: [%s, %s], weights: [1, 3], certs: certs, idle_exit: 2s, loops: 1}
servers: [{name: gws}]
phases:
  - connect: {connections: 200, concurrency: 50}
  - echo: {total: 2000, concurrency: 100, payload: 64}
`, a, b)
	pd := writePlan(t, plan)
	if err := os.Rename(certs, filepath.Join(pd, "certs")); err != nil {
		t.Fatal(err)
	}
	r := startWsplan(t, pd, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	if code := r.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderrText())
	}
	if !strings.Contains(r.stderrText(), "2 remote client shards: "+a) {
		t.Errorf("no notice of the remote shards; stderr:\n%s", r.stderrText())
	}
	var res struct {
		Results []struct {
			Phase     string         `json:"phase"`
			OK        bool           `json:"ok"`
			Error     string         `json:"error"`
			StartSkew int64          `json:"start_skew"`
			Metrics   map[string]any `json:"metrics"`
		} `json:"results"`
	}
	bs, err := os.ReadFile(filepath.Join(pd, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(bs, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 {
		t.Fatalf("results %+v, want connect and echo", res.Results)
	}
	for _, x := range res.Results {
		if !x.OK || x.StartSkew <= 0 {
			t.Errorf("%s: ok %v (%s), start_skew %d; want ok and a measured skew", x.Phase, x.OK, x.Error, x.StartSkew)
		}
	}
	if m := res.Results[1].Metrics; m["success"] != 2000.0 {
		t.Errorf("echo success %v, want 2000", m["success"])
	}
	// Each shard measured itself; the client's figures are their sum
	// with the orchestrator's.
	echo := readJSON(t, filepath.Join(pd, "r.json")).Results[1]
	if len(echo.Shards) != 2 || echo.Shards[0].Name != a || echo.Shards[1].Name != b {
		t.Fatalf("client_shards %+v, want %s and %s", echo.Shards, a, b)
	}
	var sum float64
	for _, s := range echo.Shards {
		if s.CPUSeconds <= 0 || s.MemMax <= 0 || s.Usable != 1 {
			t.Errorf("shard %+v: want CPU time, memory, 1 usable core", s)
		}
		sum += s.CPUSeconds
	}
	if got := echo.Metrics["client_cpu_s"].(float64); got < sum {
		t.Errorf("client_cpu_s %v < the shards' own %v: the shards are not counted", got, sum)
	}
	if !strings.Contains(r.stdout.String(), "client shards: "+a+" ") {
		t.Errorf("the tables do not show the shards' figures:\n%s", r.stdout.String())
	}

	// A shard nobody serves: preflight fails before anything starts.
	bad := strings.Replace(plan, b, fmt.Sprintf("127.0.0.1:%d", freeBasePort(t, 1)), 1)
	if err := os.WriteFile(filepath.Join(pd, "bad.yaml"), []byte(fmt.Sprintf("defaults: {base_port: %d}\n", freeBasePort(t, 4))+bad), 0o644); err != nil {
		t.Fatal(err)
	}
	r = startWsplan(t, pd, "run", "bad.yaml", "--progress", "off")
	if code := r.wait(t, time.Minute); code != ExitUsage || !strings.Contains(r.stderrText(), "client.remote[1]") {
		t.Errorf("unreachable shard: exit %d, want %d naming client.remote[1]; stderr:\n%s", code, ExitUsage, r.stderrText())
	}
}

func mustLook(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("wsplan")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// busyRate is TestRemoteShardOnBusyCPU's plan: 50 connections × 1000/s,
// 50k messages a second, which a shard on an idle core carries on most
// hosts with much of the core to spare.
const busyRate = `host: {server_cpus: "0", client_cpus: "0"}
client: {remote: [%s], certs: certs, idle_exit: 1m, loops: 1}
servers: [{name: gws}]
phases:
  - connect: {connections: 50, concurrency: 50}
  - rate: {duration: 2s, rate: 1000, payload: 64, connections: 50}
`

// starvedShare is the share of a CPU that a shard at nice 19 gets beside
// one busy loop at nice 0: CFS weighs them 15 to 1024.
const starvedShare = 100 * 15.0 / (15 + 1024)

// TestRemoteShardOnBusyCPU: a remote shard whose CPU is taken by a busy
// loop that outweighs it (the shard at nice 19, the loop at 0: CFS gives
// the shard 1.4% of the CPU) gets what it is given and waits for the
// rest: the row is client-bound, naming that shard and its wait, while a
// shard on the same CPU without the loop is not.
//
// The host is measured first (a relation, not a speed): the shard
// without the loop says how much of its core the rate needs here. Where
// that run is already bound (a host too slow, or too busy, for the rate)
// or the need is below twice the starved share (a host carrying 50k
// msg/s on less than 3% of a core), there is nothing to show: it skips
// with the figures.
func TestRemoteShardOnBusyCPU(t *testing.T) {
	testenv.Slow(t, "measures the host, then a remote shard beside a busy loop: 15 s")
	taskset, err := exec.LookPath("taskset")
	if err != nil || runtime.NumCPU() < 2 {
		t.Skip("needs taskset and 2 CPUs")
	}
	nice, err := exec.LookPath("nice")
	if err != nil {
		t.Skip("needs nice")
	}
	if _, err := os.ReadFile("/proc/self/schedstat"); err != nil {
		t.Skipf("no schedstat, so a shard's wait for its CPU is not measured: %v", err)
	}
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	if out, err := exec.Command(mustLook(t), "shard", "certs", certs).CombinedOutput(); err != nil {
		t.Fatalf("shard certs: %v: %s", err, out)
	}
	cpu := strconv.Itoa(runtime.NumCPU() - 1)
	alone, _ := startShardListen(t, dir, certs, time.Minute, taskset, "-c", cpu)
	starved, _ := startShardListen(t, dir, certs, time.Minute, taskset, "-c", cpu, nice, "-n", "19")
	pd := writePlan(t, fmt.Sprintf(busyRate, alone))
	if err := os.WriteFile(filepath.Join(pd, "starved.yaml"), fmt.Appendf(nil, busyRate, starved), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(certs, filepath.Join(pd, "certs")); err != nil {
		t.Fatal(err)
	}
	run := func(plan, name string) jsonResult {
		r := startWsplan(t, pd, "run", plan, "--progress", "off", "--json", name, "--out", "logs-"+name)
		if code := r.wait(t, 2*time.Minute); code != 0 && code != 1 {
			t.Fatalf("%s: exit %d; stderr:\n%s", plan, code, r.stderrText())
		}
		rate := readJSON(t, filepath.Join(pd, name)).Results[1]
		if len(rate.Shards) != 1 {
			t.Fatalf("%s: shards %+v, want one", plan, rate.Shards)
		}
		return rate
	}

	idle := run("plan.yaml", "alone.json")
	need, s := idle.Shards[0].CPUAvg, idle.Shards[0]
	switch {
	case s.Bound || idle.Metrics["client_bound"] == true || idle.Metrics["server_bound"] == true:
		t.Skipf("this host cannot carry 50k msg/s even with the shard's CPU to itself (shard CPU %.0f%% + %.0f%% waiting, server CPU %.0f%%, client_bound %v, server_bound %v): nothing to starve",
			s.CPUAvg, s.WaitAvg, idle.Metrics["cpu_avg"], idle.Metrics["client_bound"], idle.Metrics["server_bound"])
	case need < 2*starvedShare:
		t.Skipf("the shard needs %.1f%% of its core for 50k msg/s here, less than twice the %.1f%% a busy loop leaves it at nice 19", need, starvedShare)
	}

	spinOn(t, taskset, cpu)
	busy := run("starved.yaml", "starved.json")
	s = busy.Shards[0]
	t.Logf("shard at 50k msg/s: alone CPU %.0f%%; at nice 19 beside a busy loop CPU %.0f%% + %.0f%% waiting", need, s.CPUAvg, s.WaitAvg)
	if !s.Bound || busy.Metrics["client_bound"] != true {
		t.Fatalf("shard beside a busy loop (alone it needed %.0f%% of the core): %+v, client_bound %v; want the shard bound; metrics %v",
			need, busy.Shards, busy.Metrics["client_bound"], busy.Metrics)
	}
	// What it lacked, it waited for: most of the core.
	if s.WaitAvg <= s.CPUAvg {
		t.Errorf("starved shard: CPU %.0f%%, wait %.0f%%; want the wait counted, larger than its CPU", s.CPUAvg, s.WaitAvg)
	}
	if w := strings.Join(busy.Warnings, "\n"); !strings.Contains(w, "client-bound: "+starved+" CPU") || !strings.Contains(w, "waiting for a CPU") {
		t.Errorf("warnings %q: want client-bound naming %s and its wait", w, starved)
	}
}

// spinOn starts a busy loop pinned to cpu, a process of its own (a thread
// of this one would hold one of its Ps), killed by pid when the test ends,
// or by the kernel if this process dies first.
func spinOn(t *testing.T, taskset, cpu string) {
	t.Helper()
	cmd := exec.Command(taskset, "-c", cpu, "sh", "-c", "while :; do :; done")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a busy loop on CPU %s: %v", cpu, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // our own child, by pid; Wait reaps it
		_ = cmd.Wait()
	})
}
