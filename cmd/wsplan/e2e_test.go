package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/sysctl"
)

// wsplanRun is a `wsplan run` started in the background; its stderr lines
// are watched as they come.
type wsplanRun struct {
	cmd    *exec.Cmd
	stdout strings.Builder
	mu     sync.Mutex
	stderr []string
	lines  chan string
	done   chan struct{}
	code   int
}

func startWsplan(t *testing.T, dir string, args ...string) *wsplanRun {
	t.Helper()
	return startWsplanEnv(t, dir, nil, args...)
}

// startWsplanEnv is startWsplan with env added to this process's
// environment: a parallel test's variables (t.Setenv is for sequential
// tests only).
func startWsplanEnv(t *testing.T, dir string, env []string, args ...string) *wsplanRun {
	t.Helper()
	path, err := exec.LookPath("wsplan")
	if err != nil {
		t.Fatal(err)
	}
	r := &wsplanRun{lines: make(chan string, 1000), done: make(chan struct{})}
	r.cmd = exec.Command(path, args...)
	r.cmd.Dir = dir
	if env != nil {
		r.cmd.Env = append(os.Environ(), env...)
	}
	r.cmd.Stdout = &r.stdout
	errPipe, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			r.mu.Lock()
			r.stderr = append(r.stderr, sc.Text())
			r.mu.Unlock()
			select {
			case r.lines <- sc.Text():
			default:
			}
		}
		close(r.lines)
	}()
	go func() {
		wg.Wait()
		err := r.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			// Only our own child, by pid.
			if err := r.cmd.Process.Kill(); err != nil {
				t.Log(err)
			}
			<-r.done
		}
	})
	return r
}

// waitLine returns the first stderr line matching re's submatches.
func (r *wsplanRun) waitLine(t *testing.T, re string, timeout time.Duration) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("wsplan ended before %q; stderr:\n%s", re, r.stderrText())
			}
			if m := rx.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-deadline:
			t.Fatalf("no %q within %s; stderr:\n%s", re, timeout, r.stderrText())
		}
	}
}

func (r *wsplanRun) stderrText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.stderr, "\n")
}

func (r *wsplanRun) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(timeout):
		t.Fatalf("wsplan did not end within %s; stderr:\n%s", timeout, r.stderrText())
	}
	return -1
}

