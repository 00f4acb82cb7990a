package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestJSONRPCEventsPlan runs plans/jsonrpc-events.yaml scaled down
// against rpc-websockets: calls by id through protocol: jsonrpc, and a
// broadcast through its events (joined by rpc.on, published by the
// broadcast notification) with nothing lost.
func TestJSONRPCEventsPlan(t *testing.T) {
	// Not in parallel: a real load (Node, many users), which the fault
	// matrix's processes beside it would starve into timeouts.
	root := needNodePackage(t, "rpc-websockets", "rpc-websockets")
	res, _, log := runScriptPlan(t, root, 0, "rpc-websockets", "plans/jsonrpc-events.yaml",
		"--set", "port="+strconv.Itoa(freeBasePort(t, 1)), "--set", "users=100", "--set", "concurrency=100",
		"--set", "calls=5", "--set", "rooms=4", "--set", "room_size=50", "--set", "duration=2s")
	if len(res.Results) != 2 {
		t.Fatalf("got %d results, want script and broadcast", len(res.Results))
	}
	s, b := res.Results[0].Metrics, res.Results[1].Metrics
	exchangeOK(t, s, "sum", 500)
	exchangeOK(t, s, "echo", 500)
	if num(b, "deliveries") != num(b, "delivered") || num(b, "lost") != 0 || num(b, "delivered") < 4*50*2*10*0.9 || num(b, "join_p99") <= 0 {
		t.Errorf("broadcast: deliveries %v, delivered %v, lost %v, join_p99 %v", b["deliveries"], b["delivered"], b["lost"], b["join_p99"])
	}
	m := regexp.MustCompile(`sum (\d+), echo (\d+), sleep \d+, publish \d+, broadcast (\d+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no calls line in the server's log:\n%s", log)
	}
	if m[1] != "500" || m[2] != "500" || m[3] != strconv.Itoa(int(num(b, "published"))) {
		t.Errorf("server: sum %s, echo %s, broadcast %s; client: 500, 500, %v published", m[1], m[2], m[3], b["published"])
	}
}

// TestJSONRPCJoinRefused: a room whose event the server did not register
// (rpc.on answers "provided event invalid") fails its subscribers' joins.
func TestJSONRPCJoinRefused(t *testing.T) {
	t.Parallel()
	root := needNodePackage(t, "rpc-websockets", "rpc-websockets")
	port := strconv.Itoa(freeBasePort(t, 1))
	body := `servers:
  - name: rpc
    command: [node, ` + filepath.Join(root, "examples/rpc-websockets/server.js") + `, "127.0.0.1:` + port + `", --rooms, "1"]
    addrs: ["127.0.0.1:` + port + `"]
    path: /
    protocol: jsonrpc
phases:
  - broadcast: {rooms: 2, room_size: 10, rate: 5, duration: 1s}
`
	plan := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	res, _, _ := runScriptPlan(t, root, 1, "rpc", plan)
	if e := res.Results[0].Error; !strings.Contains(e, "10 of 20 connections failed to open") || !strings.Contains(e, "join refused: ") || !strings.Contains(e, " ×10") {
		t.Errorf("JSON error %q, want room 1's 10 joins refused", e)
	}
}
