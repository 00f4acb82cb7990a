package shard

// One shard: a wsplan process of the Group, started with its spec, spoken to
// over its stdin and stdout, and how it died.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wsplan/wsplan/internal/launch"
	"github.com/wsplan/wsplan/internal/secret"
)

type proc struct {
	i     int
	p     *launch.Process // a local shard; nil for a remote one
	addr  string          // a remote shard's host:port
	link  net.Conn        // a remote shard's TLS link
	rtt   time.Duration   // a remote shard's round trip, measured at open
	in    io.WriteCloser
	out   *bufio.Scanner
	conns int
	sent  time.Time  // when the phase's request went out
	mu    sync.Mutex // serialises writes to in
	// secrets are masked in the shard's replies and its death's tail.
	secrets *secret.Set
}

func startOne(s Spec, i int) (*proc, error) {
	argv := []string{s.Exe, "shard",
		"--targets", strings.Join(s.Client.Targets, ","),
		"--path", s.Client.Path,
		"--loops", strconv.Itoa(max(1, s.Client.Loops)),
		"--nodelay=" + strconv.FormatBool(s.Client.NoDelay),
	}
	if i < len(s.Sources) && len(s.Sources[i]) > 0 {
		argv = append(argv, "--source", strings.Join(s.Sources[i], ","))
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil, err
	}
	log := ""
	if s.LogDir != "" {
		log = fmt.Sprintf("%s/%s-shard-%d.log", s.LogDir, s.Name, i)
	}
	lp, err := launch.Start(launch.Spec{Argv: argv, LogPath: log, CPUs: s.CPUs, Stdin: stdinR, Stdout: stdoutW, Secrets: s.Secrets})
	// The child has its own copies now.
	stdinR.Close()
	stdoutW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		return nil, fmt.Errorf("shard %d: %w", i, err)
	}
	sc := bufio.NewScanner(stdoutR)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &proc{i: i, p: lp, in: stdinW, out: sc, secrets: s.Secrets}, nil
}

func (p *proc) send(r Request) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err = p.in.Write(append(b, '\n'))
	return err
}

// read returns the next reply, or the shard's death with its reason.
func (p *proc) read(timeout time.Duration) (Reply, error) {
	type line struct {
		r   Reply
		err error
	}
	ch := make(chan line, 1)
	go func() {
		if !p.out.Scan() {
			ch <- line{err: p.died()}
			return
		}
		var r Reply
		if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
			ch <- line{err: fmt.Errorf("shard %d: bad reply %q: %w", p.i, p.secrets.Redact(p.out.Text()), err)}
			return
		}
		// The kind's result is decoded, then redacted with the phase's
		// (engine); what the shard says in words is redacted here.
		r.Err = p.secrets.Redact(r.Err)
		for i, w := range r.Warnings {
			r.Warnings[i] = p.secrets.Redact(w)
		}
		ch <- line{r: r}
	}()
	if timeout <= 0 {
		l := <-ch
		return l.r, l.err
	}
	select {
	case l := <-ch:
		return l.r, l.err
	case <-time.After(timeout):
		return Reply{}, fmt.Errorf("%s did not answer within %s", p, timeout)
	}
}

// died describes a shard whose output ended.
func (p *proc) died() error {
	if p.p == nil {
		why := "closed by the shard"
		if err := p.out.Err(); err != nil {
			why = err.Error()
		}
		return fmt.Errorf("shard %d (%s): link lost: %s", p.i, p.addr, why)
	}
	select {
	case <-p.p.Done():
	case <-time.After(2 * time.Second):
	}
	tail := strings.TrimSpace(p.secrets.Redact(p.p.Tail(600))) // launch redacted it; a tail may begin mid-form
	if tail != "" {
		tail = ": " + strings.ReplaceAll(tail, "\n", " | ")
	}
	return fmt.Errorf("shard %d (pid %d) %s%s", p.i, p.p.Pid, p.p.ExitReason(), tail)
}

// name is how figures name the shard: a remote shard's address, else
// "shard N".
func (p *proc) name() string {
	if p.p == nil && p.addr != "" {
		return p.addr
	}
	return fmt.Sprintf("shard %d", p.i)
}

func (p *proc) String() string {
	if p.p == nil {
		return fmt.Sprintf("shard %d (%s)", p.i, p.addr)
	}
	return fmt.Sprintf("shard %d (pid %d)", p.i, p.p.Pid)
}
