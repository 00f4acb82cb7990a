package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain makes this test binary act as `wsplan` when testscript (or a
// test) runs it under that name; `wsplan run` then starts its `serve`
// children from the same binary.
// updateScripts rewrites the scripts' cmp files with what the commands
// print now: go test ./cmd/wsplan -run TestScripts -update-scripts
var updateScripts = flag.Bool("update-scripts", false, "rewrite testdata/script's cmp files")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"wsplan":             func() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) },
		"wsplan-leaky":       leakyServe,
		"wsplan-measured":    wsplanMeasured,
		"wsplan-faultserver": faultServe,
		"wsplan-echolog":     echoLog,
	})
}

// TestScripts runs testdata/script/*.txtar: wsplan used as a user would.
// After each script no wsplan process may be left.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *updateScripts,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": cmdExitCode,
		},
		Setup: func(env *testscript.Env) error {
			work := env.WorkDir
			env.Defer(func() {
				if left := wsplanProcesses(work); len(left) > 0 {
					env.T().Fatal("wsplan processes left behind: " + strings.Join(left, "; "))
				}
			})
			return nil
		},
	})
}

// cmdExitCode runs `exitcode N prog args...` and fails unless prog exits
// with N; its stdout and stderr become the script's.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	path, err := exec.LookPath(args[1])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	cmd := exec.Command(path, args[2:]...)
	cmd.Dir = ts.Getenv("WORK")
	cmd.Env = append(os.Environ(), "HOME="+ts.Getenv("WORK"))
	if root := ts.Getenv(EnvProcSysRoot); root != "" {
		// The script's fake /proc/sys: never the host's.
		cmd.Env = append(cmd.Env, EnvProcSysRoot+"="+root)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	got := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		got = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	ts.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	// Make the output available to the stdout/stderr assertions that follow.
	if err := os.WriteFile(filepath.Join(ts.Getenv("WORK"), ".stdout"), []byte(stdout.String()), 0o644); err != nil {
		ts.Fatalf("%v", err)
	}
	if err := os.WriteFile(filepath.Join(ts.Getenv("WORK"), ".stderr"), []byte(stderr.String()), 0o644); err != nil {
		ts.Fatalf("%v", err)
	}
	if got != want {
		ts.Fatalf("exit code %d, want %d", got, want)
	}
}

// wsplanProcesses lists live processes running this test binary's `wsplan`
// copy (or this test binary itself as a child), other than this process,
// whose working directory is under dir (every process a run starts inherits
// it, so tests running side by side do not see each other's).
func wsplanProcesses(dir string) []string {
	self, _ := os.Executable()
	wsplan, _ := exec.LookPath("wsplan")
	deadline := time.Now().Add(3 * time.Second)
	for {
		var left []string
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			if err != nil || (exe != wsplan && exe != self) {
				continue
			}
			cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
			if err != nil || !strings.HasPrefix(cwd, dir) {
				continue
			}
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				continue
			}
			s := string(stat)
			if i := strings.LastIndexByte(s, ')'); i > 0 && len(s) > i+2 && s[i+2] == 'Z' {
				continue // exited, waiting to be reaped
			}
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			left = append(left, fmt.Sprintf("pid %d: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}
