package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wsplan/wsplan/scenarios/echo"
	"github.com/wsplan/wsplan/scenarios/hold"
	"github.com/wsplan/wsplan/scenarios/rate"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/shard"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/sysctl"
)

// EnvNetns turns on TestMultiHostNetns: it needs root, opens 18,000
// connections and takes about a minute, too heavy for every `go test`.
const EnvNetns = "WSPLAN_NETNS"

// hosts is the simulated network: a bridge in the server's namespace and
// one veth pair per other namespace, addresses from 198.18.0.0/15 inside
// the namespaces only.
type hosts struct {
	srv, a, b, orch string // namespace names
}

const (
	srvIP, aIP, bIP, orchIP = "198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.4"
	srvPort, shardPort      = 8080, 7070
)

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newHosts creates the namespaces and their links; the test's cleanup
// deletes them (and with them every link).
func newHosts(t *testing.T) hosts {
	t.Helper()
	tag := fmt.Sprintf("wsplan%d", os.Getpid())
	h := hosts{tag + "-srv", tag + "-a", tag + "-b", tag + "-orch"}
	for _, ns := range []string{h.srv, h.a, h.b, h.orch} {
		ipCmd(t, "netns", "add", ns)
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Errorf("ip netns del %s: %v: %s", ns, err, out)
			}
		})
		ipCmd(t, "-n", ns, "link", "set", "lo", "up")
	}
	ipCmd(t, "-n", h.srv, "link", "add", "br0", "type", "bridge")
	ipCmd(t, "-n", h.srv, "addr", "add", srvIP+"/24", "dev", "br0")
	ipCmd(t, "-n", h.srv, "link", "set", "br0", "up")
	for i, peer := range []struct{ ns, ip string }{{h.a, aIP}, {h.b, bIP}, {h.orch, orchIP}} {
		port := "p" + strconv.Itoa(i)
		ipCmd(t, "-n", h.srv, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", peer.ns)
		ipCmd(t, "-n", h.srv, "link", "set", port, "master", "br0", "up")
		ipCmd(t, "-n", peer.ns, "addr", "add", peer.ip+"/24", "dev", "eth0")
		ipCmd(t, "-n", peer.ns, "link", "set", "eth0", "up")
	}
	return h
}

// proc is a process started in a namespace; `ip netns exec` execs it, so
// its pid is the command's.
type nsProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func startIn(t *testing.T, ns, logPath string, args ...string) *nsProc {
	t.Helper()
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &nsProc{cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		// Its exit status is read through cmd.ProcessState by the test.
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			// Only our own child, by pid.
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitLog waits until the process's log holds sub.
func (p *nsProc) waitLog(t *testing.T, sub string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(p.log); strings.Contains(string(b), sub) {
			return
		}
	}
	b, _ := os.ReadFile(p.log)
	t.Fatalf("no %q in %s within 10s: %s", sub, p.log, b)
}

func (p *nsProc) exited(within time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(within):
		return false
	}
}

// established counts the TCP connections in state ESTABLISHED on local
// port in the namespace of pid (its /proc/PID/net/tcp).
func established(t *testing.T, pid, port int) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 3 && strings.HasSuffix(fs[1], want) && fs[3] == "01" {
			n++
		}
	}
	return n
}

// nsDialer dials from namespace ns: one locked OS thread that entered it
// makes every socket (a socket belongs to its creator thread's namespace).
func nsDialer(t *testing.T, ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	t.Helper()
	type req struct {
		ctx           context.Context
		network, addr string
		out           chan any
	}
	reqs := make(chan req)
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		fd, err := unix.Open("/var/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		ready <- err
		if err != nil {
			return
		}
		for r := range reqs {
			c, err := (&net.Dialer{}).DialContext(r.ctx, r.network, r.addr)
			if err != nil {
				r.out <- err
			} else {
				r.out <- c
			}
		}
	}()
	if err := <-ready; err != nil {
		t.Fatalf("entering %s: %v", ns, err)
	}
	t.Cleanup(func() { close(reqs) })
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		out := make(chan any, 1)
		reqs <- req{ctx, network, addr, out}
		switch v := (<-out).(type) {
		case net.Conn:
			return v, nil
		default:
			return nil, v.(error)
		}
	}
}

