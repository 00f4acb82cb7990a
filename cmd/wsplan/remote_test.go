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
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// TestRemoteShardOnBusyCPU: a remote shard pinned to a CPU that a busy
// loop shares gets half of it and waits for the rest: the row is
// client-bound, naming that shard, while an idle one is not.
func TestRemoteShardOnBusyCPU(t *testing.T) {
	taskset, err := exec.LookPath("taskset")
	if err != nil || runtime.NumCPU() < 2 {
		t.Skip("needs taskset and 2 CPUs")
	}
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	if out, err := exec.Command(mustLook(t), "shard", "certs", certs).CombinedOutput(); err != nil {
		t.Fatalf("shard certs: %v: %s", err, out)
	}
	busyCPU := runtime.NumCPU() - 1
	stop := spin(t, busyCPU)
	defer stop()
	a, _ := startShardListen(t, dir, certs, time.Minute, taskset, "-c", strconv.Itoa(busyCPU))
	plan := fmt.Sprintf(`host: {server_cpus: "0", client_cpus: "0"}
client: {remote: [%s], certs: certs, idle_exit: 2s, loops: 1}
servers: [{name: gws}]
phases:
  - connect: {connections: 50, concurrency: 50}
  - rate: {duration: 3s, rate: 10000, payload: 64, connections: 50}
`, a)
	pd := writePlan(t, plan)
	if err := os.Rename(certs, filepath.Join(pd, "certs")); err != nil {
		t.Fatal(err)
	}
	r := startWsplan(t, pd, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	if code := r.wait(t, 2*time.Minute); code != 0 && code != 1 {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderrText())
	}
	stop()
	run := readJSON(t, filepath.Join(pd, "r.json"))
	rate := run.Results[1]
	if len(rate.Shards) != 1 || !rate.Shards[0].Bound || rate.Metrics["client_bound"] != true {
		t.Fatalf("rate on a busy CPU: shards %+v, client_bound %v; want the shard bound; metrics %v", rate.Shards, rate.Metrics["client_bound"], rate.Metrics)
	}
	if s := rate.Shards[0]; s.WaitAvg < 20 {
		t.Errorf("shard on a busy CPU waited %.0f%% of a core for it, want much more", s.WaitAvg)
	}
	if w := strings.Join(rate.Warnings, "\n"); !strings.Contains(w, "client-bound: "+a+" CPU") {
		t.Errorf("warnings %q: want client-bound naming %s", w, a)
	}
}

// spin keeps a thread of this process busy on cpu until stop is called.
func spin(t *testing.T, cpu int) (stop func()) {
	t.Helper()
	var done atomic.Bool
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		ready <- unix.SchedSetaffinity(0, &set)
		for !done.Load() {
		}
	}()
	if err := <-ready; err != nil {
		done.Store(true)
		t.Skipf("cannot pin a busy loop to CPU %d: %v", cpu, err)
	}
	return func() { done.Store(true) }
}
