package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startShardListen starts `wsplan shard --listen` on a free loopback port
// and returns its address once it listens.
func startShardListen(t *testing.T, dir, certs string, idle time.Duration) (string, *exec.Cmd) {
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
	cmd := exec.Command(exe, "shard", "--listen", addr, "--certs", certs, "--idle-exit", idle.String(), "--loops", "1")
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