// TestMultiHostNetns simulates a run over three hosts on one machine: a
// server in one network namespace, two remote shards in two others, the
// orchestrator in a fourth. 2 × 9,000 connections go through connect,
// hold, echo and rate; the merged percentiles must equal those of one
// histogram of every shard's samples; each phase's start skew is logged.
// Then a shard is killed mid-phase (the phase fails naming it, the other
// shard stops clean, no connection is left on the server), and the
// orchestrator is SIGKILLed mid-phase (the shards close every connection
// and exit within idle_exit).
func TestMultiHostNetns(t *testing.T) {
	if os.Getenv(EnvNetns) == "" {
		t.Skipf("set %s=1 to run (root; 18,000 connections in network namespaces, about a minute)", EnvNetns)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates network namespaces and veth pairs")
	}
	if _, _, err := sysctl.RaiseNoFile(); err != nil { // the children inherit it
		t.Fatal(err)
	}
	exe, err := exec.LookPath("wsplan")
	if err != nil {
		t.Fatal(err)
	}
	h := newHosts(t)
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	if _, err := shard.NewCerts(certs); err != nil {
		t.Fatal(err)
	}
	srv := startIn(t, h.srv, filepath.Join(dir, "server.log"), exe, "serve", "--framework", "gws",
		"--addrs", fmt.Sprintf("%s:%d", srvIP, srvPort), "--path", "/ws", "--payload", "64")
	const idleExit = 2 * time.Second
	startShards := func(round string) (a, b *nsProc) {
		for i, ns := range []string{h.a, h.b} {
			ip := []string{aIP, bIP}[i]
			p := startIn(t, ns, filepath.Join(dir, fmt.Sprintf("shard-%s-%d.log", round, i)), exe, "shard",
				"--listen", fmt.Sprintf("%s:%d", ip, shardPort), "--certs", certs, "--idle-exit", "60s", "--loops", "1")
			if i == 0 {
				a = p
			} else {
				b = p
			}
		}
		for _, p := range []*nsProc{a, b} {
			p.waitLog(t, "listening on")
		}
		return a, b
	}
	remote := []string{fmt.Sprintf("%s:%d", aIP, shardPort), fmt.Sprintf("%s:%d", bIP, shardPort)}
	target := fmt.Sprintf("%s:%d", srvIP, srvPort)

	a, b := startShards("1")
	t.Run("2x9000 connect hold echo rate", func(t *testing.T) {
		cfg, err := shard.OrchestratorTLS(certs)
		if err != nil {
			t.Fatal(err)
		}
		var g *shard.Group
		var hellos []shard.Hello
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			g, hellos, err = shard.Dial(t.Context(), shard.RemoteSpec{
				Addrs: remote, Weights: []int{1, 1}, TLS: cfg, IdleExit: idleExit, DialContext: nsDialer(t, h.orch),
				Client: client.Options{Targets: []string{target}, Path: "/ws", Loops: 1, NoDelay: true},
			})
			if err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		for _, hl := range hellos {
			t.Logf("shard %s: pid %d, rtt %s, nofile %d, ports %d-%d, %d CPUs", hl.Addr, hl.Pid, hl.RTT, hl.Host.NoFileHard, hl.Host.PortRangeLow, hl.Host.PortRangeHigh, len(hl.Host.OnlineCPUs))
		}
		env := &scenarios.Env{Driver: g}
		pay := units.Size(64)
		phases := []struct {
			name string
			p    scenarios.Phase
			ctx  scenarios.Context
		}{
			{"connect", &scenarios.Connect{ConnectParams: client.ConnectParams{Connections: 18000, Concurrency: 400}}, scenarios.Context{}},
			{"hold", &hold.Phase{Params: hold.Params{Duration: units.Duration(2 * time.Second)}}, scenarios.Context{Conns: 18000}},
			{"echo", &echo.Phase{Params: echo.Params{Total: 36000, Concurrency: 2000, Payload: &pay}}, scenarios.Context{Conns: 18000}},
			{"rate", &rate.Phase{Params: rate.Params{Duration: units.Duration(3 * time.Second), Rate: units.Rate(0.2), Send: rate.Send{Payload: &pay}}}, scenarios.Context{Conns: 18000}},
		}
		for _, ph := range phases {
			scenarios.Defaults(ph.p, ph.ctx)
			t0 := time.Now()
			out, err := ph.p.Run(t.Context(), env)
			if err != nil || out.Failed {
				t.Fatalf("%s: %v %s %v", ph.name, err, out.Error, out.Metrics)
			}
			t.Logf("%s: %s, start skew %s, %v", ph.name, time.Since(t0).Round(time.Millisecond), g.StartSkew(), out.Metrics)
			if g.StartSkew() <= 0 || g.StartSkew() > time.Second {
				t.Errorf("%s: start skew %s, want > 0 and < 1s", ph.name, g.StartSkew())
			}
			checkMerged(t, ph.name, g.Parts())
		}
		if n := established(t, srv.cmd.Process.Pid, srvPort); n != 18000 {
			t.Errorf("server holds %d connections after the phases, want 18000", n)
		}
	})
	// The session ended: the shards closed every connection and exit.
	waitServer(t, srv, 0)
	for _, p := range []*nsProc{a, b} {
		if !p.exited(idleExit + 5*time.Second) {
			t.Errorf("shard pid %d still runs after the session and idle_exit %s", p.cmd.Process.Pid, idleExit)
		}
	}
	a, b = startShards("2")

	t.Run("shard killed mid-phase", func(t *testing.T) {
		g := dialRemote(t, remote, target, certs, idleExit, nsDialer(t, h.orch))
		defer g.Close()
		env := &scenarios.Env{Driver: g}
		runPhase(t, env, &scenarios.Connect{ConnectParams: client.ConnectParams{Connections: 4000, Concurrency: 200}}, scenarios.Context{})
		time.AfterFunc(time.Second, func() {
			if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Error(err)
			}
		})
		pay := units.Size(64)
		p := &rate.Phase{Params: rate.Params{Duration: units.Duration(20 * time.Second), Rate: units.Rate(1), Send: rate.Send{Payload: &pay}}}
		scenarios.Defaults(p, scenarios.Context{Conns: 4000})
		t0 := time.Now()
		out, err := p.Run(t.Context(), env)
		took := time.Since(t0)
		t.Logf("rate with shard 0 killed after 1s: ended after %s, error %v, row error %q", took.Round(time.Millisecond), err, out.Error)
		// The engine fails the row with err (its verdict).
		if err == nil || !strings.Contains(err.Error(), "shard 0 ("+remote[0]+")") {
			t.Errorf("phase with shard 0 killed: error %v; want one naming shard 0", err)
		}
		if took > 10*time.Second {
			t.Errorf("the phase went on %s after shard 0 died; the other shard should have been stopped", took)
		}
		if err := g.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		waitServer(t, srv, 0)
		if !b.exited(idleExit + 5*time.Second) {
			t.Errorf("the surviving shard still runs %s after the session", idleExit+5*time.Second)
		}
	})

	a, b = startShards("3")
	t.Run("wsplan run in the orchestrator namespace", func(t *testing.T) {
		plan := filepath.Join(dir, "plan.yaml")
		body := fmt.Sprintf(`defaults: {allow_remote: true}
client: {remote: [%s], certs: %s, idle_exit: %s, loops: 1}
servers: [{name: gws, url: "ws://%s/ws"}]
phases:
  - connect: {connections: 4000, concurrency: 200}
  - echo: {total: 20000, concurrency: 1000, payload: 64}
`, strings.Join(remote, ", "), certs, idleExit, target)
		if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("ip", "netns", "exec", h.orch, exe, "run", plan, "--progress", "off",
			"--json", filepath.Join(dir, "r.json"), "--out", filepath.Join(dir, "out")).CombinedOutput()
		if err != nil {
			t.Fatalf("wsplan run: %v\n%s", err, out)
		}
		var res struct {
			Results []struct {
				Phase     string `json:"phase"`
				OK        bool   `json:"ok"`
				StartSkew int64  `json:"start_skew"`
			} `json:"results"`
		}
		js, err := os.ReadFile(filepath.Join(dir, "r.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(js, &res); err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Results {
			t.Logf("wsplan run: %s ok=%v start_skew=%s", r.Phase, r.OK, time.Duration(r.StartSkew))
			if !r.OK || r.StartSkew <= 0 {
				t.Errorf("%s: ok %v, start skew %d", r.Phase, r.OK, r.StartSkew)
			}
		}
		if len(res.Results) != 2 {
			t.Errorf("%d results, want 2:\n%s", len(res.Results), out)
		}
		waitServer(t, srv, 0)
		for _, p := range []*nsProc{a, b} {
			if !p.exited(idleExit + 5*time.Second) {
				t.Errorf("shard pid %d still runs after the run and idle_exit", p.cmd.Process.Pid)
			}
		}
	})

	a, b = startShards("4")
	t.Run("orchestrator SIGKILLed mid-phase", func(t *testing.T) {
		f, err := os.Create(filepath.Join(dir, "orchestrator.log"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd := exec.Command("ip", "netns", "exec", h.orch, os.Args[0], "-test.run", "^TestNetnsOrchestratorChild$", "-test.v")
		cmd.Env = append(os.Environ(), envChild+"="+strings.Join([]string{remote[0], remote[1], target, certs, idleExit.String()}, ","))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waited := make(chan struct{})
		started := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				fmt.Fprintln(f, sc.Text())
				if strings.Contains(sc.Text(), childStarted) {
					close(started)
				}
			}
			// Killed below: its exit status is the SIGKILL.
			_ = cmd.Wait()
			close(waited)
		}()
		t.Cleanup(func() {
			select {
			case <-waited:
			default:
				_ = cmd.Process.Kill() // only our own child, by pid
				<-waited
			}
		})
		select {
		case <-started:
		case <-waited:
			b, _ := os.ReadFile(f.Name())
			t.Fatalf("orchestrator ended before the phase: %s", b)
		case <-time.After(60 * time.Second):
			t.Fatal("orchestrator did not start the phase within 60s")
		}
		time.Sleep(time.Second)
		if n := established(t, srv.cmd.Process.Pid, srvPort); n != 4000 {
			t.Errorf("server holds %d connections mid-phase, want 4000", n)
		}
		killed := time.Now()
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitServer(t, srv, 0)
		closed := time.Since(killed)
		for _, p := range []*nsProc{a, b} {
			if !p.exited(idleExit + 5*time.Second) {
				t.Errorf("shard pid %d still running %s after the orchestrator's SIGKILL", p.cmd.Process.Pid, time.Since(killed))
			}
		}
		t.Logf("orchestrator SIGKILLed: the server had no connection left after %s, both shards exited after %s (idle_exit %s)",
			closed.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond), idleExit)
	})
}

