package plan

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/script"
	"github.com/wsplan/wsplan/internal/testenv"
)

// Hostile plans: one per class of input that could make loading take
// unbounded time or memory, each about as large as a plan may be. The
// property (README, Limits): whatever the bytes of a file up to
// MaxPlanBytes, Load accepts or rejects it in under 2 s and 200 MB.

// hostileBase starts every hostile plan: a server, so that what follows
// is what the loader works on.
const hostileBase = "servers: [{name: fake_plan_test}]\n"

// hostileSize is the size each generator aims at: the largest plan.
const hostileSize = 1 << 20

// hostileNodes is the YAML nodes each generator stays under, so that its
// plan is parsed and walked rather than refused for its size.
const hostileNodes = MaxNodes * 95 / 100

// fill repeats unit after head until the plan reaches about n bytes or
// hostileNodes, then writes tail.
func fill(head, unit, tail string, n int) []byte {
	var b bytes.Buffer
	b.WriteString(head)
	nodes := estimateNodes([]byte(head+tail), 1<<30)
	per := max(estimateNodes([]byte(unit), 1<<30), 1)
	for b.Len()+len(unit)+len(tail) <= n && nodes+per <= hostileNodes {
		b.WriteString(unit)
		nodes += per
	}
	b.WriteString(tail)
	return b.Bytes()
}

// deepLoops nests depth loops in one script phase.
func deepLoops(depth int) string {
	return "  - script: {users: 1, steps: [" + strings.Repeat("{loop: {count: 1, steps: [", depth) +
		"{send: x}" + strings.Repeat("]}}", depth) + "]}\n"
}

// fillf is fill with units that differ: unit(i) is the i-th.
func fillf(head string, unit func(i int) string, tail string, n int) []byte {
	var b bytes.Buffer
	b.WriteString(head)
	nodes := estimateNodes([]byte(head+tail), 1<<30)
	for i := 0; ; i++ {
		u := unit(i)
		per := estimateNodes([]byte(u), 1<<30)
		if b.Len()+len(u)+len(tail) > n || nodes+per > hostileNodes {
			break
		}
		b.WriteString(u)
		nodes += per
	}
	b.WriteString(tail)
	return b.Bytes()
}

// hostileClass is one class of hostile input: gen writes its plan (and
// any file it names) into dir and returns the plan's path; want is in
// the first line of the load's answer ("" = accepted).
type hostileClass struct {
	name string
	gen  func(dir string) string
	want string
}

func writePlan(dir string, data []byte) string {
	path := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		panic(err)
	}
	return path
}

// writeData writes a data file of size bytes (sparse: zeros) or of
// content, and a plan whose script reads it.
func writeData(dir string, content []byte, size int64) string {
	f, err := os.Create(filepath.Join(dir, "data.csv"))
	if err == nil {
		_, err = f.Write(content)
	}
	if err == nil && size > 0 {
		err = f.Truncate(size)
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		panic(err)
	}
	return writePlan(dir, []byte(hostileBase+"phases:\n  - script: {users: 1, data: {file: data.csv}, steps: [{send: x}]}\n"))
}

