package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/wsplan/wsplan/internal/testenv"
)

// leakyServe is `wsplan-leaky --addrs HOST:PORT --leak N`, a test
// server (TestMain runs it by that name): a gorilla echo server that
// keeps N bytes for every connection that closed (a buffer the
// connection's handler allocated and never let go: the leak a server
// with a per-connection cache nobody evicts has). --leak 0 keeps nothing.
func leakyServe() {
	fs := flag.NewFlagSet("wsplan-leaky", flag.ExitOnError)
	addr := fs.String("addrs", "127.0.0.1:9000", "listen address")
	leak := fs.Int("leak", 10<<10, "bytes kept per closed connection")
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	var (
		mu   sync.Mutex
		kept [][]byte
	)
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	err := http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		buf := make([]byte, *leak)
		for i := range buf {
			buf[i] = byte(i) // touched: resident
		}
		defer func() {
			c.Close()
			if *leak > 0 {
				mu.Lock()
				kept = append(kept, buf)
				mu.Unlock()
			}
		}()
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if c.WriteMessage(mt, msg) != nil {
				return
			}
		}
	}))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// TestChurnFindsLeak: churn against a server that keeps 10 KB per closed
// connection reads leak? within 40 s (its RSS per 100,000 cycles is
// about 1 GB), and against the same server keeping nothing it does not.
// The servers are the test's own processes, given as url: with pid:.
func TestChurnFindsLeak(t *testing.T) {
	testenv.Slow(t, "70 s of churn")
	path, err := exec.LookPath("wsplan-leaky")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		leak int
		want bool
	}{{10 << 10, true}, {0, false}} {
		t.Run(fmt.Sprint("leak ", c.leak), func(t *testing.T) {
			addr := "127.0.0.1:" + strconv.Itoa(freeBasePort(t, 1))
			srv := exec.Command(path, "--addrs", addr, "--leak", strconv.Itoa(c.leak))
			srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Process.Kill(); srv.Wait() }) // our own child, by pid
			dir := writePlan(t, fmt.Sprintf(`
defaults: {sample_interval: 500ms}
soak: {settle: 3s}
servers: [{name: leaky, url: "ws://%s/", pid: %d}]
phases:
  - connect: {connections: 500}
  - churn: {duration: 35s, rate: 500, close: reset}
`, addr, srv.Process.Pid))
			deadline := time.Now().Add(10 * time.Second)
			for (&handStarted{addr: addr}).upgrade(nil) != nil && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
			if code := r.wait(t, 2*time.Minute); code != 0 {
				t.Fatalf("exit %d; stderr:\n%s\n%s", code, r.stderrText(), r.stdout.String())
			}
			res := readSoak(t, filepath.Join(dir, "r.json"))
			m := res[1].Metrics
			leak, ok := m["leak"].(bool)
			per, _ := m["rss_per_100k"].(float64)
			t.Logf("leak %d B/conn: leak? %v, RSS %+.0f MiB per 100k cycles, %v cycles", c.leak, leak, per/(1<<20), m["cycles"])
			if !ok || leak != c.want {
				t.Errorf("leak = %v (written %v), want %v; metrics %v", leak, ok, c.want, m)
			}
		})
	}
}
