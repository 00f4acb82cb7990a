package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/report"
)

// terminalPlan runs a known-length open-loop phase (2 s), long enough for
// several progress lines (one every 500 ms).
const terminalPlan = `servers: [{name: gws}]
phases:
  - connect: {connections: 100, concurrency: 50}
  - rate: {duration: 2s, rate: 20, payload: 64}
`

// progressRx matches one live progress line of the rate phase; the ETA
// shows while the phase has time left.
var progressRx = regexp.MustCompile(`\r\x1b\[Krate gws: (\d+)/4000  \d+/s  [0-9.]+m?s  ETA \d+s`)

// idleHintStart is how the warning for a haltpoll host that does not
// poll begins (engine.idleHint): one long sentence, the widest line a run
// on such a host writes.
const idleHintStart = "warning: idle CPUs here halt at once (cpuidle haltpoll, no polling)"

// TestRunOnTerminal: `wsplan run` with default flags on a pseudo-terminal
// of 80 columns shows the live progress line, moving during the phase with
// an ETA, and the compact view naming where the full tables are; every
// line fits the 80 columns, the host's warnings wrapped to them (the
// cpuidle driver is a fake /sys's, haltpoll that does not poll: its
// warning is the longest). The same run piped to files, on a host whose
// driver is none, prints the full tables, no progress line and no cpuidle
// warning.
func TestRunOnTerminal(t *testing.T) {
	testenv.Slow(t, "5 s: a plan run on a pseudo-terminal")
	t.Parallel()
	dir := writePlan(t, terminalPlan)
	cmd := exec.Command(mustLook(t), "run", "plan.yaml", "--out", "logs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), EnvSysRoot+"="+fakeSysRoot(t, "haltpoll", "0"))
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(&out, tty)
		copied <- err
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill() // only our own child, by pid
		<-waited
		t.Fatal("wsplan on a terminal did not end within 2m")
	}
	// The slave side is closed with the child: reading ends with EIO.
	if err := <-copied; err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatal(err)
	}
	tty.Close()
	text := out.String()
	if err != nil {
		t.Fatalf("wsplan run: %v; output:\n%s", err, text)
	}
	var dones []int
	for _, m := range progressRx.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		dones = append(dones, n)
	}
	if len(dones) < 2 || dones[len(dones)-1] <= dones[0] {
		t.Errorf("progress line: counts %v, want at least two moving lines with an ETA; output:\n%q", dones, text)
	}
	if !strings.Contains(text, "compact view (the terminal is narrower than the tables); full tables:\r\n  pipe the output") {
		t.Errorf("no compact view naming where the full tables are; output:\n%s", text)
	}
	var screen []string // what stays on the screen
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if i := strings.LastIndex(l, "\r"); i >= 0 {
			l = l[i+1:] // after the progress line
		}
		l = strings.TrimPrefix(l, "\x1b[K")
		screen = append(screen, l)
		if report.Width(l) > 80 && !strings.HasPrefix(l, "server logs:") {
			t.Errorf("line wider than the terminal's 80 columns: %q", l)
		}
	}
	// The warning is there whole, wrapped: its continuation lines indented.
	if !strings.Contains(strings.Join(strings.Fields(strings.Join(screen, " ")), " "), idleHintStart+": each wake-up of an idle CPU is a VM exit") {
		t.Errorf("no cpuidle warning on a haltpoll host that does not poll; output:\n%s", text)
	}
	if !regexp.MustCompile(`(?m)^warning: idle CPUs here .*\n  \S`).MatchString(strings.Join(screen, "\n")) {
		t.Errorf("the cpuidle warning is not wrapped with its continuation lines indented; output:\n%s", text)
	}

	// Piped to files: the full tables, no progress line; a host whose
	// cpuidle driver is none: no cpuidle warning, and the header says so.
	cmd = exec.Command(mustLook(t), "run", "plan.yaml", "--out", "logs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), EnvSysRoot+"="+fakeSysRoot(t, "none", ""))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("wsplan run piped: %v; stderr:\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "\x1b[K") || strings.Contains(stdout.String(), "\x1b[K") {
		t.Errorf("progress line written to a pipe; stderr:\n%q", stderr.String())
	}
	if strings.Contains(stderr.String(), "cpuidle") {
		t.Errorf("a host whose cpuidle driver is none got a cpuidle warning; stderr:\n%s", stderr.String())
	}
	if !regexp.MustCompile(`(?m)^cpuidle +none$`).MatchString(stdout.String()) {
		t.Errorf("the header does not show the cpuidle driver none; stdout:\n%s", stdout.String())
	}
	if strings.Contains(stdout.String(), "compact view") || report.Width(stdout.String()) <= 80 {
		t.Errorf("piped output: want the full tables (wider than 80 columns), got:\n%s", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "logs")); err != nil {
		t.Error(err)
	}
}