var hostileClasses = []hostileClass{
	// 3,300 nested loops, as many phases of them as fit (the decoder kept
	// every key's full path: quadratic in the depth).
	{"deep-loops", func(dir string) string {
		return writePlan(dir, fill(hostileBase+"phases:\n", deepLoops(3300), "", hostileSize))
	}, "collections nest more than 64 deep"},
	// Loops nested as deep as collections may nest, as many as fit.
	{"deep-loops-64", func(dir string) string {
		return writePlan(dir, fill(hostileBase+"phases:\n", deepLoops(19), "", hostileSize))
	}, "loops nest at most 4 deep"},
	// Flow lists nested as deep as YAML allows, with a variable so that
	// every scalar is visited.
	{"deep-flow", func(dir string) string {
		unit := "  - script: {users: 1, steps: " + strings.Repeat("[", 9000) + "${v}" + strings.Repeat("]", 9000) + "}\n"
		return writePlan(dir, fill(hostileBase+"vars: {v: 1}\nphases:\n", unit, "", hostileSize))
	}, "collections nest more than 64 deep"},
	// Every variable four times the one before it.
	{"vars-4x", func(dir string) string {
		var b strings.Builder
		b.WriteString(hostileBase + "vars:\n  v0: abcd\n")
		for i := 1; i <= 24; i++ {
			fmt.Fprintf(&b, "  v%d: ${v%d}${v%d}${v%d}${v%d}\n", i, i-1, i-1, i-1, i-1)
		}
		b.WriteString("name: ${v24}\nphases: [{connect: {connections: 1}}]\n")
		return writePlan(dir, []byte(b.String()))
	}, "variables expand to more than 1048576 bytes"},
	// A variable of a hundred kilobytes used in every phase.
	{"vars-wide", func(dir string) string {
		head := hostileBase + "vars: {big: " + strings.Repeat("x", 100_000) + "}\nphases:\n"
		return writePlan(dir, fillf(head, func(i int) string {
			return fmt.Sprintf("  - connect: {connections: 1, name: n${big}%d}\n", i)
		}, "", hostileSize))
	}, "variables expand to more than 1048576 bytes"},
	// Aliases of aliases, expanded exponentially.
	{"alias-bomb", func(dir string) string {
		var b strings.Builder
		b.WriteString(hostileBase + "x0: &a0 {connections: 1}\n")
		for i := 1; i <= 40; i++ {
			fmt.Fprintf(&b, "x%d: &a%d {<<: [*a%d, *a%d]}\n", i, i, i-1, i-1)
		}
		return writePlan(dir, fill(b.String()+"phases:\n", "  - connect: *a40\n", "", hostileSize))
	}, "nodes once aliases are expanded"},
	// A template of half a megabyte, an alias of it in every phase.
	{"alias-values", func(dir string) string {
		head := hostileBase + "t: &t '" + strings.Repeat("{{.seq}}", 60_000) + "'\nphases:\n"
		return writePlan(dir, fill(head, "  - script: {users: 1, steps: [{send: *t}]}\n", "", hostileSize))
	}, "the values decoded, aliases and variables expanded, are more than"},
	// Half a million list items where servers go.
	{"wide-list", func(dir string) string {
		data := "phases: [{connect: {}}]\nservers: [1" + strings.Repeat(",1", hostileSize/2-40) + "]\n"
		return writePlan(dir, []byte(data))
	}, "the document has more than 100000 YAML nodes"},
	// Valid phases, as many as fit.
	{"many-phases", func(dir string) string {
		return writePlan(dir, fill(hostileBase+"phases:\n", "  - connect: {connections: 1}\n", "", hostileSize))
	}, ""},
	// Servers, as many as fit, each a problem.
	{"many-servers", func(dir string) string {
		return writePlan(dir, fillf("phases: [{connect: {connections: 1}}]\nservers:\n", func(i int) string {
			return fmt.Sprintf("  - {name: s%d, framework: fake_plan_tst}\n", i)
		}, "", hostileSize))
	}, "unknown framework"},
	// Thousands of variables and of undefined references: each problem
	// lists variables.
	{"undefined-vars", func(dir string) string {
		var b strings.Builder
		b.WriteString(hostileBase + "vars:\n")
		for i := range 20000 {
			fmt.Fprintf(&b, "  variable_%d: 1\n", i)
		}
		return writePlan(dir, fillf(b.String()+"phases:\n", func(i int) string {
			return fmt.Sprintf("  - connect: {connections: ${nope_%d}}\n", i)
		}, "", hostileSize))
	}, "undefined variable"},
	// Unknown keys, each with a suggestion to compute.
	{"unknown-keys", func(dir string) string {
		return writePlan(dir, fillf(hostileBase+"phases: [{connect: {connections: 1}}]\n", func(i int) string {
			return fmt.Sprintf("%s%d: 1\n", strings.Repeat("descriptio", 6), i)
		}, "", hostileSize))
	}, "unknown key"},
	// A template whose one message is hundreds of megabytes, rendered at
	// load to check its correlation.
	{"template-output", func(dir string) string {
		head := hostileBase + "phases:\n  - script: {users: 1, steps: [{send: '{\"id\": {{.seq}}, \"x\": \""
		tail := "\"}'}, {expect: {correlate: $.id}}]}\n"
		return writePlan(dir, fill(head, "{{randString 4096}}", tail, hostileSize))
	}, "renders more than"},
	// A matrix of a thousand combinations over a large plan: a load each.
	{"matrix", func(dir string) string {
		head := hostileBase + "vars: {a: 1, b: 1, c: 1}\nmatrix: {a: [1,2,3,4,5,6,7,8,9,10], b: [1,2,3,4,5,6,7,8,9,10], c: [1,2,3,4,5,6,7,8,9,10]}\nphases:\n"
		return writePlan(dir, fill(head, "  - connect: {connections: ${a}}\n", "", hostileSize))
	}, "matrix"},
	// A data file that never ends.
	{"data-dev-zero", func(dir string) string {
		return writePlan(dir, []byte(hostileBase+"phases:\n  - script: {users: 1, data: {file: /dev/zero}, steps: [{send: x}]}\n"))
	}, "data.file: /dev/zero: a line longer than 65536 bytes"},
	// A data file of one line of 32 MiB (zeros).
	{"data-long-line", func(dir string) string { return writeData(dir, []byte("a\n"), 32<<20) }, "a line longer than 65536 bytes"},
	// A data file of more rows than a data file may have.
	{"data-rows", func(dir string) string {
		return writeData(dir, append([]byte("a\n"), bytes.Repeat([]byte("1\n"), script.MaxRows+1)...), 0)
	}, "more than 1000000 rows"},
	// A data file larger than a data file may be.
	{"data-size", func(dir string) string {
		return writeData(dir, append([]byte("a\n"), bytes.Repeat([]byte("1\n"), 40<<20)...), 0)
	}, "larger than 67108864 bytes"},
	// A plan that never ends.
	{"plan-dev-zero", func(string) string { return "/dev/zero" }, "the plan is larger than"},
	// A plan larger than a plan may be.
	{"plan-too-big", func(dir string) string {
		return writePlan(dir, fill(hostileBase+"phases: [{connect: {}}]\n", "# padding padding padding\n", "", 64<<20))
	}, "the plan is larger than"},
	// Many expects, each with a long expression and a long regex.
	{"matchers", func(dir string) string {
		unit := "  - script: {users: 1, steps: [{send: x}, {expect: {regex: '" + strings.Repeat("(a|b)", 400) +
			"', expr: '" + strings.Repeat("(", 200) + "true" + strings.Repeat(")", 200) + "'}}]}\n"
		return writePlan(dir, fill(hostileBase+"phases:\n", unit, "", hostileSize))
	}, ""},
	// Problems by the thousand: the first MaxErrors are listed.
	{"many-problems", func(dir string) string {
		return writePlan(dir, fill(hostileBase+"phases: [{connect: {connections: 1}}]\nassert:\n", "  - {expr: x, phase: nope}\n", "", hostileSize))
	}, "more problems: fix the first 100"},
}

