package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
)

// TestURLServerKilledMidPhase: a url: server named by pid: that is
// killed during a conformance phase, or during a ping phase of a few
// seconds, fails that row with the pid's exit and nothing else: no
// conformance case is counted FAILED after the death (the cases left are
// not run), the phases after it are skipped, exit 1. The server is the
// test's own `wsplan serve`, killed by its pid.
func TestURLServerKilledMidPhase(t *testing.T) {
	testenv.Slow(t, "2 s: url: servers killed mid-phase")
	t.Parallel()
	for _, c := range []struct {
		name   string
		phases string
		after  time.Duration // from "connect done" to the kill
	}{
		{"conformance", "  - conformance: {parallel: 1}\n  - ping: {total: 100}\n", time.Second},
		{"ping", "  - ping: {total: 100000000, concurrency: 20}\n  - hold: {duration: 1s}\n", 500 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			h := startByHand(t, t.TempDir(), "--framework", "gws")
			pid := h.cmd.Process.Pid
			plan := fmt.Sprintf("servers:\n  - {name: bypid, url: \"ws://%s/ws\", pid: %d}\nphases:\n  - connect: {connections: 20, concurrency: 10}\n%s", h.addr, pid, c.phases)
			if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan), 0o644); err != nil {
				t.Fatal(err)
			}
			r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
			r.waitLine(t, `bypid: connect done`, time.Minute)
			time.Sleep(c.after)
			killed := time.Now()
			if err := h.cmd.Process.Kill(); err != nil { // the test's own child, by pid
				t.Fatal(err)
			}
			if code := r.wait(t, time.Minute); code != ExitFailed {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitFailed, r.stderrText())
			}
			if d := time.Since(killed); d > 10*time.Second {
				t.Errorf("wsplan ended %v after the server died", d)
			}
			res := readJSON(t, filepath.Join(dir, "r.json"))
			if len(res.Results) != 3 {
				t.Fatalf("%d results, want 3", len(res.Results))
			}
			exited := fmt.Sprintf("server pid %d exited", pid)
			if x := res.Results[0]; !x.OK {
				t.Errorf("%s failed: %s", x.Phase, x.Error)
			}
			if x := res.Results[1]; x.OK || !strings.HasPrefix(x.Error, exited) || !strings.HasSuffix(x.Error, " during the phase") {
				t.Errorf("%s: ok=%v error %q, want %q… during the phase", x.Phase, x.OK, x.Error, exited)
			}
			if x := res.Results[2]; x.OK || !strings.HasPrefix(x.Error, "skipped: "+exited) {
				t.Errorf("%s: ok=%v error %q, want skipped: %s…", x.Phase, x.OK, x.Error, exited)
			}
			if c.name == "conformance" {
				checkNotRun(t, filepath.Join(dir, "r.json"), res.Results[1].Metrics, 1)
			}
			assertNoLeftovers(t, dir)
		})
	}
}

// checkNotRun checks a conformance result cut by the server's death:
// cases were run, the rest not run, and no FAILED case but the one the
// server died in (which says so).
func checkNotRun(t *testing.T, path string, m map[string]any, k int) {
	t.Helper()
	cases, _ := m["cases"].(float64)
	notRun, _ := m["not_run"].(float64)
	failed, _ := m["failed"].(float64)
	if cases < 1 || notRun < 1 || cases+notRun != 311 {
		t.Errorf("cases %v, not run %v: want both > 0, 311 in all", cases, notRun)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []struct {
			Detail struct {
				ServerGone string `json:"server_gone"`
				Results    []struct {
					ID, Verdict, Observed string
				} `json:"results"`
			} `json:"detail"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.Results[k].Detail
	if !strings.HasPrefix(d.ServerGone, "pid ") && !strings.HasPrefix(d.ServerGone, "appears to have died") { // watched by pid:, or blind
		t.Errorf("detail server_gone %q", d.ServerGone)
	}
	n := 0
	for _, r := range d.Results {
		if r.Verdict == "FAILED" {
			n++
			if !strings.Contains(r.Observed, "the server's process exited during this case") {
				t.Errorf("%s FAILED: %s", r.ID, r.Observed)
			}
		}
	}
	if n > 1 || float64(n) != failed {
		t.Errorf("%d FAILED cases in the detail, failed = %v: want at most the one the server died in", n, failed)
	}
}

// TestNodeServerCrashes is the case issue 23 was found with: a Node ws
// server given as url: with pid: crashes at a conformance case (a
// protocol error its app does not catch) and refuses every case after it
// within milliseconds, faster than the pid is polled. The row fails with
// the pid's exit, the cases after the crash are not run (none FAILED),
// exit 1. It needs node and examples/node-ws's packages, else it skips.
func TestNodeServerCrashes(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on PATH: install Node.js 18 or later (Debian: apt-get install nodejs npm)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(root, "examples/node-ws/node_modules")
	if _, err := os.Stat(filepath.Join(modules, "ws/package.json")); err != nil {
		t.Skip("examples/node-ws/node_modules/ws is missing: run `npm ci --prefix examples/node-ws` in the repository root")
	}
	addr := "127.0.0.1:" + strconv.Itoa(freeBasePort(t, 1))
	node := exec.Command("node", filepath.Join(root, "cmd/wsplan/testdata/node/crash-server.js"), addr)
	node.Env = append(os.Environ(), "NODE_PATH="+modules)
	node.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	ready, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Process.Kill(); node.Wait() }) // our own child, by pid
	if line, err := bufio.NewReader(ready).ReadString('\n'); err != nil || line != "listening\n" {
		t.Fatalf("node server: %q %v", line, err)
	}
	dir := writePlan(t, fmt.Sprintf("servers:\n  - {name: node, url: \"ws://%s/\", pid: %d}\nphases:\n  - conformance: {}\n  - connect: {connections: 10}\n", addr, node.Process.Pid))
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	if code := r.wait(t, time.Minute); code != ExitFailed {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitFailed, r.stderrText())
	}
	res := readJSON(t, filepath.Join(dir, "r.json"))
	exited := fmt.Sprintf("server pid %d exited", node.Process.Pid)
	if len(res.Results) != 2 || !strings.HasPrefix(res.Results[0].Error, exited) || !strings.HasPrefix(res.Results[1].Error, "skipped: "+exited) {
		t.Fatalf("results %+v, want conformance failed by %q and connect skipped", res.Results, exited)
	}
	checkNotRun(t, filepath.Join(dir, "r.json"), res.Results[0].Metrics, 0)
}
