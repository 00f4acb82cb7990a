package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
)

// blindPlan writes a plan against a url: server without pid: — blind to
// the engine — of a connect phase, then phases, into dir; shards > 0
// runs the client in that many processes.
func blindPlan(t *testing.T, dir, url, phases string, shards int) {
	t.Helper()
	plan := fmt.Sprintf("client: {shards: %d}\nservers:\n  - {name: blind, url: %q}\nphases:\n  - connect: {connections: 20, concurrency: 10}\n%s", shards, url, phases)
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
}

// diedRx is a blind server's death as its row says it.
var diedRx = regexp.MustCompile(`^the server appears to have died: (\d+) of (\d+) connections closed by the peer within \S+, new connections refused$`)

// TestBlindServerDies: a url: server without pid: that dies mid-phase —
// a `wsplan serve` killed, or a server in this process closing its
// listener and every connection — fails that row, whatever its kind,
// with "the server appears to have died": most connections closed by the
// peer at once, new ones refused. The phase after it is skipped, exit 1.
func TestBlindServerDies(t *testing.T) {
	testenv.Slow(t, "6 s: servers killed mid-phase without pid:, each through the CLI")
	t.Parallel()
	for _, c := range []struct {
		name, path, phase string
		inproc            bool // a test server in this process, closed; else a `wsplan serve`, killed
		shards            int
	}{
		{"hold", "/ws", "hold: {duration: 2s}", false, 0},
		{"broadcast", "/broadcast", "broadcast: {rooms: 2, room_size: 10, rate: 20, duration: 2s, drain: 500ms}", true, 0},
		{"echo", "/ws", "echo: {total: 100000000, concurrency: 20, payload: 64}", false, 0},
		{"rate", "/ws", "rate: {rate: 50, duration: 2s, payload: 64, drain: 500ms}", false, 0},
		{"hold over shards", "/ws", "hold: {duration: 2s}", false, 2},  // the shards' counts merge
		{"conformance", "/ws", "conformance: {parallel: 1}", false, 0}, // dials itself: its own dial finds the server gone
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name != "hold" && c.name != "broadcast" {
				// The fault matrix kills a server without pid: under every kind.
				testenv.Slow(t, "a death per kind, 2 s each; the fault matrix covers every kind too")
			}
			dir := t.TempDir()
			var addr string
			var die func()
			if c.inproc {
				s := testserver.Start(t, testserver.Options{Rooms: c.path == "/broadcast"})
				addr, die = s.Addr(), s.Close
			} else {
				h := startByHand(t, t.TempDir(), "--framework", "gws")
				addr = h.addr
				die = func() {
					if err := h.cmd.Process.Kill(); err != nil { // the test's own child, by pid
						t.Fatal(err)
					}
				}
			}
			blindPlan(t, dir, "ws://"+addr+c.path, "  - "+c.phase+"\n  - echo: {total: 100, concurrency: 1}\n", c.shards)
			r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
			r.waitLine(t, `blind: connect done`, time.Minute)
			time.Sleep(700 * time.Millisecond)
			die()
			if code := r.wait(t, time.Minute); code != ExitFailed {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitFailed, r.stderrText())
			}
			res := readJSON(t, filepath.Join(dir, "r.json"))
			if len(res.Results) != 3 {
				t.Fatalf("%d results, want 3", len(res.Results))
			}
			if x := res.Results[0]; !x.OK {
				t.Errorf("connect failed: %s", x.Error)
			}
			x := res.Results[1]
			if len(x.Shards) != c.shards {
				t.Errorf("%s: %d client shards, want %d", x.Phase, len(x.Shards), c.shards)
			}
			if c.name == "conformance" {
				if want := "server appears to have died (new connections refused) during the phase"; x.OK || x.Error != want {
					t.Errorf("%s: ok=%v error %q, want %q", x.Phase, x.OK, x.Error, want)
				}
				checkNotRun(t, filepath.Join(dir, "r.json"), x.Metrics, 1)
			} else {
				checkDied(t, x.Phase, x.OK, x.Error)
			}
			if x := res.Results[2]; x.OK || x.Error != "skipped: the server appears to have died" {
				t.Errorf("%s: ok=%v error %q, want skipped", x.Phase, x.OK, x.Error)
			}
			assertNoLeftovers(t, dir)
		})
	}
}

// checkDied checks a row that names a blind server's death: every
// connection closed by the peer at once (20 at least), new ones refused.
func checkDied(t *testing.T, phase string, ok bool, err string) {
	t.Helper()
	m := diedRx.FindStringSubmatch(err)
	if ok || m == nil {
		t.Fatalf("%s: ok=%v error %q, want %s", phase, ok, err, diedRx)
	}
	t.Logf("%s: %s", phase, err)
	if n, _ := strconv.Atoi(m[1]); n < 20 || m[1] != m[2] {
		t.Errorf("%s: %s of %s connections, want every one (20 at least)", phase, m[1], m[2])
	}
}

// TestBlindServerNotDead: a blind server that closes connections but
// lives is not called dead: a few dropped mid-hold; every one dropped
// while it still accepts new ones; every one closed by the plan's close
// phase. The phases after run.
func TestBlindServerNotDead(t *testing.T) {
	testenv.Slow(t, "5 s: drops that are no death, each through the CLI")
	t.Parallel()
	after := "  - connect: {connections: 5}\n  - echo: {total: 100, concurrency: 5}\n"
	for _, c := range []struct {
		name, phases string
		drop         int // connections the server drops mid-phase
		exit         int // -1: the hold's own verdict on its drops decides
	}{
		{"a few dropped", "  - hold: {duration: 1500ms}\n" + after, 3, -1},
		{"all dropped, still listening", "  - hold: {duration: 1500ms}\n" + after, 20, -1},
		{"closed by the plan", "  - close: {}\n" + after, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := testserver.Start(t, testserver.Options{})
			blindPlan(t, dir, "ws://"+s.Addr()+"/ws", c.phases, 0)
			r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
			r.waitLine(t, `blind: connect done`, time.Minute)
			if c.drop > 0 {
				time.Sleep(500 * time.Millisecond)
				s.Drop(c.drop)
			}
			code := r.wait(t, time.Minute)
			if c.exit >= 0 && code != c.exit {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, c.exit, r.stderrText())
			}
			res := readJSON(t, filepath.Join(dir, "r.json"))
			if len(res.Results) != 4 {
				t.Fatalf("%d results, want 4", len(res.Results))
			}
			for i, x := range res.Results {
				if strings.Contains(x.Error, "appears to have died") {
					t.Errorf("%s: %q: called dead", x.Phase, x.Error)
				}
				if i >= 2 && !x.OK {
					t.Errorf("%s after: %s", x.Phase, x.Error)
				}
			}
			assertNoLeftovers(t, dir)
		})
	}
}
