package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/testenv"
)

// handStarted is a server started outside wsplan, as a user would:
// `wsplan serve --framework gws --addrs 127.0.0.1:PORT &`.
type handStarted struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

func startByHand(t *testing.T, dir string, args ...string) *handStarted {
	t.Helper()
	path, err := exec.LookPath("wsplan")
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freeBasePort(t, 1))
	h := &handStarted{addr: addr, done: make(chan struct{})}
	h.cmd = exec.Command(path, append([]string{"serve", "--addrs", addr}, args...)...)
	h.cmd.Dir = dir
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // not in the test's process group
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.cmd.Wait(); close(h.done) }()
	t.Cleanup(func() {
		// Our own child, by pid.
		if err := h.cmd.Process.Signal(syscall.SIGTERM); err == nil {
			select {
			case <-h.done:
			case <-time.After(5 * time.Second):
				h.cmd.Process.Kill()
				<-h.done
			}
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for h.upgrade(nil) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("hand-started server on %s not ready: %v", addr, h.upgrade(nil))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return h
}

// upgrade performs one WebSocket upgrade on the server (over TLS when cfg
// is set).
func (h *handStarted) upgrade(cfg *tls.Config) error {
	c, err := net.DialTimeout("tcp", h.addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if cfg != nil {
		c = tls.Client(c, cfg)
	}
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", h.addr, key)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// running reports whether the hand-started server still runs and upgrades.
func (h *handStarted) running() error {
	select {
	case <-h.done:
		return fmt.Errorf("exited: %v", h.cmd.ProcessState)
	default:
	}
	return h.upgrade(nil)
}

// metricsEndpoint serves the Prometheus process metrics of pid, read from
// /proc at each scrape, like a server's own client library would.
func metricsEndpoint(t *testing.T, pid int) string {
	t.Helper()
	fs := procstat.FS{Root: "/proc"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, err := fs.ReadStat(pid)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		rss, _ := fs.RSS(pid)
		fmt.Fprintf(w, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\n", st.CPU().Seconds())
		fmt.Fprintf(w, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %d\n", rss)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String() + "/metrics"
}

// TestURLServers: a server started by hand is measured through pid: and
// through metrics_url:, shows n/a without either, is never signalled (it
// still runs after wsplan exits), and an unreachable url: target fails its
// rows with the reason while the run goes on. A command: server behind
// `sh -c` is measured as its whole process tree.
func TestURLServers(t *testing.T) {
	testenv.Slow(t, "3 s: url: servers started by hand and measured")
	t.Parallel()
	dir := t.TempDir()
	h := startByHand(t, t.TempDir(), "--framework", "gws") // its own cwd: not a leftover of the run

	metrics := metricsEndpoint(t, h.cmd.Process.Pid)
	wsplan, err := exec.LookPath("wsplan")
	if err != nil {
		t.Fatal(err)
	}
	wrapped := "127.0.0.1:" + strconv.Itoa(freeBasePort(t, 1))
	dead := "127.0.0.1:" + strconv.Itoa(freeBasePort(t, 1))
	plan := fmt.Sprintf(`
servers:
  - {name: bypid, url: "ws://%[1]s/ws", pid: %[2]d}
  - {name: scraped, url: "ws://%[1]s/ws", metrics_url: "%[3]s"}
  - {name: blind, url: "ws://%[1]s/ws"}
  - {name: gone, url: "ws://%[4]s/ws"}
  - {name: wrapped, command: [sh, -c, "%[5]s serve --framework gws --addrs %[6]s; true"], addrs: ["%[6]s"]}
phases:
  - connect: {connections: 50, concurrency: 10}
  - echo: {total: 30000, concurrency: 50, payload: 1KiB}
`, h.addr, h.cmd.Process.Pid, metrics, dead, wsplan, wrapped)
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	if code := r.wait(t, 3*time.Minute); code != ExitFailed {
		t.Fatalf("exit %d, want %d (the unreachable target fails its rows); stderr:\n%s", code, ExitFailed, r.stderrText())
	}
	if err := h.running(); err != nil {
		t.Fatalf("the hand-started server does not run any more after wsplan exited: %v", err)
	}
	res := readJSON(t, filepath.Join(dir, "r.json"))
	raw, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res.Results {
		m := x.Metrics
		switch x.Server {
		case "gone":
			if x.OK || !strings.Contains(x.Error, "target ws://"+dead+"/ws: ") || !strings.Contains(x.Error, "connection refused") {
				t.Errorf("gone/%s: ok=%v error %q, want the unreachable target's reason", x.Phase, x.OK, x.Error)
			}
			continue
		case "blind":
			if !x.OK {
				t.Errorf("blind/%s failed: %s", x.Phase, x.Error)
			}
			for _, k := range []string{"cpu_avg", "mem_max", "server_cpu_s", "eer", "server_cpu_per_1m"} {
				if _, ok := m[k]; ok {
					t.Errorf("blind/%s: %s=%v present, want it absent (not measured)", x.Phase, k, m[k])
				}
			}
			continue
		}
		if !x.OK {
			t.Errorf("%s/%s failed: %s", x.Server, x.Phase, x.Error)
			continue
		}
		if x.Phase != "echo" {
			continue
		}
		if v, _ := m["cpu_avg"].(float64); v <= 0 {
			t.Errorf("%s echo: server cpu_avg=%v, want > 0", x.Server, m["cpu_avg"])
		}
		if v, _ := m["mem_max"].(float64); v <= 0 {
			t.Errorf("%s echo: server mem_max=%v, want > 0", x.Server, m["mem_max"])
		}
		if x.Server == "wrapped" {
			if v, _ := m["server_procs"].(float64); v < 2 {
				t.Errorf("wrapped echo: server_procs=%v, want the shell and the server", m["server_procs"])
			}
		}
	}
	for _, want := range []string{`"server_resources": "pid"`, `"server_resources": "metrics_url"`, `"server_resources": "none"`, `"server_resources": "tree"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("r.json has no %s", want)
		}
	}
	out := r.stdout.String()
	var blindRow string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| blind") && strings.Contains(line, "n/a") {
			blindRow = line
		}
	}
	if blindRow == "" {
		t.Errorf("no table row of blind with n/a:\n%s", out)
	}
	if !strings.Contains(out+r.stderrText(), "it is a wrapper") {
		t.Errorf("no warning that the wrapped server's started process is a wrapper:\n%s\n%s", out, r.stderrText())
	}
	assertNoLeftovers(t, dir)
}

// TestPresetTLS: `tls: true` on a preset makes a throw-away CA and server
// certificate in the out dir (the key readable by its owner only), starts
// the server with them, and the readiness probe upgrades over TLS trusting
// only that CA. (The phases' TLS is the client's: its checks live with the
// client's tests.) The connect rows say which key exchange the server
// chose: ML-KEM by default, X25519 where the plan's groups offer only it.
func TestPresetTLS(t *testing.T) {
	dir := writePlan(t, `
servers: [{name: gws, tls: true}, {name: gws_x25519, framework: gws, tls: {groups: [x25519]}}]
phases:
  - connect: {connections: 10, concurrency: 5}
`)
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	r.wait(t, 2*time.Minute)
	for _, f := range []string{"ca.pem", "server.pem", "server.key"} {
		if _, err := os.Stat(filepath.Join(dir, "logs", "tls", f)); err != nil {
			t.Errorf("run CA file: %v", err)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "logs", "tls", "server.key")); err == nil && st.Mode().Perm() != 0o600 {
		t.Errorf("server.key mode %v, want 0600", st.Mode().Perm())
	}
	if !strings.Contains(r.stderrText(), "gws: started pid") {
		t.Fatalf("server not started:\n%s", r.stderrText())
	}
	res := readJSON(t, filepath.Join(dir, "r.json"))
	for _, x := range res.Results {
		if strings.Contains(x.Error, "server not ready") || strings.Contains(x.Error, "tls") && strings.Contains(x.Error, "certificate") {
			t.Errorf("%s/%s: %s", x.Server, x.Phase, x.Error)
		}
		want := map[string]string{"gws": "x25519mlkem768", "gws_x25519": "x25519"}[x.Server]
		if x.Info["tls_group"] != want || x.Info["tls_version"] != "TLS 1.3" {
			t.Errorf("%s: info %v, want tls_group %s over TLS 1.3", x.Server, x.Info, want)
		}
	}
	if len(res.Results) != 2 {
		t.Errorf("%d results, want 2", len(res.Results))
	}
	log, err := os.ReadFile(filepath.Join(dir, "logs", "server-gws.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "serve gws") {
		t.Errorf("server log: %s", log)
	}
	assertNoLeftovers(t, dir)
}

// TestURLServerDies: a url: server named by pid: that dies mid-run is
// noticed as a started server's death is: the phase in progress stops with
// "server pid N exited during the phase" instead of running its 20 s,
// the phases after it are skipped, what was measured before is kept, and
// wsplan never signalled it (the test killed it).
func TestURLServerDies(t *testing.T) {
	testenv.Slow(t, "3 s: url: servers that die, each through the CLI")
	t.Parallel()
	dir := t.TempDir()
	h := startByHand(t, t.TempDir(), "--framework", "gws")
	pid := h.cmd.Process.Pid
	plan := fmt.Sprintf(`
servers:
  - {name: bypid, url: "ws://%s/ws", pid: %d}
phases:
  - connect: {connections: 20, concurrency: 10}
  - hold: {duration: 20s}
  - echo: {total: 1000, concurrency: 20}
`, h.addr, pid)
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	r.waitLine(t, `bypid: connect done`, time.Minute)
	time.Sleep(500 * time.Millisecond)
	killed := time.Now()
	if err := h.cmd.Process.Kill(); err != nil { // the test's own child, by pid
		t.Fatal(err)
	}
	if code := r.wait(t, time.Minute); code != ExitFailed {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitFailed, r.stderrText())
	}
	if d := time.Since(killed); d > 10*time.Second {
		t.Errorf("wsplan ended %v after the server died: the hold ran on", d)
	}
	res := readJSON(t, filepath.Join(dir, "r.json"))
	want := map[string]string{
		"connect": "",
		"hold":    fmt.Sprintf("server pid %d exited", pid),
		"echo":    fmt.Sprintf("skipped: server pid %d exited", pid),
	}
	if len(res.Results) != 3 {
		t.Fatalf("%d results, want 3", len(res.Results))
	}
	for _, x := range res.Results {
		w := want[x.Phase]
		switch {
		case w == "" && !x.OK:
			t.Errorf("%s failed: %s (measured before the death: kept)", x.Phase, x.Error)
		case w != "" && (x.OK || !strings.HasPrefix(x.Error, w)):
			t.Errorf("%s: ok=%v error %q, want %q…", x.Phase, x.OK, x.Error, w)
		}
	}
	assertNoLeftovers(t, dir)
}