const (
	envChild     = "WSPLAN_NETNS_CHILD"
	childStarted = "rate phase started"
)

// TestNetnsOrchestratorChild is the orchestrator TestMultiHostNetns
// SIGKILLs: started in the orchestrator's namespace with envChild set to
// "shardA,shardB,target,certs,idle_exit", it opens 2 × 2,000 connections
// and runs a long rate phase.
func TestNetnsOrchestratorChild(t *testing.T) {
	v := os.Getenv(envChild)
	if v == "" {
		t.Skip("the orchestrator process of TestMultiHostNetns")
	}
	f := strings.Split(v, ",")
	idle, err := time.ParseDuration(f[4])
	if err != nil {
		t.Fatal(err)
	}
	g := dialRemote(t, f[:2], f[2], f[3], idle, nil)
	defer g.Close()
	env := &scenarios.Env{Driver: g}
	runPhase(t, env, &scenarios.Connect{ConnectParams: client.ConnectParams{Connections: 4000, Concurrency: 200}}, scenarios.Context{})
	fmt.Println(childStarted)
	pay := units.Size(64)
	runPhase(t, env, &rate.Phase{Params: rate.Params{Duration: units.Duration(60 * time.Second), Rate: units.Rate(1), Send: rate.Send{Payload: &pay}}}, scenarios.Context{Conns: 4000})
}