// hostileEnv names the plan a child process loads (TestHostileChild).
const hostileEnv = "WSPLAN_HOSTILE_PLAN"

// TestHostileChild loads the plan named by hostileEnv, prints how long
// that took, its peak memory and its answer, and exits:
// TestHostileBounded runs it in a process of its own to measure its peak
// memory.
func TestHostileChild(t *testing.T) {
	path := os.Getenv(hostileEnv)
	if path == "" {
		t.Skip("run by TestHostileBounded")
	}
	start := time.Now()
	_, err := LoadMatrix(path, LoadOptions{})
	msg := ""
	if err != nil {
		msg = strings.ReplaceAll(err.Error(), "\n", " | ")
	}
	took := time.Since(start)
	fmt.Printf("HOSTILE %d %d %s\n", took.Nanoseconds(), peakRSS(t), msg)
}

// peakRSS is the process's peak resident memory in bytes (VmHWM: since
// its exec, unlike getrusage's, which counts the parent's before it).
func peakRSS(t *testing.T) int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscan(rest, &kb); err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// hostileResult is what one child measured.
type hostileResult struct {
	load   time.Duration // the load, in the child
	cpu    time.Duration // user + system time of the child process
	maxRSS int64         // bytes, the child's peak (peakRSS)
	answer string        // the load's answer, its lines joined by " | "
}

// runHostile loads the plan at path in a child process.
func runHostile(t *testing.T, path string, timeout time.Duration) (hostileResult, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), hostileEnv+"="+path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return hostileResult{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return hostileResult{}, fmt.Errorf("%w\n%.2000s", err, out.String())
		}
	case <-time.After(timeout):
		if err := cmd.Process.Kill(); err != nil {
			t.Logf("kill: %v", err)
		}
		<-done
		return hostileResult{}, fmt.Errorf("still loading after %v: killed", timeout)
	}
	var r hostileResult
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "HOSTILE "); ok {
			f := strings.SplitN(rest, " ", 3)
			var ns int64
			if _, err := fmt.Sscan(f[0]+" "+f[1], &ns, &r.maxRSS); err != nil || len(f) < 3 {
				return r, fmt.Errorf("bad result line %q", line)
			}
			r.load, r.answer = time.Duration(ns), f[2]
			if st := cmd.ProcessState; st != nil {
				r.cpu = st.UserTime() + st.SystemTime()
			}
			return r, nil
		}
	}
	return r, fmt.Errorf("no result in:\n%.2000s", out.String())
}

// The bounds TestHostileBounded holds every class to.
const (
	hostileMaxLoad = 2 * time.Second
	hostileMaxRSS  = 200 << 20
)

// TestHostileBounded loads every hostile class in a process of its own:
// each is accepted or rejected, for the reason its class says, within
// the bounds.
func TestHostileBounded(t *testing.T) {
	testenv.Slow(t, "9 s: a megabyte plan per hostile class, each loaded in a process")
	if testing.Short() {
		t.Skip("loads a megabyte plan per class")
	}
	for _, c := range hostileClasses {
		t.Run(c.name, func(t *testing.T) {
			r, err := runHostile(t, c.gen(t.TempDir()), 20*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("load %6.3fs  cpu %6.3fs  maxrss %5.1f MB  %.160s", r.load.Seconds(), r.cpu.Seconds(), float64(r.maxRSS)/(1<<20), r.answer)
			// The load's time is the wall time it took, unless the host was
			// busy: then the CPU time its process used (a slow load takes
			// both; a busy host stretches the wall time alone).
			if took := min(r.load, r.cpu); took > hostileMaxLoad {
				t.Errorf("load took %v (CPU %v), more than %v", r.load, r.cpu, hostileMaxLoad)
			}
			if r.maxRSS > hostileMaxRSS {
				t.Errorf("peak memory %d MB, more than %d MB", r.maxRSS>>20, hostileMaxRSS>>20)
			}
			switch {
			case c.want == "" && r.answer != "":
				t.Errorf("rejected: %s", r.answer)
			case !strings.Contains(r.answer, c.want):
				t.Errorf("answer %.300q, want it to say %q", r.answer, c.want)
			}
		})
	}
}
