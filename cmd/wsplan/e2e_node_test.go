package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestNodePlan runs plans/openloop-node.yaml as the README says, scaled down
// (500 connections, the plan's connect concurrency, × 5/s for 2 s on a
// free port): Node's ws server, started
// by its command:, echoes every message, and wsplan measures it as a process
// tree (server CPU per million messages is a figure, not n/a). It needs node
// and the example's node_modules, so it skips without them: `go test ./...`
// never requires Node.
func TestNodePlan(t *testing.T) {
	// Not in parallel: a real load (Node, many users), which the fault
	// matrix's processes beside it would starve into timeouts.
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on PATH: install Node.js 18 or later (Debian: apt-get install nodejs npm) to run plans/openloop-node.yaml")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "examples/node-ws/node_modules/ws/package.json")); err != nil {
		t.Skip("examples/node-ws/node_modules/ws is missing: run `npm ci --prefix examples/node-ws` in the repository root")
	}
	port := freeBasePort(t, 1)
	out := t.TempDir()
	r := startWsplan(t, root, "run", "plans/openloop-node.yaml",
		"--set", "port="+strconv.Itoa(port), "--set", "conns=500", "--set", "duration=2s",
		"--progress", "off", "--json", filepath.Join(out, "r.json"), "--out", filepath.Join(out, "logs"))
	if code := r.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, r.stderrText(), r.stdout.String())
	}
	res := readJSON(t, filepath.Join(out, "r.json"))
	if len(res.Results) != 2 {
		t.Fatalf("got %d results, want connect and rate", len(res.Results))
	}
	for _, x := range res.Results {
		if !x.OK || x.Server != "node-ws" {
			t.Errorf("%s/%s: ok=%v error=%q", x.Server, x.Phase, x.OK, x.Error)
		}
		if x.Resources != "tree" || x.Metrics["server_procs"] != 1.0 {
			t.Errorf("%s: server_resources=%q server_procs=%v, want the started node process measured (tree, 1)",
				x.Phase, x.Resources, x.Metrics["server_procs"])
		}
	}
	m := res.Results[1].Metrics
	if m["sent"] != 5000.0 || m["recv"] != m["sent"] || m["failed"] != 0.0 || m["lost"] != 0.0 {
		t.Errorf("rate: sent=%v recv=%v failed=%v lost=%v, want 5000 sent (500 conns × 5/s × 2 s), every one echoed intact",
			m["sent"], m["recv"], m["failed"], m["lost"])
	}
	for _, k := range []string{"server_cpu_per_1m", "client_cpu_per_1m", "p50", "p99"} {
		if v, ok := m[k].(float64); !ok || v <= 0 {
			t.Errorf("rate: %s=%v, want a number > 0", k, m[k])
		}
	}
	// The node server is stopped with the run: its port is free again.
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("port %d still taken after the run (node server left behind?): %v", port, err)
	}
	l.Close()
}
