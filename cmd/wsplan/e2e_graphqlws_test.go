package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
)

// TestGraphQLWSPlan runs plans/graphql-ws.yaml scaled down against a real
// graphql-ws 6 server: subscriptions fed by mutations, each result timed
// and checked, queries matched by operation id, and a broadcast through
// the subscription fed by the publish mutation with nothing lost.
func TestGraphQLWSPlan(t *testing.T) {
	testenv.Slow(t, "plans/graphql-ws.yaml against Node: 4 s; the fault matrix runs graphql-ws every run")
	root := needNodePackage(t, "graphql-ws", "graphql-ws")
	res, _, log := runScriptPlan(t, root, 0, "graphql-ws", "plans/graphql-ws.yaml",
		"--set", "port="+strconv.Itoa(freeBasePort(t, 1)), "--set", "users=100", "--set", "concurrency=100", "--set", "ops=5",
		"--set", "rooms=4", "--set", "room_size=50", "--set", "duration=2s")
	if len(res.Results) != 2 {
		t.Fatalf("got %d results, want script and broadcast", len(res.Results))
	}
	s, b := res.Results[0].Metrics, res.Results[1].Metrics
	exchangeOK(t, s, "subscribe", 100)
	exchangeOK(t, s, "pubsub", 500)
	exchangeOK(t, s, "query", 500)
	if num(s, "unexpected") != 0 || num(s, "pubsub_count") != 500 {
		t.Errorf("script: unexpected %v, pubsub_count %v; want 0, 500", s["unexpected"], s["pubsub_count"])
	}
	if num(b, "deliveries") != num(b, "delivered") || num(b, "lost") != 0 || num(b, "delivered") < 4*50*2*10*0.9 || num(b, "join_p99") <= 0 {
		t.Errorf("broadcast: deliveries %v, delivered %v, lost %v, join_p99 %v", b["deliveries"], b["delivered"], b["lost"], b["join_p99"])
	}
	// The script's 500 mutations and the broadcast's, each once.
	m := regexp.MustCompile(`\((\d+) published`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no published count in the server's log:\n%s", log)
	}
	if n, _ := strconv.ParseFloat(m[1], 64); n != 500+num(b, "published") {
		t.Errorf("the server ran %v publish mutations, the client sent %v", n, 500+num(b, "published"))
	}
}

// gqlPlan writes a plan against examples/graphql-ws/server.js with
// serverArgs, protocol settings protoExtra and phases, and returns its
// path.
func gqlPlan(t *testing.T, root, port, protoExtra, phases string, serverArgs ...string) string {
	t.Helper()
	args := ""
	for _, a := range serverArgs {
		args += ", " + strconv.Quote(a)
	}
	body := `servers:
  - name: gql
    command: [node, ` + filepath.Join(root, "examples/graphql-ws/server.js") + `, "127.0.0.1:` + port + `"` + args + `]
    addrs: ["127.0.0.1:` + port + `"]
    path: /graphql
    protocol: {name: graphql-ws` + protoExtra + `}
phases:
` + phases
	plan := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return plan
}

// TestGraphQLWSRefused: a connection_init the server refuses (4403
// Forbidden: the wrong token) fails the connections with the protocol's
// reason, in the table and the JSON.
func TestGraphQLWSRefused(t *testing.T) {
	t.Parallel()
	root := needNodePackage(t, "graphql-ws", "graphql-ws")
	port := strconv.Itoa(freeBasePort(t, 1))
	plan := gqlPlan(t, root, port, `, init: '{"token":"wrong"}'`, "  - connect: {connections: 20, timeout: 2s, retries: -1}\n", "--token", "right")
	res, out, _ := runScriptPlan(t, root, 1, "gql", plan)
	if !strings.Contains(out, "graphql-ws: forbidden (4403)") {
		t.Errorf("the table does not name the protocol's reason:\n%s", out)
	}
	if e := res.Results[0].Error; !strings.Contains(e, "graphql-ws: forbidden (4403) ×20") {
		t.Errorf("JSON error %q, want the protocol's reason ×20", e)
	}
}

// TestGraphQLWSPing: the server's protocol pings (every 100 ms, a client
// that has not ponged since the last one closed 4499) are answered by the
// client through a hold: every connection alive, every ping answered.
func TestGraphQLWSPing(t *testing.T) {
	t.Parallel()
	root := needNodePackage(t, "graphql-ws", "graphql-ws")
	port := strconv.Itoa(freeBasePort(t, 1))
	plan := gqlPlan(t, root, port, "", "  - connect: {connections: 20}\n  - hold: {duration: 1500ms}\n", "--ping", "100")
	res, _, log := runScriptPlan(t, root, 0, "gql", plan)
	if h := res.Results[1].Metrics; num(h, "alive") != 20 {
		t.Errorf("hold: alive %v, want 20 (error %q)", h["alive"], res.Results[1].Error)
	}
	m := regexp.MustCompile(`(\d+) pings, (\d+) pongs`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no ping count in the server's log:\n%s", log)
	}
	pings, _ := strconv.Atoi(m[1])
	pongs, _ := strconv.Atoi(m[2])
	if pings < 20*10 || pongs < pings-20 {
		t.Errorf("%d pings, %d pongs: want ≥ 200 pings, each answered (but the last of each connection)", pings, pongs)
	}
}

// TestGraphQLWSUnanswered: a step that waits for an answer graphql-ws
// never gives (an unsubscribe's) fails the plan's load with its place;
// mutations and queries awaited (publish with as:), which other
// protocols answer only with qos or a receipt, load.
func TestGraphQLWSUnanswered(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	plan := gqlPlan(t, root, "9", "", `  - script:
      users: 1
      steps:
        - publish: {topic: '{ hello }', as: hello}
        - unsubscribe: {topic: "1", as: stop}
`)
	r := startWsplan(t, root, "validate", plan)
	if code := r.wait(t, time.Minute); code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, r.stderrText())
	}
	want := "phase script cannot run through it: steps[1].unsubscribe: the protocol does not answer this unsubscribe"
	if e := r.stderrText(); !strings.Contains(e, want) || strings.Contains(e, "steps[0]") {
		t.Errorf("stderr:\n%s\nwant %q only", e, want)
	}
}