func writePlan(t *testing.T, body string) string {
	t.Helper()
	if !strings.Contains(body, "defaults:") {
		body = fmt.Sprintf("defaults: {base_port: %d}\n", freeBasePort(t, 16)) + body
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// freeBasePort returns the first of n consecutive loopback ports that are
// free now, picked at random below the kernel's usual ephemeral range, so
// that tests running side by side (other packages, other checkouts of this
// repository) do not collide on the default base port 9000.
func freeBasePort(t *testing.T, n int) int {
	t.Helper()
	for range 100 {
		base := 10000 + rand.IntN(20000)
		free := true
		var ls []net.Listener
		for p := base; p < base+n && free; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				free = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free range of loopback ports found")
	return 0
}

func assertNoLeftovers(t *testing.T, dir string) {
	t.Helper()
	// Children signalled by their parent's death may take a moment to be
	// scheduled and exit on a loaded host: 5 s at most.
	left := wsplanProcesses(dir)
	for deadline := time.Now().Add(5 * time.Second); len(left) > 0 && time.Now().Before(deadline); left = wsplanProcesses(dir) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("processes left behind: %s", strings.Join(left, "; "))
	}
}

type jsonRun struct {
	Interrupted bool         `json:"interrupted"`
	Results     []jsonResult `json:"results"`
}

// jsonResult is one result of a --json file.
type jsonResult struct {
	Server    string            `json:"server"`
	Phase     string            `json:"phase"`
	OK        bool              `json:"ok"`
	Error     string            `json:"error"`
	Log       string            `json:"server_log"`
	Resources string            `json:"server_resources"`
	Warnings  []string          `json:"warnings"`
	Metrics   map[string]any    `json:"metrics"`
	Info      map[string]string `json:"info"`
	Shards    []struct {
		Name       string  `json:"name"`
		CPUAvg     float64 `json:"cpu_avg"`
		WaitAvg    float64 `json:"wait_avg"`
		CPUSeconds float64 `json:"cpu_seconds"`
		MemMax     int64   `json:"mem_max"`
		Usable     int     `json:"usable_cpus"`
		Bound      bool    `json:"bound"`
	} `json:"client_shards"`
}

func readJSON(t *testing.T, path string) jsonRun {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r jsonRun
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRunJSON: every server gets a connect result with every connection and
// an echo result with throughput, no failure and non-zero percentiles.
func TestRunJSON(t *testing.T) {
	testenv.Slow(t, "3 s: a 300-connection plan's JSON report")
	t.Parallel()
	dir := writePlan(t, `
vars: {conns: 300}
servers: [{name: gorilla}, {name: gws}, {name: nbio_nonblocking}, {name: greatws_event}]
phases:
  - connect:
      connections: ${conns}
      concurrency: 100
  - echo: {total: 5000, concurrency: 100, payload: 1KiB}
`)
	r := startWsplan(t, dir, "run", "plan.yaml", "--set", "conns=200", "--progress", "off", "--json", "r.json", "--out", "logs")
	if code := r.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderrText())
	}
	res := readJSON(t, filepath.Join(dir, "r.json"))
	seen := map[string]bool{}
	for _, x := range res.Results {
		seen[x.Server+"/"+x.Phase] = true
		if !x.OK {
			t.Errorf("%s/%s failed: %s", x.Server, x.Phase, x.Error)
		}
		m := x.Metrics
		switch x.Phase {
		case "connect":
			if m["success"] != 200.0 || m["failed"] != 0.0 {
				t.Errorf("%s connect: success=%v failed=%v", x.Server, m["success"], m["failed"])
			}
		case "echo":
			if tps, _ := m["tps"].(float64); tps <= 0 || m["failed"] != 0.0 || m["success"] != 5000.0 {
				t.Errorf("%s echo: tps=%v failed=%v success=%v", x.Server, m["tps"], m["failed"], m["success"])
			}
			for _, p := range []string{"p50", "p75", "p90", "p95", "p99"} {
				if v, _ := m[p].(float64); v <= 0 {
					t.Errorf("%s echo: %s=%v", x.Server, p, m[p])
				}
			}
			if v, _ := m["cpu_avg"].(float64); v <= 0 {
				t.Errorf("%s echo: server cpu_avg=%v", x.Server, m["cpu_avg"])
			}
			if v, _ := m["client_cpu_s"].(float64); v <= 0 {
				t.Errorf("%s echo: client_cpu_s=%v", x.Server, m["client_cpu_s"])
			}
			// wsplan started and pinned the server: it knows its cores,
			// and server_bound follows from them.
			cores, _ := m["server_cpus"].(float64)
			cpu, _ := m["cpu_avg"].(float64)
			sb, ok := m["server_bound"].(bool)
			if want := cpu >= 90*cores && m["client_bound"] == false; cores < 1 || !ok || sb != want {
				t.Errorf("%s echo: server_cpus=%v cpu_avg=%v client_bound=%v server_bound=%v, want server_bound %v", x.Server, m["server_cpus"], cpu, m["client_bound"], m["server_bound"], want)
			}
		}
	}
	if len(seen) != 8 {
		t.Errorf("got results %v, want 4 servers × 2 phases", seen)
	}
	assertNoLeftovers(t, dir)
}

const longEcho = `
servers: [{name: gws}, {name: gorilla}]
client: {shards: %d}
host: {sysctl: {%s}%s}
phases:
  - connect: {connections: 100, concurrency: 50}
  - echo: {total: 50000000, concurrency: 100, deadline: 30s}
`

// fakeSysRoot is a /sys tree (for EnvSysRoot) whose cpuidle driver is
// driver and, when poll is not "", haltpoll's poll window is poll ns: the
// host's own driver never decides what a test sees.
func fakeSysRoot(t *testing.T, driver, poll string) string {
	t.Helper()
	sys := t.TempDir()
	files := map[string]string{sysctl.CPUIdleDriverKey: driver + "\n"}
	if poll != "" {
		files[sysctl.HaltPollKey] = poll + "\n"
	}
	for key, v := range files {
		f := filepath.Join(sys, key)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sys
}

// TestInterruptRestoresHost: SIGINT in the middle of an echo phase of a
// --tune run prints the partial results, restores the sysctl and the idle
// polling, exits 130 and leaves no process. The sysctl lives in a fake
// /proc/sys tree (EnvProcSysRoot), the poll window in a fake /sys
// (EnvSysRoot): the test never changes the host it runs on.
func TestInterruptRestoresHost(t *testing.T) {
	sys := fakeSysRoot(t, "haltpoll", "0")
	poll := filepath.Join(sys, sysctl.HaltPollKey)
	t.Setenv(EnvSysRoot, sys)
	root := t.TempDir()
	key := filepath.Join(root, "net", "ipv4", "ip_local_port_range")
	if err := os.MkdirAll(filepath.Dir(key), 0o755); err != nil {
		t.Fatal(err)
	}
	before := []byte("32768\t60999\n")
	if err := os.WriteFile(key, before, 0o644); err != nil {
		t.Fatal(err)
	}
	// The servers' ports fall in the widened range: --tune reserves them
	// beside the host's own reservation.
	reserved := filepath.Join(root, "net", "ipv4", "ip_local_reserved_ports")
	if err := os.WriteFile(reserved, []byte("8080\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvProcSysRoot, root) // inherited by the wsplan child
	const hostKey = "/proc/sys/net/ipv4/ip_local_port_range"
	hostBefore, _ := os.ReadFile(hostKey)
	want := "1024 65535"
	base := freeBasePort(t, 2)
	ports := fmt.Sprintf("%d-%d", base, base+1) // gws, gorilla
	dir := writePlan(t, fmt.Sprintf("defaults: {base_port: %d}\n", base)+fmt.Sprintf(longEcho, 0, `net.ipv4.ip_local_port_range: "`+want+`"`, ", idle_poll: 300us"))
	r := startWsplan(t, dir, "run", "plan.yaml", "--tune", "--progress", "off", "--json", "r.json", "--out", "logs")
	r.waitLine(t, `^gws: connect done`, time.Minute)
	if b, _ := os.ReadFile(poll); string(b) != "300000\n" {
		t.Errorf("poll window during the run: %q, want 300000", b)
	}
	now, _ := os.ReadFile(key)
	if got := strings.Join(strings.Fields(string(now)), " "); got != want {
		t.Errorf("during the run %s = %q, want %q", key, got, want)
	}
	if b, _ := os.ReadFile(reserved); string(b) != "8080,"+ports+"\n" {
		t.Errorf("reserved ports during the run: %q, want 8080,%s", b, ports)
	}
	if hostNow, _ := os.ReadFile(hostKey); string(hostNow) != string(hostBefore) {
		t.Errorf("the host's %s changed to %q (was %q)", hostKey, hostNow, hostBefore)
	}
	time.Sleep(500 * time.Millisecond)
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, 30*time.Second); code != 130 {
		t.Errorf("exit %d, want 130", code)
	}
	after, _ := os.ReadFile(key)
	if string(after) != string(before) {
		t.Errorf("%s = %q after the run, was %q", key, after, before)
	}
	if b, _ := os.ReadFile(poll); string(b) != "0\n" {
		t.Errorf("poll window after the run: %q, want 0", b)
	}
	if b, _ := os.ReadFile(reserved); string(b) != "8080\n" {
		t.Errorf("reserved ports after the run: %q, want 8080", b)
	}
	e := r.stderrText()
	for _, want := range []string{
		`restored /sys/module/haltpoll/parameters/guest_halt_poll_ns = "0"`,
		`tune: net.ipv4.ip_local_reserved_ports = "8080,` + ports + `" (was "8080"; saved in logs/sysctl-saved.json): adds the servers' ports ` + ports + `: keeps the servers' ports out of the client's port range`,
		`restored net.ipv4.ip_local_reserved_ports = "8080"`,
	} {
		if !strings.Contains(e, want) {
			t.Errorf("stderr does not say %s:\n%s", want, e)
		}
	}
	out := r.stdout.String()
	if !strings.Contains(out, "[BenchEcho] Report") || !strings.Contains(out, "interrupted") {
		t.Errorf("partial results not printed:\n%s", out)
	}
	res := readJSON(t, filepath.Join(dir, "r.json"))
	if !res.Interrupted || len(res.Results) < 2 || res.Results[0].Metrics["success"] != 100.0 {
		t.Errorf("json: interrupted=%v results=%+v", res.Interrupted, res.Results)
	} else if echo := res.Results[1]; echo.Phase != "echo" || echo.Error != "interrupted" {
		t.Errorf("echo result: %+v", echo)
	} else if n, _ := echo.Metrics["success"].(float64); n <= 0 || echo.Metrics["p99"] == 0.0 {
		// The echoes measured before the interrupt are kept.
		t.Errorf("interrupted echo lost its partial figures: %v", echo.Metrics)
	}
	assertNoLeftovers(t, dir)
}

// TestServerDiesMidPhase: a server killed during its echo phase fails that
// row with the reason and its log; the next server still runs.
func TestServerDiesMidPhase(t *testing.T) {
	testenv.Slow(t, "4 s: a preset killed mid-phase through the CLI")
	t.Parallel()
	dir := writePlan(t, `
servers: [{name: gws}, {name: gorilla}]
phases:
  - connect: {connections: 100, concurrency: 50}
  - echo: {total: 50000000, concurrency: 100, deadline: 3s}
`)
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	m := r.waitLine(t, `^gws: started pid (\d+)`, time.Minute)
	pid, _ := strconv.Atoi(m[1])
	r.waitLine(t, `^gws: connect done`, time.Minute)
	time.Sleep(300 * time.Millisecond)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil { // the server we saw start, by pid
		t.Fatal(err)
	}
	if code := r.wait(t, time.Minute); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	res := readJSON(t, filepath.Join(dir, "r.json"))
	got := map[string]string{}
	for _, x := range res.Results {
		got[x.Server+"/"+x.Phase] = fmt.Sprintf("ok=%v %s", x.OK, x.Error)
		if x.Server == "gws" && x.Phase == "echo" && !strings.Contains(x.Log, "serve gws") {
			t.Errorf("no server log tail in the failed row: %q", x.Log)
		}
	}
	if g := got["gws/echo"]; !strings.Contains(g, "ok=false server killed by signal killed during the phase") {
		t.Errorf("gws/echo: %s", g)
	}
	if g := got["gorilla/echo"]; !strings.HasPrefix(g, "ok=true") {
		t.Errorf("gorilla/echo after gws died: %s", g)
	}
	assertNoLeftovers(t, dir)
}

// TestShardDiesMidPhase: a client shard killed during the echo phase fails
// that phase with the shard's reason; the run goes on with new shards for
// the next server; nothing is left behind.
func TestShardDiesMidPhase(t *testing.T) {
	testenv.Slow(t, "3 s: a shard killed mid-phase")
	t.Parallel()
	dir := writePlan(t, fmt.Sprintf(longEcho, 2, "", ""))
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	m := r.waitLine(t, `^gws: 2 client shards, pids \[(\d+) (\d+)\]`, time.Minute)
	victim, _ := strconv.Atoi(m[2])
	r.waitLine(t, `^gws: connect done`, time.Minute)
	time.Sleep(300 * time.Millisecond)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil { // a shard we saw start, by pid
		t.Fatal(err)
	}
	// The second server's echo runs to its 30 s deadline; stop it early.
	r.waitLine(t, `^gorilla: connect done`, time.Minute)
	time.Sleep(500 * time.Millisecond)
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r.wait(t, time.Minute)
	res := readJSON(t, filepath.Join(dir, "r.json"))
	var gwsEcho, gorillaConnect string
	for _, x := range res.Results {
		if x.Server == "gws" && x.Phase == "echo" {
			gwsEcho = fmt.Sprintf("ok=%v %s", x.OK, x.Error)
		}
		if x.Server == "gorilla" && x.Phase == "connect" {
			gorillaConnect = fmt.Sprintf("ok=%v success=%v", x.OK, x.Metrics["success"])
		}
	}
	want := fmt.Sprintf("ok=false shard 1 (pid %d) killed by signal killed", victim)
	if !strings.HasPrefix(gwsEcho, want) {
		t.Errorf("gws/echo: %q, want prefix %q", gwsEcho, want)
	}
	if gorillaConnect != "ok=true success=100" {
		t.Errorf("gorilla/connect after the shard died: %q", gorillaConnect)
	}
	assertNoLeftovers(t, dir)
}

// TestKilledWsplanTakesItsChildren: wsplan killed with SIGKILL (no chance
// to clean up) still leaves no server or shard behind: they die with it.
func TestKilledWsplanTakesItsChildren(t *testing.T) {
	testenv.Slow(t, "6 s: wsplan killed mid-run, its children waited for")
	t.Parallel()
	dir := writePlan(t, fmt.Sprintf(longEcho, 2, "", ""))
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--out", "logs")
	m := r.waitLine(t, `^gws: 2 client shards, pids \[(\d+) (\d+)\]`, time.Minute)
	r.waitLine(t, `^gws: connect done`, time.Minute)
	if len(wsplanProcesses(dir)) < 4 { // wsplan, the server, two shards
		t.Fatalf("expected wsplan, a server and two shards running, got %v", wsplanProcesses(dir))
	}
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 10*time.Second)
	assertNoLeftovers(t, dir)
	for _, s := range m[1:] {
		// Gone, or a zombie waiting for init to reap it: not running.
		// The parent-death signal lets a shard close its connections
		// first: it has 5 s (a loaded host may not schedule it at once).
		running := func() string {
			stat, err := os.ReadFile("/proc/" + s + "/stat")
			if err != nil {
				return ""
			}
			st := string(stat)
			if i := strings.LastIndexByte(st, ')'); i > 0 && st[i+2] != 'Z' {
				return st
			}
			return ""
		}
		deadline := time.Now().Add(5 * time.Second)
		for running() != "" && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if st := running(); st != "" {
			t.Errorf("shard %s still running 5 s after wsplan was killed: %s", s, st)
		}
	}
}
