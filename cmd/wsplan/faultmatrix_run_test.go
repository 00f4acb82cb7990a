package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wsplan/wsplan/internal/faultserver"
	"github.com/wsplan/wsplan/internal/prototest"
	"github.com/wsplan/wsplan/internal/testserver"
)

// runCellPlan starts c's server and runs its plan once, with its
// allowance when allow is set; the server is gone when it returns.
func runCellPlan(root string, c cell, allow bool) (outcome, error) {
	o := outcome{code: -1}
	dir, err := os.MkdirTemp(root, "cell")
	if err != nil {
		return o, err
	}
	serverPid, addr, stop, err := startServer(dir, c)
	if err != nil {
		return o, err
	}
	defer stop()
	pid := 0
	if c.proc != procNone {
		pid = serverPid
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(cellPlan(c, addr, pid, allow)), 0o644); err != nil {
		return o, err
	}
	hit := func() {}
	if c.proc != procNone {
		sig := syscall.SIGKILL
		if c.proc == procStop {
			sig = syscall.SIGSTOP
		}
		hit = func() {
			time.Sleep(c.after)
			// Our own child, by pid (the deferred stop continues and kills it).
			_ = syscall.Kill(pid, sig)
		}
	}
	code, stderr, err := runWsplan(dir, "^s: anchor done", hit, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	if err != nil {
		return o, err
	}
	o.code = code
	res, err := readResults(filepath.Join(dir, "r.json"))
	if err != nil {
		o.err = fmt.Sprintf("no results (%v); stderr: %s", err, lastLines(stderr, 3))
		return o, nil
	}
	found := false
	for _, x := range res.Results {
		if x.Phase == "cell" {
			o.ok, o.err, found = x.OK, x.Error, true
		}
	}
	if !found { // the row failed before the phase (the target probe)
		for _, x := range res.Results {
			if !x.OK {
				o.err = x.Phase + ": " + x.Error
				break
			}
		}
	}
	return o, nil
}

// runWsplan runs wsplan with args in dir and returns its exit code and
// stderr; at its first stderr line matching anchor, it calls hit (in a
// goroutine of its own). It is killed after runLimit.
func runWsplan(dir, anchor string, hit func(), args ...string) (int, string, error) {
	path, err := exec.LookPath("wsplan")
	if err != nil {
		return 0, "", err
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 0, "", err
	}
	if err := cmd.Start(); err != nil {
		return 0, "", err
	}
	timer := time.AfterFunc(runLimit, func() { _ = cmd.Process.Kill() }) // our own child, by pid
	defer timer.Stop()
	rx := regexp.MustCompile(anchor)
	var text strings.Builder
	hitDone := make(chan struct{})
	hitting := false
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		text.WriteString(sc.Text() + "\n")
		if !hitting && rx.MatchString(sc.Text()) {
			hitting = true
			go func() { hit(); close(hitDone) }()
		}
	}
	err = cmd.Wait()
	if hitting {
		<-hitDone
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode(), text.String(), nil
	case err != nil:
		return 0, text.String(), fmt.Errorf("wsplan: %v (after %s?); stderr: %s", err, runLimit, lastLines(text.String(), 3))
	}
	return 0, text.String(), nil
}

// runLimit bounds one run of a cell's plan.
const runLimit = time.Minute

// readResults reads a run's --json results.
func readResults(path string) (jsonRun, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return jsonRun{}, err
	}
	var r jsonRun
	return r, json.Unmarshal(b, &r)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, " | ")
}

// cellPlan writes c's plan against the server at addr (pid: when the
// cell kills it by pid, or stops it).
func cellPlan(c cell, addr string, pid int, allow bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "servers:\n  - name: s\n    url: \"ws://%s%s\"\n", addr, c.path)
	if pid != 0 && c.proc != procKillNP {
		fmt.Fprintf(&b, "    pid: %d\n", pid)
	}
	if c.protocol != "" {
		fmt.Fprintf(&b, "    protocol: %s\n", c.protocol)
	}
	b.WriteString("phases:\n")
	switch {
	case c.setup != "":
		fmt.Fprintf(&b, "  - connect: {name: anchor, %s}\n", c.setup)
	case c.proc != procNone:
		b.WriteString("  - connect: {name: anchor, connections: 1}\n")
	}
	body := c.body
	if allow {
		body += ", allow: " + c.allow
	}
	fmt.Fprintf(&b, "  - %s: {name: cell, %s}\n", c.kind, body)
	if c.assert != "" {
		fmt.Fprintf(&b, "assert:\n  - {phase: cell, expr: %q}\n", c.assert)
	}
	return b.String()
}

