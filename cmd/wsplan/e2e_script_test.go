package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
)

// The script phase against real application servers, each plan run as
// the README says (scaled where noted) on a free port: issue 21's "must
// show". Every test needs node and the example's installed packages, and
// skips with the command that installs them when they are missing: `go
// test ./...` never requires Node.

// needNodePackage skips t unless node is on PATH and example's node_modules
// holds pkg; it returns the repository's root.
func needNodePackage(t *testing.T, example, pkg string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on PATH: install Node.js 18 or later (Debian: apt-get install nodejs npm) to run the script plans")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "examples", example, "node_modules", pkg, "package.json")); err != nil {
		t.Skipf("examples/%s/node_modules/%s is missing: run `npm ci --prefix examples/%s` in the repository root", example, pkg, example)
	}
	return root
}

// runScriptPlan runs plan from the repository's root with args and wants
// exit code want; it returns the JSON results, stdout and the server's
// log (--out DIR/server-NAME.log).
func runScriptPlan(t *testing.T, root string, want int, server, plan string, args ...string) (jsonRun, string, string) {
	t.Helper()
	out := t.TempDir()
	args = append([]string{"run", plan, "--progress", "off", "--json", filepath.Join(out, "r.json"), "--out", filepath.Join(out, "logs")}, args...)
	r := startWsplan(t, root, args...)
	if code := r.wait(t, 3*time.Minute); code != want {
		t.Fatalf("exit %d, want %d; stderr:\n%s\nstdout:\n%s", code, want, r.stderrText(), r.stdout.String())
	}
	log, err := os.ReadFile(filepath.Join(out, "logs", "server-"+server+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return readJSON(t, filepath.Join(out, "r.json")), r.stdout.String(), string(log)
}

// num reads a metric as a number (0 when absent).
func num(m map[string]any, k string) float64 {
	v, _ := m[k].(float64)
	return v
}

// exchangeOK checks one named exchange's figures: count completed at
// least min, latency percentiles in order, nothing lost.
func exchangeOK(t *testing.T, m map[string]any, name string, min float64) {
	t.Helper()
	if c := num(m, name+"_count"); c < min {
		t.Errorf("%s_count = %v, want >= %v", name, c, min)
	}
	for _, s := range []string{"_mismatched", "_timeouts", "_failed"} {
		if v := num(m, name+s); v != 0 {
			t.Errorf("%s%s = %v, want 0", name, s, v)
		}
	}
	p50, p99, p999, mx := num(m, name+"_p50"), num(m, name+"_p99"), num(m, name+"_p999"), num(m, name+"_max")
	if p50 <= 0 || p99 < p50 || p999 < p99 || mx < p999 {
		t.Errorf("%s latency p50 %v p99 %v p999 %v max %v: want 0 < p50 <= p99 <= p999 <= max", name, p50, p99, p999, mx)
	}
}

// TestJSONRPCPlan runs plans/jsonrpc.yaml (6 s instead of 10): 2,000
// users on their own connections, all at once, send JSON-RPC 2.0
// requests to rpc-websockets with 8 in flight each, replies matched by
// id, one exchange per method; no reply is mismatched, and the server
// answered exactly the calls the client counted.
func TestJSONRPCPlan(t *testing.T) {
	testenv.Slow(t, "plans/jsonrpc.yaml against Node: 8 s; the fault matrix runs jsonrpc every run")
	root := needNodePackage(t, "rpc-websockets", "rpc-websockets")
	res, _, log := runScriptPlan(t, root, 0, "rpc-websockets", "plans/jsonrpc.yaml",
		"--set", "port="+strconv.Itoa(freeBasePort(t, 1)), "--set", "duration=6s")
	if len(res.Results) != 1 || !res.Results[0].OK {
		t.Fatalf("results %+v", res.Results)
	}
	m := res.Results[0].Metrics
	if num(m, "users") != 2000 || num(m, "users_peak") != 2000 || num(m, "open_failed") != 0 {
		t.Errorf("users %v peak %v open_failed %v: want 2,000 users running at once", m["users"], m["users_peak"], m["open_failed"])
	}
	if num(m, "mismatched") != 0 || num(m, "unexpected") != 0 || num(m, "timeouts") != 0 {
		t.Errorf("mismatched %v unexpected %v timeouts %v, want 0", m["mismatched"], m["unexpected"], m["timeouts"])
	}
	calls := regexp.MustCompile(`calls: sum (\d+), echo (\d+), sleep (\d+)`).FindStringSubmatch(log)
	if calls == nil {
		t.Fatalf("no calls line in the server's log:\n%s", log)
	}
	for i, method := range []string{"sum", "echo", "sleep"} {
		exchangeOK(t, m, method, 2000)
		if n, _ := strconv.ParseFloat(calls[i+1], 64); n != num(m, method+"_count") {
			t.Errorf("server answered %v %s calls, client counted %v exchanges", n, method, m[method+"_count"])
		}
	}
}

// TestScriptOrderPlan runs plans/script-order.yaml against a server that
// answers odd ids 5 ms late: with correlate no reply is mismatched; the
// same plan without it reports the out-of-order replies as mismatched,
// which its assertion reads (so the assertion, not the row, decides:
// the row notes them) and fails: exit 1.
func TestScriptOrderPlan(t *testing.T) {
	// Not in parallel: a real load (Node, many users), which the fault
	// matrix's processes beside it would starve into timeouts.
	root := needNodePackage(t, "node-ws", "ws")
	port := "port=" + strconv.Itoa(freeBasePort(t, 1))
	res, _, _ := runScriptPlan(t, root, 0, "node-app", "plans/script-order.yaml", "--set", port)
	m := res.Results[0].Metrics
	if !res.Results[0].OK || num(m, "request_count") != 200*50 || num(m, "request_mismatched") != 0 {
		t.Errorf("with correlate: ok %v, request_count %v mismatched %v, want 10000 and 0", res.Results[0].OK, m["request_count"], m["request_mismatched"])
	}
	exchangeOK(t, m, "request", 10000)

	res, stdout, _ := runScriptPlan(t, root, 1, "node-app", "plans/script-order.yaml", "--set", port, "--set", "correlate=")
	x := res.Results[0]
	m = x.Metrics
	bad := num(m, "request_mismatched")
	if notes := strings.Join(x.Warnings, "\n"); !strings.Contains(notes, "replies mismatched") || !strings.Contains(notes, "an assertion decides") ||
		bad < 100 || bad+num(m, "request_count") != 10000 {
		t.Errorf("without correlate: warnings %q, mismatched %v count %v: want the out-of-order replies mismatched, every reply taken, the assertion deciding",
			x.Warnings, bad, m["request_count"])
	}
	if !strings.Contains(stdout, "| steps[0].loop.steps[1].expect | mismatched |") {
		t.Errorf("no failed-steps row for the mismatches:\n%s", stdout)
	}
}

// TestScriptPlanShards runs plans/script.yaml as it is: 1,000 users, each
// with its own row of plans/data/users.csv (unique), log in, keep the
// token, subscribe and send 100 requests, through 2 client shards. Every
// exchange has its row in the table, and the server saw each user log in
// exactly once.
func TestScriptPlanShards(t *testing.T) {
	// Not in parallel: a real load (Node, many users), which the fault
	// matrix's processes beside it would starve into timeouts.
	root := needNodePackage(t, "node-ws", "ws")
	res, stdout, log := runScriptPlan(t, root, 0, "node-app", "plans/script.yaml", "--set", "port="+strconv.Itoa(freeBasePort(t, 1)))
	x := res.Results[0]
	if !x.OK || len(x.Shards) != 2 {
		t.Fatalf("ok %v error %q, %d client shards, want 2", x.OK, x.Error, len(x.Shards))
	}
	m := x.Metrics
	for name, n := range map[string]float64{"login": 1000, "subscribe": 1000, "request": 100000} {
		exchangeOK(t, m, name, n)
		if num(m, name+"_count") != n {
			t.Errorf("%s_count %v, want %v", name, m[name+"_count"], n)
		}
		if !regexp.MustCompile(`(?m)^\| ` + name + ` +\| ` + strconv.Itoa(int(n)) + ` +\|`).MatchString(stdout) {
			t.Errorf("no %s row with count %v in the exchanges table:\n%s", name, n, stdout)
		}
	}
	if !strings.Contains(log, "logins: 1000, distinct users: 1000, repeated: 0") {
		t.Errorf("server log does not show 1,000 users logging in once each:\n%s", log)
	}
}

// TestScriptStallPlan runs plans/script-stall.yaml as it is: 500 users
// arrive per second for 20 s against a server that stalls 200 ms every
// 2 s. The stalls show in the exchanges' tail as they do in the rate
// phase's on the same server: a tenth of the time is stalled, an exchange
// due t ms into a stall waits 200 − t ms, so p99 is about 180 ms plus the
// backlog the stall leaves, p99.9 near 200 ms and max past it (README
// "Scripted conversations"). Without stalls p99 is a few ms.
func TestScriptStallPlan(t *testing.T) {
	testenv.Slow(t, "runs plans/script-stall.yaml as it is: 40 s")
	root := needNodePackage(t, "node-ws", "ws")
	res, _, _ := runScriptPlan(t, root, 0, "node-app", "plans/script-stall.yaml", "--set", "port="+strconv.Itoa(freeBasePort(t, 1)))
	if len(res.Results) != 3 {
		t.Fatalf("%d results, want connect, rate, script", len(res.Results))
	}
	rate, sc := res.Results[1].Metrics, res.Results[2].Metrics
	if num(sc, "arrivals") != 10000 || num(sc, "users") != 10000 || num(sc, "dropped") != 0 {
		t.Errorf("arrivals %v users %v dropped %v, want 10000 users", sc["arrivals"], sc["users"], sc["dropped"])
	}
	ms := func(v float64) time.Duration { return time.Duration(v) }
	t.Logf("rate p99 %v p999 %v max %v; script p99 %v p999 %v max %v; login p99 %v p999 %v max %v; request p99 %v p999 %v max %v",
		ms(num(rate, "p99")), ms(num(rate, "p999")), ms(num(rate, "max")), ms(num(sc, "p99")), ms(num(sc, "p999")), ms(num(sc, "max")),
		ms(num(sc, "login_p99")), ms(num(sc, "login_p999")), ms(num(sc, "login_max")),
		ms(num(sc, "request_p99")), ms(num(sc, "request_p999")), ms(num(sc, "request_max")))
	for name, n := range map[string]float64{"login": 10000, "request": 5 * 10000} {
		exchangeOK(t, sc, name, n)
		if num(sc, name+"_count") != n {
			t.Errorf("%s_count %v, want %v: every user runs every step", name, sc[name+"_count"], n)
		}
		if p99 := ms(num(sc, name+"_p99")); p99 < 150*time.Millisecond {
			t.Errorf("%s_p99 %v: the 200 ms stalls do not show", name, p99)
		}
		if p999 := ms(num(sc, name+"_p999")); p999 < 190*time.Millisecond {
			t.Errorf("%s_p999 %v, want >= 190ms", name, p999)
		}
		if mx := ms(num(sc, name+"_max")); mx < 195*time.Millisecond {
			t.Errorf("%s_max %v, want about a whole stall (>= 195ms)", name, mx)
		}
	}
	if mx := ms(num(sc, "max")); mx < 200*time.Millisecond {
		t.Errorf("max %v, want >= 200ms: some exchange waited a whole stall and the backlog after it", mx)
	}
	if rp99, sp99 := num(rate, "p99"), num(sc, "request_p99"); rp99 < float64(150*time.Millisecond) || sp99 < 0.8*rp99 {
		t.Errorf("rate p99 %v, request p99 %v: want both to show the stalls alike", ms(rp99), ms(sp99))
	}
}
