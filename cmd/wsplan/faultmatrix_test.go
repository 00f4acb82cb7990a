package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/faultserver"
	"github.com/wsplan/wsplan/internal/prototest"
	"github.com/wsplan/wsplan/internal/testenv"
)

// The fault matrix (issue 29): every kind × protocol × fault, each cell a
// real plan run through the CLI against a server that goes wrong on
// purpose (internal/faultserver; in this process, or in a process of its
// own when the cell kills or stops it). A cell runs its plan twice:
// without an allowance it must end its row not ok, naming the fault, and
// exit 1; with `allow:` for that fault it must exit 0 — but what is no
// count of units (the server's death, a phase left without connections)
// fails the row whatever the plan allows. The cells are in
// faultmatrix_cells_test.go; the matrix is printed as a Markdown table
// (go test -run TestFaultMatrix -v). Plain `go test` runs a slice of it
// (cell.inPlainSlice); WSPLAN_SLOW=1 runs every half of every cell.
//
// A cell whose rule needs a fix not yet on main names that branch
// (pending): it runs, and its failure is logged, not reported; once it
// passes, clear its pending. WSPLAN_FAULTMATRIX_STRICT=1 fails pending
// cells that pass, so that a merge shows which to clear.

// faultServe is `wsplan-faultserver --addr HOST:PORT [faultserver flags]`
// (TestMain runs it by that name): a fault server in a process of its
// own, which prints "faultserver ADDR" once it listens and serves until
// it is killed.
func faultServe() {
	addr, o, err := faultserver.ParseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	srv, err := faultserver.Start(addr, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("faultserver", srv.Addr())
	select {} // until killed
}

// How a cell's server ends (cell.proc).
const (
	procNone   = ""           // in the test's process, behaving as its options say
	procKill   = "kill"       // its own process, SIGKILLed during the phase, given as pid:
	procKillNP = "kill-nopid" // the same, without pid:
	procStop   = "stop"       // its own process, SIGSTOPped during the phase
)

// cell is one cell of the matrix.
type cell struct {
	kind, proto, fault string              // the table's labels
	server             faultserver.Options // the fault server's, unless a real server serves the cell
	mosquitto          []string            // mosquitto serves the cell, with these configuration lines ("acl:" lines: its ACL)
	serve              bool                // `wsplan serve --framework gws` serves the cell
	proc               string
	after              time.Duration // from the anchor phase's end to the kill or stop
	protocol           string        // the server's protocol: value (YAML); "" = raw
	path               string        // the upgrade path and query
	setup              string        // the body of a connect phase before the cell's, the anchor of a kill or stop; "" = none (a connection for a kill or stop)
	body               string        // the cell's phase body (YAML mapping, flow style, without its braces)
	assert             string        // an assertion on the cell's phase; "" = none
	want               string        // what the row's error must say, without the allowance (each of a&b, one of a|b)
	allow              string        // the allowance (flow mapping)
	fatal              bool          // the fault is no count of units (the server's death, a phase left without connections): exit 1 with the allowance too
	wantOK             bool          // the plan must pass without any allowance (a limit honoured)
	pending            string        // the branch whose fix the cell needs; "" = main
}

func (c cell) name() string { return c.kind + "/" + c.proto + "/" + c.fault + "/" + c.serverName() }

// serverName names the cell's server for the table.
func (c cell) serverName() string {
	switch {
	case c.mosquitto != nil:
		return "mosquitto"
	case c.serve:
		return "gws"
	}
	return "faultserver"
}

// outcome is what one run of a cell's plan gave.
type outcome struct {
	code    int
	ok      bool   // the cell's row
	err     string // its error
	problem string // why the run is not what the cell wants; "" = it is
	skip    string // why the cell did not run (its server is not installed)
}

// TestFaultMatrix runs every half of every cell (without and with its
// allowance), matrixParallel at once in goroutines of its own (t.Parallel
// would run GOMAXPROCS at once: these mostly wait), then reports each
// half as a subtest and prints the matrix.
func TestFaultMatrix(t *testing.T) {
	t.Parallel()
	cells := faultCells()
	root := t.TempDir()
	type job struct {
		c     cell
		allow bool
	}
	var jobs []job
	for _, c := range cells {
		for _, allow := range []bool{false, true} {
			// The plain run takes the fault halves (exit 1, the fault
			// named) of a slice: every kind over raw WebSocket and every
			// protocol's greeting; the slow tests run every half.
			if !testenv.SlowEnabled() && (allow || !c.inPlainSlice()) {
				continue
			}
			if (!allow || !c.wantOK) && selected(t.Name()+"/"+c.name()+"/"+half(allow)) {
				jobs = append(jobs, job{c, allow})
			}
		}
	}
	t.Logf("%d halves of %d cells", len(jobs), len(cells))
	rows := make([]outcome, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, matrixParallel)
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rows[i] = runHalf(root, j.c, j.allow)
		}()
	}
	wg.Wait()
	byName := map[string]outcome{}
	failing := map[string]bool{} // cells a half of which is not what it wants
	for i, j := range jobs {
		byName[j.c.name()+"/"+half(j.allow)] = rows[i]
		if rows[i].problem != "" {
			failing[j.c.name()] = true
		}
	}
	for i, j := range jobs {
		t.Run(j.c.name()+"/"+half(j.allow), func(t *testing.T) { judgeHalf(t, j.c, rows[i], failing[j.c.name()]) })
	}
	t.Log("\n" + matrixTable(cells, byName))
	assertNoLeftovers(t, root)
}

