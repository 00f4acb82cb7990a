package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// needNodeExample skips unless node and an example's npm package are
// installed (`go test ./...` never requires Node).
func needNodeExample(t *testing.T, root, example, pkg string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on PATH: install Node.js 18 or later (Debian: apt-get install nodejs npm)")
	}
	if _, err := os.Stat(filepath.Join(root, "examples", example, "node_modules", pkg, "package.json")); err != nil {
		t.Skipf("examples/%s/node_modules/%s is missing: run `npm ci --prefix examples/%s` in the repository root", example, pkg, example)
	}
}

// TestSocketIOPlan runs plans/socketio.yaml scaled down against a real
// socket.io 4 server: emits acknowledged by id (each ack checked against
// its emit), and room fan-out through the protocol with nothing lost.
func TestSocketIOPlan(t *testing.T) {
	// Not in parallel: a real load (Node, many users), which the fault
	// matrix's processes beside it would starve into timeouts.
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	needNodeExample(t, root, "socketio", "socket.io")
	out := t.TempDir()
	r := startWsplan(t, root, "run", "plans/socketio.yaml",
		"--set", "port="+strconv.Itoa(freeBasePort(t, 1)), "--set", "users=200", "--set", "emits=10",
		"--set", "rooms=4", "--set", "room_size=50", "--set", "duration=2s",
		"--progress", "off", "--json", filepath.Join(out, "r.json"), "--out", filepath.Join(out, "logs"))
	if code := r.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, r.stderrText(), r.stdout.String())
	}
	res := readJSON(t, filepath.Join(out, "r.json"))
	if len(res.Results) != 2 {
		t.Fatalf("got %d results, want script and broadcast", len(res.Results))
	}
	s, b := res.Results[0].Metrics, res.Results[1].Metrics
	if s["chat_count"] != 2000.0 || s["join_count"] != 200.0 || s["chat_mismatched"] != 0.0 || s["unexpected"] != 0.0 {
		t.Errorf("script: chat_count=%v join_count=%v mismatched=%v unexpected=%v, want 2000 acks, 200 joins, none wrong",
			s["chat_count"], s["join_count"], s["chat_mismatched"], s["unexpected"])
	}
	if p99, ok := s["chat_p99"].(float64); !ok || p99 <= 0 {
		t.Errorf("script: chat_p99=%v, want a latency", s["chat_p99"])
	}
	// 4 rooms × 1 publisher × 10/s × 2 s × 50 members (the publisher too).
	if b["deliveries"] != 4000.0 || b["delivered"] != 4000.0 || b["lost"] != 0.0 {
		t.Errorf("broadcast: deliveries=%v delivered=%v lost=%v", b["deliveries"], b["delivered"], b["lost"])
	}
}

// TestSocketIONoConnect: a server that never answers the namespace
// connect fails the connections with the protocol's reason.
func TestSocketIONoConnect(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	needNodeExample(t, root, "socketio", "socket.io")
	port := strconv.Itoa(freeBasePort(t, 1))
	dir := t.TempDir()
	plan := filepath.Join(dir, "p.yaml")
	body := `servers:
  - name: mute
    command: [node, ` + filepath.Join(root, "examples/socketio/server.js") + `, "127.0.0.1:` + port + `", --no-connect]
    addrs: ["127.0.0.1:` + port + `"]
    path: /socket.io/?EIO=4&transport=websocket
    protocol: socketio
phases:
  - connect: {connections: 20, timeout: 1s, retries: -1}
`
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startWsplan(t, root, "run", plan, "--progress", "off", "--json", filepath.Join(dir, "r.json"), "--out", filepath.Join(dir, "logs"))
	if code := r.wait(t, time.Minute); code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s\nstdout:\n%s", code, r.stderrText(), r.stdout.String())
	}
	if !strings.Contains(r.stdout.String(), "socket.io: no answer to the namespace connect") {
		t.Errorf("the table does not name the protocol's reason:\n%s", r.stdout.String())
	}
	res := readJSON(t, filepath.Join(dir, "r.json"))
	if e := res.Results[0].Error; !strings.Contains(e, "socket.io: no answer to the namespace connect ×20") {
		t.Errorf("JSON error %q, want the protocol's reason ×20", e)
	}
}
