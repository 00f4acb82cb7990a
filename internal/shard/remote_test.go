package shard

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsplan/wsplan/scenarios/echo"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// logBuf collects a shard's log lines.
type logBuf struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuf) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logBuf) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// remoteShard is a Listen on a loopback port, with its log and exit.
type remoteShard struct {
	addr string
	log  *logBuf
	done chan error
}

func startRemote(t *testing.T, certs string, idle time.Duration) *remoteShard {
	t.Helper()
	cfg, err := ShardTLS(certs)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &remoteShard{addr: ln.Addr().String(), log: &logBuf{}, done: make(chan error, 1)}
	go func() {
		r.done <- Listen(ctx, ListenSpec{Listener: ln, TLS: cfg, IdleExit: idle, Link: time.Second, Logf: r.log.logf})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(5 * time.Second):
			t.Error("shard did not stop")
		}
	})
	return r
}

func newCerts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := NewCerts(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRemoteRefuses: a shard accepts only a peer with the run's
// certificate, one at a time; everything else is refused and logged.
func TestRemoteRefuses(t *testing.T) {
	certs := newCerts(t)
	other := newCerts(t) // another run's CA
	sh := startRemote(t, certs, -1)

	good, err := OrchestratorTLS(certs)
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := OrchestratorTLS(other)
	if err != nil {
		t.Fatal(err)
	}
	noCert := good.Clone()
	noCert.Certificates = nil
	wrongCA := good.Clone() // trusts the shard, presents another CA's certificate
	wrongCA.Certificates = wrong.Certificates

	for _, tc := range []struct {
		name string
		cfg  *tls.Config
	}{
		{"no client certificate", noCert},
		{"certificate of another CA", wrongCA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Probe(t.Context(), sh.addr, tc.cfg, 0)
			if err == nil {
				t.Fatal("probe succeeded, want a refusal")
			}
			if !strings.Contains(err.Error(), sh.addr) {
				t.Errorf("error %q does not name the shard", err)
			}
		})
	}
	t.Run("orchestrator does not trust another run's shard", func(t *testing.T) {
		if _, err := Probe(t.Context(), sh.addr, wrong, 0); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("probe with another CA's roots: %v, want a certificate error", err)
		}
	})
	t.Run("plain TCP", func(t *testing.T) {
		c, err := net.Dial("tcp", sh.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte(`{"op":"open","options":{"Targets":["127.0.0.1:1"]}}` + "\n")); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil || strings.Contains(line, "hello") {
			t.Fatalf("plain TCP got %q, %v; want the connection closed", line, err)
		}
	})
	waitFor(t, func() bool { return countRefused(sh.log) >= 4 }, "4 refusals logged")

	// One orchestrator at a time: a second is refused while the first is on.
	g, _, err := Dial(t.Context(), RemoteSpec{Addrs: []string{sh.addr}, TLS: good, Client: client.Options{Targets: []string{"127.0.0.1:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Probe(t.Context(), sh.addr, good, 0)
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("second orchestrator: %v, want busy", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return sh.log.has("closed the session") }, "the session's end logged")
	if _, err := Probe(t.Context(), sh.addr, good, 0); err != nil {
		t.Errorf("after the first left: %v", err)
	}
}

func countRefused(l *logBuf) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.HasPrefix(s, "refused ") {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestRemoteRun: two remote shards split by weights, run connect and echo,
// merge exactly, report their hosts and the start skew; after the
// orchestrator leaves they exit after idle_exit.
func TestRemoteRun(t *testing.T) {
	certs := newCerts(t)
	srv := newDropServer(t)
	a, b := startRemote(t, certs, -1), startRemote(t, certs, -1)
	cfg, err := OrchestratorTLS(certs)
	if err != nil {
		t.Fatal(err)
	}
	g, hellos, err := Dial(t.Context(), RemoteSpec{
		Addrs: []string{a.addr, b.addr}, Weights: []int{3, 1}, TLS: cfg, IdleExit: 300 * time.Millisecond,
		Client: client.Options{Targets: []string{strings.TrimPrefix(srv.URL, "http://")}, Path: "/ws", Loops: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hellos {
		if h.Host.NoFileHard == 0 || len(h.Host.OnlineCPUs) == 0 || h.RTT <= 0 {
			t.Errorf("hello %+v: want the host's fd limit, CPUs and a round trip", h)
		}
	}
	if pids := g.Pids(); len(pids) != 0 {
		t.Errorf("remote shards have local pids %v", pids)
	}
	env := &scenarios.Env{Driver: g}
	connect(t, env, 40)
	if c0, c1 := g.shards[0].conns, g.shards[1].conns; c0 != 30 || c1 != 10 {
		t.Errorf("weights 3:1 opened %d and %d connections, want 30 and 10", c0, c1)
	}
	mark := g.CostMark()
	res, err := g.Run(t.Context(), &echo.Params{Total: 800, Concurrency: 40, Payload: new(units.Size(64)), Verify: new(true)}, &client.Progress{})
	if err != nil {
		t.Fatal(err)
	}
	if e := res.(*echo.Result); e.Success != 800 || e.Latency.TotalCount() != 800 {
		t.Errorf("echo: %d successes, %d latencies; want 800 each", e.Success, e.Latency.TotalCount())
	}
	// Each remote shard measured itself over the phase and said so.
	costs := g.CostsSince(mark)
	if len(costs) != 2 {
		t.Fatalf("costs %+v, want one per shard", costs)
	}
	for i, c := range costs {
		if c.Shard != []string{a.addr, b.addr}[i] || c.CPUSeconds <= 0 || c.Wall <= 0 || c.MemMax <= 0 || c.Usable != 1 {
			t.Errorf("shard %d cost %+v: want its address, CPU time, wall time, memory and 1 usable core (1 loop)", i, c)
		}
	}
	if after := g.CostsSince(g.CostMark()); len(after) != 0 {
		t.Errorf("costs since now: %+v, want none", after)
	}
	if s := g.StartSkew(); s <= 0 || s > time.Second {
		t.Errorf("start skew %v, want > 0 and well under a second on loopback", s)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for _, sh := range []*remoteShard{a, b} {
		select {
		case err := <-sh.done:
			if !errors.Is(err, ErrIdle) {
				t.Errorf("shard %s ended with %v, want ErrIdle", sh.addr, err)
			}
			sh.done <- err // for the cleanup
		case <-time.After(5 * time.Second):
			t.Errorf("shard %s still running 5s after the orchestrator left with idle_exit 300ms", sh.addr)
		}
	}
}

// TestRemoteLinkLost: when the orchestrator vanishes mid-phase (its link
// closed without a word, as when it is SIGKILLed), the shard stops the
// phase and closes every connection; an orchestrator whose shard vanishes
// fails the phase naming it.
func TestRemoteLinkLost(t *testing.T) {
	certs := newCerts(t)
	srv := newDropServer(t)
	sh := startRemote(t, certs, 200*time.Millisecond)
	sh2 := startRemote(t, certs, -1)
	cfg, err := OrchestratorTLS(certs)
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := Dial(t.Context(), RemoteSpec{
		Addrs: []string{sh.addr, sh2.addr}, TLS: cfg, Weights: []int{1, 1},
		Client: client.Options{Targets: []string{strings.TrimPrefix(srv.URL, "http://")}, Path: "/ws", Loops: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	env := &scenarios.Env{Driver: g}
	connect(t, env, 20)
	time.AfterFunc(300*time.Millisecond, func() { g.shards[0].link.Close() })
	_, err = g.Run(t.Context(), &echo.Params{Total: 1 << 40, Concurrency: 20, Payload: new(units.Size(64))}, nil)
	if err == nil || !strings.Contains(err.Error(), "shard 0 ("+sh.addr+")") {
		t.Errorf("phase with a lost link: %v, want shard 0's address", err)
	}
	select {
	case err := <-sh.done:
		if !errors.Is(err, ErrIdle) {
			t.Errorf("shard ended with %v, want ErrIdle", err)
		}
		sh.done <- err
	case <-time.After(5 * time.Second):
		t.Fatal("shard still running 5s after its link was lost")
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return srv.open() == 0 }, "every connection closed on the server")
}
