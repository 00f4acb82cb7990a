package main

import (
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

// TestRestartPreset: a restart fault in the middle of a rate phase stops
// the preset wsplan started (SIGTERM) and starts it again on the same
// address; with reconnect: backoff every connection comes back and the
// rate phase goes on; the row says how long the server was gone, when
// 99% and all were back, the storm's peak and what was lost. The phase
// after it runs against the new process.
func TestRestartPreset(t *testing.T) {
	testenv.Slow(t, "5 s: a preset server restarted between runs")
	t.Parallel()
	dir := writePlan(t, `
client:
  reconnect: {policy: backoff, base: 50ms, max: 1s, jitter: full}
servers: [{name: gws}]
phases:
  - connect: {connections: 200}
  - rate:
      duration: 4s
      rate: 20
      payload: 64
      faults: [{at: 1s, restart: server}]
      allow: {dropped: 100%, lost: 10%}
  - hold: {duration: 500ms}
`)
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	if code := r.wait(t, time.Minute); code != 0 {
		// A loaded host can take longer to start the new server than the
		// phase leaves after the fault (3 s): then the phase ends without
		// connections, as it should. Measured, not assumed.
		if back := serverBackAfter(r.stderrText()); back > 2*time.Second {
			t.Skipf("the host took %v to restart gws, more than the phase leaves after the fault: %s", back, r.stderrText())
		}
		t.Fatalf("exit %d; stderr:\n%s\n%s", code, r.stderrText(), r.stdout.String())
	}
	if !strings.Contains(r.stderrText(), "gws: rate: restarting the server (fault at 1s)") || !strings.Contains(r.stderrText(), "gws: rate: server back after") {
		t.Errorf("no restart notices:\n%s", r.stderrText())
	}
	res := readJSON(t, filepath.Join(dir, "r.json"))
	m := res.Results[1].Metrics
	for k, want := range map[string]float64{"restarts": 1, "drops": 200, "reconnects": 200, "not_back": 0} {
		if m[k] != want {
			t.Errorf("rate %s = %v, want %v", k, m[k], want)
		}
	}
	for _, k := range []string{"restart_time", "downtime", "reconnect_p99", "reconnect_max", "reconnect_peak"} {
		if v, _ := m[k].(float64); v <= 0 {
			t.Errorf("rate %s = %v, want > 0", k, m[k])
		}
	}
	if m["failed"] != 0.0 || m["recv"].(float64) < m["sent"].(float64)*0.9 {
		t.Errorf("rate sent %v, recv %v, failed %v: want the timetable kept after the restart", m["sent"], m["recv"], m["failed"])
	}
	if h := res.Results[2]; !h.OK || h.Metrics["alive"] != 200.0 {
		t.Errorf("hold after the restart: ok %v %q, alive %v", h.OK, h.Error, h.Metrics["alive"])
	}
	if !strings.Contains(r.stdout.String(), "[Reconnects] rate:") {
		t.Errorf("no reconnects table:\n%s", r.stdout.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "server-gws-restart1.log")); err != nil {
		t.Errorf("the restarted server's log: %v", err)
	}
	assertNoLeftovers(t, dir)
}

// serverBackAfter is the downtime a run's "server back after D" notice
// gives; 0 when there is none.
func serverBackAfter(stderr string) time.Duration {
	_, after, ok := strings.Cut(stderr, "server back after ")
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(strings.Fields(after)[0])
	if err != nil {
		return 0
	}
	return d
}

// TestRestartURLServer: a url: server (the test's own `wsplan serve`)
// restarted by its restart_command, which stops it and starts a new one
// writing its pid_file: wsplan waits for the command, then for an
// upgrade, reads the pid_file again and watches the new process, and
// every connection comes back. A restart_command that fails fails the
// row as the server's death.
func TestRestartURLServer(t *testing.T) {
	testenv.Slow(t, "4 s: url: servers restarted between runs")
	t.Parallel()
	for _, c := range []struct {
		name   string
		script string
		ok     bool
	}{
		{"restarts", `kill $(cat server.pid)
while kill -0 $(cat server.pid) 2>/dev/null; do sleep 0.05; done
wsplan serve --framework gws --addrs ADDR > server2.log 2>&1 &
echo $! > server.pid
`, true},
		{"fails", "echo cannot restart >&2\nexit 3\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			h := startByHand(t, dir, "--framework", "gws")
			write := func(name, text string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			write("server.pid", strconv.Itoa(h.cmd.Process.Pid))
			write("restart.sh", strings.ReplaceAll(c.script, "ADDR", h.addr))
			t.Cleanup(func() { killPIDFile(t, filepath.Join(dir, "server.pid")) })
			write("plan.yaml", fmt.Sprintf(`
client:
  reconnect: {policy: backoff, base: 50ms, max: 500ms}
servers:
  - {name: byhand, url: "ws://%s/ws", pid_file: server.pid, restart_command: [sh, restart.sh]}
phases:
  - connect: {connections: 50}
  - hold: {duration: 2s, ping: 200ms, faults: [{at: 500ms, restart: server}], allow: {pings_lost: 10%%}}
  - hold: {duration: 300ms}
`, h.addr))
			r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
			code := r.wait(t, time.Minute)
			res := readJSON(t, filepath.Join(dir, "r.json"))
			if !c.ok {
				if code != ExitFailed || len(res.Results) != 3 || !strings.Contains(res.Results[1].Error, "did not come back after a restart (restart_command: exit status 3 (its output: cannot restart))") {
					t.Fatalf("exit %d, results %+v", code, res.Results)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d; stderr:\n%s\n%s", code, r.stderrText(), r.stdout.String())
			}
			m := res.Results[1].Metrics
			if m["restarts"] != 1.0 || m["drops"] != 50.0 || m["reconnects"] != 50.0 || m["alive"] != 50.0 {
				t.Errorf("hold metrics %v: want one restart, 50 dropped and back", m)
			}
			b, err := os.ReadFile(filepath.Join(dir, "server.pid"))
			if err != nil || strings.TrimSpace(string(b)) == strconv.Itoa(h.cmd.Process.Pid) {
				t.Fatalf("pid file %q %v: want the new server's pid", b, err)
			}
			if !strings.Contains(r.stderrText(), "(pid "+strings.TrimSpace(string(b))+")") {
				t.Errorf("the new pid is not watched:\n%s", r.stderrText())
			}
			if x := res.Results[2]; !x.OK || x.Resources != "pid" {
				t.Errorf("the phase after: ok %v %q, resources %q", x.OK, x.Error, x.Resources)
			}
		})
	}
}

// killPIDFile kills the process a test's restart script started, by the
// pid it wrote (never by name).
func killPIDFile(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
		_ = syscall.Kill(pid, syscall.SIGTERM) // gone already is fine
	}
}

// TestRestartNode runs plans/restart-node.yaml as its comment says, scaled
// down (200 connections, 8 s, restarted at 1.5 s, a free port): Node's ws
// example server, started and restarted by examples/node-ws/restart.sh as
// a url: target's restart_command, has every connection back. It needs
// node and the example's packages, else it skips.
func TestRestartNode(t *testing.T) {
	testenv.Slow(t, "restarts a Node server mid-run: 8 s; TestRestartURLServer covers restart_command")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on PATH: install Node.js 18 or later (Debian: apt-get install nodejs npm)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "examples/node-ws/node_modules/ws/package.json")); err != nil {
		t.Skip("examples/node-ws/node_modules/ws is missing: run `npm ci --prefix examples/node-ws` in the repository root")
	}
	dir := t.TempDir()
	port := strconv.Itoa(freeBasePort(t, 1))
	pidFile := filepath.Join(dir, "node-ws.pid")
	script := filepath.Join(root, "examples/node-ws/restart.sh")
	t.Cleanup(func() { killPIDFile(t, pidFile) })
	start := exec.Command("sh", script, pidFile, "127.0.0.1:"+port)
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("first start: %v\n%s", err, out)
	}
	plan, err := os.ReadFile(filepath.Join(root, "plans/restart-node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The plan's relative paths, from the test's directory.
	text := strings.ReplaceAll(string(plan), "examples/node-ws/restart.sh", script)
	text = strings.ReplaceAll(text, "{at: 10s, restart: server}", "{at: 1500ms, restart: server}")
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startWsplan(t, dir, "run", "plan.yaml", "--set", "port="+port, "--set", "conns=200", "--set", "duration=8s",
		"--progress", "off", "--json", "r.json", "--out", "logs")
	if code := r.wait(t, time.Minute); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\n%s", code, r.stderrText(), r.stdout.String())
	}
	m := readJSON(t, filepath.Join(dir, "r.json")).Results[1].Metrics
	if m["restarts"] != 1.0 || m["drops"] != 200.0 || m["reconnects"] != 200.0 || m["not_back"] != 0.0 {
		t.Errorf("rate metrics %v: want one restart and the 200 connections back", m)
	}
}
