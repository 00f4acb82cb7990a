package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/wsplan/wsplan/internal/plan"
)

// ptySession is a command on a pseudo-terminal whose output is read as
// it comes, for a test to answer its questions.
type ptySession struct {
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	seen int // how much of out the last expect consumed
	done chan error
	read chan struct{} // closed when the terminal's output has been read to its end
}

// startPTY runs wsplan with args in dir on a pseudo-terminal.
func startPTY(t *testing.T, dir string, args ...string) *ptySession {
	t.Helper()
	s := &ptySession{cmd: exec.Command(mustLook(t), args...), done: make(chan error, 1), read: make(chan struct{})}
	s.cmd.Dir = dir
	tty, err := pty.StartWithSize(s.cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	s.tty = tty
	go func() {
		defer close(s.read)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				break // EIO once the child has gone
			}
		}
	}()
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill() // only our own child, by pid
			<-s.done
		}
		tty.Close()
	})
	return s
}

// expect waits for re in the output after the last match.
func (s *ptySession) expect(t *testing.T, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		rest := s.out.String()[s.seen:]
		if loc := rx.FindStringIndex(rest); loc != nil {
			s.seen += loc[1]
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
	t.Fatalf("no %q on the terminal; it shows:\n%s", re, s.text())
}

// answer types a line.
func (s *ptySession) answer(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.tty, line+"\r"); err != nil {
		t.Fatal(err)
	}
}

func (s *ptySession) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// exit waits for the command's exit code, and for its last output to
// be read (a busy host may run the reader after the child has gone).
func (s *ptySession) exit(t *testing.T) int {
	t.Helper()
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		select {
		case <-s.read:
		case <-time.After(10 * time.Second):
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.Sys().(syscall.WaitStatus).ExitStatus()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(time.Minute):
		t.Fatalf("wsplan init did not end; the terminal shows:\n%s", s.text())
	}
	return -1
}

// TestInitOnTerminal: on a terminal, `wsplan init` asks for the url, the
// protocol, TLS, connections and a CI gate, asks again after a wrong
// answer, and writes the plan answered; run again, it asks before
// overwriting, and leaves the file when told no. Given a flag it asks
// nothing.
func TestInitOnTerminal(t *testing.T) {
	dir := t.TempDir()
	s := startPTY(t, dir, "init")
	s.expect(t, `Your server's URL, ws://… or wss://… \(empty: [^)]*\): `)
	s.answer(t, "http://127.0.0.1:7000/ws")
	s.expect(t, `want a ws:// or wss:// URL\r\n`)
	s.expect(t, `Your server's URL`)
	s.answer(t, "ws://127.0.0.1:7000/ws")
	s.expect(t, `Protocol \(none, [a-z, -]+\) \[none\]: `)
	s.answer(t, "amqp")
	s.expect(t, `--protocol "amqp": want one of`)
	s.answer(t, "mqtt")
	s.expect(t, `TLS \(wss://\)\? \[y/N\]: `)
	s.answer(t, "y")
	s.expect(t, `Connections \[100\]: `)
	s.answer(t, "many")
	s.expect(t, `want a number of connections, got "many"`)
	s.answer(t, "30")
	s.expect(t, `A CI gate [^\[]*\[y/N\]: `)
	s.answer(t, "yes")
	s.expect(t, `wrote plan\.yaml\r\n`)
	if code := s.exit(t); code != 0 {
		t.Fatalf("exit %d; the terminal shows:\n%s", code, s.text())
	}
	file := filepath.Join(dir, "plan.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.LoadBytes(file, data, plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv := p.Servers[0]
	if srv.URLs[0] != "wss://127.0.0.1:7000/ws" || srv.Protocol == nil || srv.Protocol.Name != "mqtt" || srv.TLS == nil ||
		p.Vars["conns"] != "30" || !p.Assert[0].Abort {
		t.Errorf("the plan answered: url %v, protocol %v, tls %v, conns %s, abort %v; want wss, mqtt, a tls block, 30, true",
			srv.URLs, srv.Protocol, srv.TLS, p.Vars["conns"], p.Assert[0].Abort)
	}

	// Again: it asks before overwriting; no leaves the file as it was.
	s = startPTY(t, dir, "init")
	for _, q := range []string{`URL[^\n]*\): `, `Protocol[^\n]*\]: `, `TLS[^\n]*\]: `, `Connections[^\n]*\]: `, `CI gate[^\n]*\]: `} {
		s.expect(t, q)
		s.answer(t, "")
	}
	s.expect(t, `plan\.yaml exists: overwrite it\? \[y/N\]: `)
	s.answer(t, "n")
	s.expect(t, `plan\.yaml exists: not overwritten`)
	if code := s.exit(t); code != ExitFailed {
		t.Errorf("exit %d, want %d", code, ExitFailed)
	}
	if after, _ := os.ReadFile(file); !bytes.Equal(after, data) {
		t.Error("the file changed")
	}

	// A flag: no questions, the flags' plan.
	s = startPTY(t, dir, "init", "--url", "ws://127.0.0.1:7000/ws", "other.yaml")
	if code := s.exit(t); code != 0 || strings.Contains(s.text(), "?") || !strings.Contains(s.text(), "wrote other.yaml") {
		t.Errorf("exit %d; the terminal shows:\n%s", code, s.text())
	}
}
