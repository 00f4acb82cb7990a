package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
)

// Malformed plans and flags, a class a row: each is refused with exit 2
// before anything starts, within the loader's bounds (README, Limits).

// hwmEnv names the file wsplanMeasured writes its peak memory to.
const hwmEnv = "WSPLAN_TEST_HWM_FILE"

// wsplanMeasured is `wsplan` that writes its peak resident memory
// (VmHWM: since its exec, unlike getrusage's, which counts the parent's
// before the exec) to the file named by hwmEnv as it exits.
func wsplanMeasured() {
	code := Main(os.Args[1:], os.Stdout, os.Stderr)
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				if err := os.WriteFile(os.Getenv(hwmEnv), []byte(strings.TrimSpace(rest)), 0o644); err != nil {
					fmt.Fprintln(os.Stderr, err)
				}
			}
		}
	}
	os.Exit(code)
}

// The bounds every malformed plan is refused within. The time is the
// process's CPU time (user + system), not wall time: it does not grow when
// the host is busy (parallel tests, a busy loop), so the bound holds on any
// host while still catching a validator that loops or expands a bomb.
const (
	malformedMaxTime = 2 * time.Second
	malformedMaxRSS  = 200 << 20
)

// malformedCase is one row of TestMalformedRefused: a plan (and flags)
// of a class of mistake, and what stderr must say of it.
type malformedCase struct {
	class string
	plan  string
	args  []string
	want  string
}

// malformedCases are the classes of mistake, one plan or flag each: every
// plan's server is a command that leaves the file started if it ever
// runs.
func malformedCases() []malformedCase {
	const server = "servers:\n  - name: s\n    command: [sh, -c, \"touch started; exec sleep 30\"]\n    addrs: [\"127.0.0.1:1\"]\n"
	const proto = "    protocol: mqtt\n"
	const ok = server + "phases:\n  - connect: {connections: 1}\n"
	deep := strings.Repeat("{loop: {count: 1, steps: [", 40) + "{send: x}" + strings.Repeat("]}}", 40)
	vars := "vars:\n  v0: abcd\n"
	for i := 1; i <= 16; i++ {
		vars += fmt.Sprintf("  v%d: ${v%d}${v%d}${v%d}${v%d}\n", i, i-1, i-1, i-1, i-1)
	}
	return []malformedCase{
		{"step bounds: qos", server + proto + "phases:\n  - script:\n      users: 1\n      steps: [{publish: {topic: t, qos: 3}}]\n", nil,
			`plan.yaml:9: phases[0].script.steps[0].publish.qos: must be 0, 1 or 2, got 3`},
		{"step bounds: loop", server + "phases:\n  - script: {users: 1, steps: [{loop: {count: -1, steps: [{send: x}]}}]}\n", nil,
			`plan.yaml:6: phases[0].script.steps[0].loop.count: must be >= 0, got -1`},
		{"fault time", server + "    restart_command: \"true\"\nphases:\n  - connect: {connections: 1}\n  - hold: {duration: 5s, faults: [{restart: server, at: 10m}]}\n", nil,
			`plan.yaml:8: phases[1].hold.faults[0].at: 10m0s is not within the phase's duration (5s)`},
		{"arrivals", server + "phases:\n  - script: {arrival_rate: 0.05, duration: 10s, steps: [{send: x}]}\n", nil,
			`plan.yaml:6: phases[0].script.arrival_rate: 0.05/s for 10s brings no user`},
		{"finite rate", server + "phases:\n  - connect: {connections: 2}\n  - churn: {duration: 5s, rate: .inf}\n", nil,
			`plan.yaml:7: phases[1].churn.rate: want a finite number, got .inf`},
		{"namespace", server + "    protocol: {name: socketio, namespace: chat}\nphases:\n  - connect: {connections: 1}\n", nil,
			`plan.yaml:5: servers[0].protocol: socketio: namespace "chat": want a path`},
		{"another protocol's setting", server + "    protocol: {name: stomp, namespace: /chat}\nphases:\n  - connect: {connections: 1}\n", nil,
			`plan.yaml:5: servers[0].protocol: namespace is a socketio setting, not stomp's`},
		{"preset protocol", "defaults: {protocol: mqtt}\nservers: [{name: gorilla}]\nphases:\n  - connect: {connections: 1}\n", nil,
			`plan.yaml:1: defaults.protocol: applies to no server`},
		{"nesting", server + "phases:\n  - script: {users: 1, steps: [" + deep + "]}\n", nil,
			`plan.yaml:6: collections nest more than 64 deep here`},
		{"variable expansion", vars + server + "phases:\n  - connect: {connections: 1, name: ${v16}}\n", nil,
			`plan.yaml:11: vars.v9: variables expand to more than 1048576 bytes`},
		{"plan size", ok + "# " + strings.Repeat("x", 1<<20) + "\n", nil,
			`plan.yaml: the plan is larger than 1048576 bytes`},
		{"data file", server + "phases:\n  - script: {users: 1, data: {file: /dev/zero}, steps: [{send: x}]}\n", nil,
			`plan.yaml:6: phases[0].script.data.file: /dev/zero: a line longer than 65536 bytes`},
		{"template output", server + "phases:\n  - script: {users: 1, steps: [{send: '" + strings.Repeat("{{randString 4096}}", 300) + "'}]}\n", nil,
			`plan.yaml:6: phases[0].script.steps[0].send: template`},
		{"matrix", "vars: {a: 1, b: 1, c: 1}\nmatrix: {a: [1,2,3,4,5,6,7,8,9,10], b: [1,2,3,4,5,6,7,8,9,10], c: [1,2,3,4,5,6,7,8,9,10]}\n" + ok + "# " + strings.Repeat("x", 8000) + "\n", nil,
			`plan.yaml:2: matrix: 1000 combinations of a plan of`},
		{"flag: --count 0", ok, []string{"--count", "0"}, `--count 0: want 1 to 1000`},
		{"flag: --metrics-interval", ok, []string{"--tune", "--metrics-interval", "1ms"}, `--metrics-interval 1ms: want >= 100ms`},
		{"flag: --metrics-push", ok, []string{"--metrics-push", "ftp://127.0.0.1/"}, `--metrics-push: metrics push "ftp://127.0.0.1/": want an http:// or https:// URL`},
		{"flag: --metrics-listen", ok, []string{"--metrics-listen", "nowhere"}, `--metrics-listen "nowhere": want HOST:PORT`},
		{"flag: --json", ok, []string{"--json", "no/such/dir/r.json"}, `--json no/such/dir/r.json: no directory no/such/dir to write it in`},
	}
}