// dialRemote reaches the two shards (retrying while they start).
func dialRemote(t *testing.T, remote []string, target, certs string, idle time.Duration,
	dial func(ctx context.Context, network, addr string) (net.Conn, error)) *shard.Group {
	t.Helper()
	cfg, err := shard.OrchestratorTLS(certs)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		g, _, err := shard.Dial(t.Context(), shard.RemoteSpec{
			Addrs: remote, Weights: []int{1, 1}, TLS: cfg, IdleExit: idle, DialContext: dial,
			Client: client.Options{Targets: []string{target}, Path: "/ws", Loops: 1, NoDelay: true},
		})
		if err == nil {
			return g
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}

func runPhase(t *testing.T, env *scenarios.Env, p scenarios.Phase, ctx scenarios.Context) {
	t.Helper()
	scenarios.Defaults(p, ctx)
	out, err := p.Run(t.Context(), env)
	if err != nil || out.Failed {
		t.Fatalf("%T: %v %s", p, err, out.Error)
	}
}

// checkMerged compares the merged latency percentiles of a phase with
// those of one histogram that recorded every shard's samples.
func checkMerged(t *testing.T, phase string, parts []client.Result) {
	t.Helper()
	var hists []*hdrhistogram.Histogram
	for _, p := range parts {
		switch r := p.(type) {
		case *client.ConnectResult:
			hists = append(hists, r.Latency.Histogram)
		case *echo.Result:
			hists = append(hists, r.Latency.Histogram)
		case *rate.Result:
			hists = append(hists, r.Latency.Histogram)
		}
	}
	if len(hists) == 0 {
		return
	}
	merged := client.NewHistogram()
	single := client.NewHistogram()
	for _, h := range hists {
		merged.Merge(h)
		for _, bar := range h.Distribution() {
			if bar.Count > 0 {
				if err := single.RecordValues(bar.From, bar.Count); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, q := range []float64{50, 75, 90, 99, 99.9, 100} {
		if m, s := merged.ValueAtQuantile(q), single.ValueAtQuantile(q); m != s {
			t.Errorf("%s: merged p%v = %d, one histogram of all samples: %d", phase, q, m, s)
		}
	}
	if merged.TotalCount() != single.TotalCount() || merged.TotalCount() == 0 {
		t.Errorf("%s: merged %d samples, one histogram %d", phase, merged.TotalCount(), single.TotalCount())
	}
}

func waitServer(t *testing.T, srv *nsProc, want int) {
	t.Helper()
	var n int
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if n = established(t, srv.cmd.Process.Pid, srvPort); n == want {
			return
		}
	}
	t.Errorf("server holds %d connections, want %d", n, want)
}
