// Package launch starts and stops the processes a run needs (framework
// servers, a user's own server, client shards). It is the only package that
// uses os/exec.
//
// Every child runs in its own process group, receives SIGKILL if wsplan dies
// (Pdeathsig), is started already pinned to its CPUs (it is forked from a
// thread whose affinity was set first, so no thread of it ever runs
// elsewhere), and is stopped by pid and process group only: SIGTERM to the
// group, then SIGKILL after a grace period. Nothing is ever killed by name.
package launch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/secret"
)

// Spec describes a process to start.
type Spec struct {
	Argv    []string // program and arguments; Argv[0] is looked up in PATH
	Env     []string // extra environment (KEY=VALUE), added to wsplan's own
	Dir     string   // working directory; "" = wsplan's
	LogPath string   // file receiving stdout and stderr; "" = kept in memory only
	CPUs    []int    // CPU affinity; empty = inherit
	Stdin   io.Reader
	Stdout  io.Writer // when set, stdout goes here instead of the log (stderr still logs)
	// Secrets are masked in the log and its tail (the child may print
	// them: it was given them to do its job); nil masks nothing.
	Secrets *secret.Set
}

// Process is a started child.
type Process struct {
	Pid  int
	cmd  *exec.Cmd
	log  *tail
	file *os.File
	red  *secret.Writer // the log's redaction; nil without Spec.Secrets
	done chan struct{}
	err  error // exit error, valid after done is closed
	mu   sync.Mutex
	stop bool // Stop was called: the exit is expected
}

// Start starts the process.
func Start(s Spec) (*Process, error) {
	if len(s.Argv) == 0 {
		return nil, errors.New("launch: empty command")
	}
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Dir = s.Dir
	cmd.Stdin = s.Stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &Process{cmd: cmd, log: &tail{max: 64 << 10}, done: make(chan struct{})}
	var out io.Writer = p.log
	if s.LogPath != "" {
		f, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("launch: log file: %w", err)
		}
		p.file = f
		out = io.MultiWriter(f, p.log)
	}
	if s.Secrets != nil {
		p.red = s.Secrets.Writer(out)
		out = p.red
	}
	cmd.Stderr = out
	cmd.Stdout = out
	if s.Stdout != nil {
		cmd.Stdout = s.Stdout
	}
	if err := startPinned(cmd, s.CPUs); err != nil {
		if p.file != nil {
			p.file.Close()
		}
		return nil, fmt.Errorf("launch %s: %w", s.Argv[0], err)
	}
	p.Pid = cmd.Process.Pid
	go func() {
		p.err = cmd.Wait() // the output is copied when it returns
		if p.red != nil {
			// What was held back for a secret that never came; a failed
			// write loses the log's last bytes, not the run.
			_ = p.red.Close()
		}
		if p.file != nil {
			p.file.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// startPinned forks from a thread whose affinity is set to cpus, so the child
// and every thread it creates inherit it, then restores the thread.
func startPinned(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("sched_getaffinity: %w", err)
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("sched_setaffinity %v: %w", cpus, err)
	}
	err := cmd.Start()
	if rerr := unix.SchedSetaffinity(0, &old); rerr != nil && err == nil {
		err = fmt.Errorf("restoring affinity: %w", rerr)
	}
	return err
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// ExitReason describes how the process ended, for messages.
func (p *Process) ExitReason() string {
	select {
	case <-p.done:
	default:
		return "running"
	}
	if p.err == nil {
		return "exited with status 0"
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	return p.err.Error()
}

// Stopping reports whether Stop was called.
func (p *Process) Stopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stop
}

// Stop ends the process group: SIGTERM, then SIGKILL after grace. It waits
// until the process has exited (at most grace + 5 s) and returns an error if
// the group had to be killed.
func (p *Process) Stop(grace time.Duration) error {
	p.mu.Lock()
	p.stop = true
	p.mu.Unlock()
	select {
	case <-p.done:
		p.killGroup() // stray grandchildren, if any
		return nil
	default:
	}
	// A negative pid signals the process group the child leads.
	if err := syscall.Kill(-p.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGTERM pgid %d: %w", p.Pid, err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		p.killGroup()
		return nil
	case <-t.C:
	}
	p.killGroup()
	select {
	case <-p.done:
		return fmt.Errorf("pid %d did not stop within %s of SIGTERM: killed", p.Pid, grace)
	case <-time.After(5 * time.Second):
		return fmt.Errorf("pid %d did not exit after SIGKILL", p.Pid)
	}
}

func (p *Process) killGroup() {
	// ESRCH (group already gone) is the normal case.
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return
	}
}

// Tail returns the last n bytes of the process's output.
func (p *Process) Tail(n int) string { return p.log.last(n) }

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

func (t *tail) last(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// SelfExe returns the wsplan binary that `serve` children run: the one this
// process was started as (os.Args[0], so test harnesses that install wsplan
// under another name work), falling back to /proc/self/exe.
func SelfExe() (string, error) {
	exe := os.Args[0]
	if !strings.Contains(exe, "/") {
		if p, err := exec.LookPath(exe); err == nil {
			exe = p
		}
	}
	if abs, err := filepath.Abs(exe); err == nil {
		if _, err := os.Stat(abs); err == nil {
			return abs, nil
		}
	}
	return os.Executable()
}