// serverProc is a cell's server in a process of its own (the fault
// server, `wsplan serve`, mosquitto).
type serverProc struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

// startProc starts path with args in dir, in a process group of its own
// that dies with the test binary, its output to dir/server.log. addr is
// where it listens; "" = the first line of its stdout says so
// ("faultserver ADDR"). It listens when this returns.
func startProc(dir, addr, path string, args ...string) (*serverProc, error) {
	p := &serverProc{cmd: exec.Command(path, args...), addr: addr, done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	p.cmd.Stderr = log
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case line <- sc.Text():
			default:
			}
		}
		p.cmd.Wait()
		close(p.done)
	}()
	deadline := time.After(20 * time.Second)
	for {
		if p.addr != "" {
			if c, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
				c.Close()
				return p, nil
			}
		}
		select {
		case l := <-line:
			if a, ok := strings.CutPrefix(l, "faultserver "); ok {
				p.addr = a
			}
		case <-p.done:
			b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			return nil, fmt.Errorf("%s exited before it listened: %s", filepath.Base(path), lastLines(string(b), 3))
		case <-deadline:
			p.end()
			return nil, fmt.Errorf("%s did not listen within 20 s", filepath.Base(path))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// end kills the process (a stopped one too) and waits for it.
func (p *serverProc) end() {
	// Our own child, by pid.
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Kill()
	<-p.done
}

// startServer starts c's server: a real one (mosquitto, `wsplan serve`)
// or the fault server in a process of its own when the cell names one
// or kills or stops it; pid 0 = the fault server in this process (addr),
// which stop ends.
func startServer(dir string, c cell) (pid int, addr string, stop func(), err error) {
	var proc *serverProc
	switch {
	case c.mosquitto != nil:
		// Started again on new ports when one was taken meanwhile.
		b, err := prototest.LaunchMosquitto(prototest.FindMosquitto(), dir, brokerConf(c.mosquitto))
		if err != nil {
			return 0, "", nil, err
		}
		return b.Pid, b.Addr, func() { _ = b.Stop() }, nil // a killed broker is no error
	case c.serve:
		var path string
		if path, err = exec.LookPath("wsplan"); err != nil {
			return 0, "", nil, err
		}
		route, _, _ := strings.Cut(c.path, "?")
		for range 3 {
			if addr, err = testserver.FreeAddr(cellHost()); err != nil {
				return 0, "", nil, err
			}
			if proc, err = startProc(dir, addr, path, "serve", "--framework", "gws", "--addrs", addr, "--path", route); err == nil || !strings.Contains(err.Error(), "in use") {
				break
			}
		}
	case c.proc != procNone:
		var path string
		if path, err = exec.LookPath("wsplan-faultserver"); err != nil {
			return 0, "", nil, err
		}
		proc, err = startProc(dir, "", path, faultFlags(c.server)...)
	default:
		srv, err := faultserver.Start(cellHost()+":0", c.server)
		if err != nil {
			return 0, "", nil, err
		}
		return 0, srv.Addr(), srv.Close, nil
	}
	if err != nil {
		return 0, "", nil, err
	}
	return proc.cmd.Process.Pid, proc.addr, proc.end, nil
}

// cellHost is a loopback address of a cell's own (127.a.b.c): a client
// of another cell that still dials its dead server's address cannot
// reach this cell's server, even on the same port.
func cellHost() string {
	return fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(254), rand.IntN(256), 2+rand.IntN(253))
}

// brokerConf is a mosquitto cell's configuration: its lines on a
// loopback address of its own (cellHost), an ACL's lines (prefixed
// "acl:") in an ACL file of their own.
func brokerConf(lines []string) prototest.MosquittoConf {
	conf := prototest.MosquittoConf{Host: cellHost()}
	for _, l := range lines {
		if a, ok := strings.CutPrefix(l, "acl:"); ok {
			conf.ACL = append(conf.ACL, a)
			continue
		}
		conf.Lines = append(conf.Lines, l)
	}
	return conf
}

// faultFlags are o as wsplan-faultserver's flags.
func faultFlags(o faultserver.Options) []string {
	args := []string{"--addr", cellHost() + ":0", "--fault", string(o.Fault),
		"--every", strconv.Itoa(o.Every), "--spare", strconv.Itoa(o.Spare),
		"--die-after", o.DieAfter.String(), "--receive-maximum", strconv.Itoa(o.ReceiveMaximum),
		"--quota", strconv.Itoa(o.Quota), "--ack-delay", o.AckDelay.String(),
		"--delay", o.Delay.String(), "--beat", o.Beat.String()}
	if o.Deliveries {
		args = append(args, "--in-rooms")
	}
	if o.Strict {
		args = append(args, "--strict")
	}
	return args
}