// inPlainSlice reports whether the plain `go test` run takes c's fault
// half: every kind's faults over raw WebSocket but its server killed
// with pid: or stalled (those two under connect and echo only: the
// killed-with-pid: cells are the no-pid: ones made easier, and each stall
// waits out seconds of timeouts), and the greeting faults (connect) of
// MQTT and JSON-RPC, a protocol with a greeting and one without (each
// protocol's greeting has unit tests of its own in internal/client). The
// rest — the other kinds' kills with pid: and stalls, each protocol under
// each kind, its server killed or stopped, the other protocols' greeting
// cells, mosquitto's cells, every allowance half — run with
// WSPLAN_SLOW=1, as .ci/run sets.
func (c cell) inPlainSlice() bool {
	if c.proto == mprotos[0].label {
		everyKind := c.proc == procNone || c.proc == procKillNP
		return everyKind || c.kind == "connect" || c.kind == "echo"
	}
	greeting := c.kind == "connect" && c.proc == procNone
	return greeting && (c.proto == "mqtt" || c.proto == "jsonrpc")
}

// selected reports whether -test.run selects the subtest name (each
// level matched by its part of the pattern, as the testing package
// does), so that the halves it would skip are not run either.
func selected(name string) bool {
	f := flag.Lookup("test.run")
	if f == nil || f.Value.String() == "" {
		return true
	}
	levels := strings.Split(strings.ReplaceAll(name, " ", "_"), "/")
	for i, pat := range strings.Split(f.Value.String(), "/") {
		if i >= len(levels) {
			break
		}
		if ok, err := regexp.MatchString(pat, levels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// half names a cell's half.
func half(allow bool) string {
	if allow {
		return "allowed"
	}
	return "plain"
}

// matrixParallel is how many halves run at once: each mostly waits (for
// timeouts, for a kill) and uses little CPU.
const matrixParallel = 16

// judgeHalf reports one half of a cell: an error, or a log line for a
// pending cell; cellFails says whether either half of the cell is not
// what it wants (a pending cell passes only when neither is).
func judgeHalf(t *testing.T, c cell, o outcome, cellFails bool) {
	switch {
	case o.skip != "":
		t.Skip(o.skip)
	case o.problem != "" && c.pending != "":
		t.Logf("pending %s: %s", c.pending, o.problem)
	case o.problem != "":
		t.Error(o.problem)
	case c.pending == "" || cellFails:
	case os.Getenv("WSPLAN_FAULTMATRIX_STRICT") == "1":
		t.Errorf("the cell passes: clear its pending (%s)", c.pending)
	default:
		t.Logf("the cell passes: clear its pending (%s)", c.pending)
	}
}

// runHalf runs c's plan without or with its allowance, in a directory
// of its own under root, and says what is wrong with the outcome.
func runHalf(root string, c cell, allow bool) outcome {
	if c.mosquitto != nil && prototest.FindMosquitto() == "" {
		return outcome{code: -1, skip: "no mosquitto: install Debian's mosquitto (apt-get install mosquitto) to run the cells against a real broker"}
	}
	o, err := runCellPlan(root, c, allow)
	switch {
	case err != nil:
		o.problem = err.Error()
	case c.wantOK:
		if o.code != 0 || !o.ok {
			o.problem = fmt.Sprintf("exit %d, row ok=%v %q: want exit 0", o.code, o.ok, o.err)
		}
	case !allow && (o.code != 1 || o.ok || !names(o.err, c.want)):
		o.problem = fmt.Sprintf("without allow: exit %d, row ok=%v %q: want exit 1, not ok, naming %q", o.code, o.ok, o.err, c.want)
	case allow && c.fatal && (o.code != 1 || o.ok || !names(o.err, c.want)):
		o.problem = fmt.Sprintf("not allowable, with allow %s: exit %d, row ok=%v %q: want exit 1, naming %q", c.allow, o.code, o.ok, o.err, c.want)
	case allow && !c.fatal && (o.code != 0 || !o.ok):
		o.problem = fmt.Sprintf("with allow %s: exit %d, row ok=%v %q: want exit 0", c.allow, o.code, o.ok, o.err)
	}
	return o
}

// names reports whether an error says want: each of its parts (a&b),
// each part one of its alternatives (a|b), where the words differ before
// and after a fix.
func names(err, want string) bool {
	for _, part := range strings.Split(want, "&") {
		ok := false
		for _, w := range strings.Split(part, "|") {
			ok = ok || strings.Contains(err, w)
		}
		if !ok {
			return false
		}
	}
	return true
}

// matrixTable is the matrix as Markdown: kind × protocol × fault →
// verdict and exit code, without and with the allowance.
func matrixTable(cells []cell, rows map[string]outcome) string {
	sorted := append([]cell(nil), cells...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].kind < sorted[j].kind })
	var b strings.Builder
	b.WriteString("| Kind | Protocol | Server | Fault | Verdict | Exit | Allowance | Exit | Needs |\n|:--|:--|:--|:--|:--|:--|:--|:--|:--|\n")
	for _, c := range sorted {
		plain, ran := rows[c.name()+"/"+half(false)]
		if !ran || plain.skip != "" {
			continue
		}
		allowed, ran := rows[c.name()+"/"+half(true)]
		if !ran {
			allowed.code = -1
		}
		allow := c.allow
		switch {
		case c.wantOK:
			allow = "(none needed)"
		case c.fatal:
			allow += " (not allowable)"
		}
		needs := c.pending
		if needs == "" {
			needs = "main"
		}
		if plain.problem != "" || allowed.problem != "" {
			needs += " ✗"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %s | %s | %s |\n", c.kind, c.proto, c.serverName(), c.fault,
			verdictText(plain), plain.code, allow, exitText(allowed), needs)
	}
	return b.String()
}

// verdictText is a row's verdict, shortened for the table.
func verdictText(o outcome) string {
	if o.ok {
		return "ok"
	}
	e := strings.ReplaceAll(o.err, "|", "/")
	if r := []rune(e); len(r) > 90 {
		e = string(r[:90]) + "…"
	}
	return "FAIL: " + e
}

// exitText is the allowance run's exit code, "-" when there was none.
func exitText(o outcome) string {
	if o.code < 0 {
		return "-"
	}
	return strconv.Itoa(o.code)
}