// TestMalformedRefused runs `wsplan run` on one plan (or flag) of each
// class of mistake: exit 2, the problem named with its file and line (the
// flag for a flag), within malformedMaxTime and malformedMaxRSS, and
// nothing started: the plan's server (a command that leaves a file when
// it starts) never ran, and the output directory was never made.
func TestMalformedRefused(t *testing.T) {
	testenv.Slow(t, "2 s: malformed frames against a measured server")
	t.Parallel()
	bin, err := exec.LookPath("wsplan-measured")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range malformedCases() {
		t.Run(tc.class, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(tc.plan), 0o644); err != nil {
				t.Fatal(err)
			}
			hwm := filepath.Join(dir, "hwm")
			cmd := exec.Command(bin, append([]string{"run", "plan.yaml", "--progress", "off", "--out", "out"}, tc.args...)...)
			cmd.Dir = dir
			// A fake /proc/sys: --tune never reaches the host's.
			cmd.Env = append(os.Environ(), hwmEnv+"="+hwm, EnvProcSysRoot+"="+t.TempDir())
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var took time.Duration
			if cmd.ProcessState != nil {
				took = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != ExitUsage {
				t.Errorf("exit: %v, want %d", err, ExitUsage)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr:\n%.2000s\nwant it to say %q", stderr.String(), tc.want)
			}
			if len(tc.args) == 0 && !regexp.MustCompile(`plan\.yaml(:\d+)?: `).MatchString(stderr.String()) {
				t.Errorf("stderr names no file and line:\n%.2000s", stderr.String())
			}
			for _, started := range []string{"started", "out"} {
				if _, err := os.Stat(filepath.Join(dir, started)); err == nil {
					t.Errorf("%s exists: something started", started)
				}
			}
			var kb int64
			if b, err := os.ReadFile(hwm); err != nil {
				t.Error(err)
			} else if _, err := fmt.Sscanf(string(b), "%d kB", &kb); err != nil {
				t.Errorf("hwm %q: %v", b, err)
			}
			t.Logf("%v CPU, %d MB", took.Round(time.Millisecond), kb>>10)
			if took > malformedMaxTime || kb<<10 > malformedMaxRSS {
				t.Errorf("took %v CPU and %d MB, want under %v and %d MB", took, kb>>10, malformedMaxTime, malformedMaxRSS>>20)
			}
		})
	}
}
