package shard

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/procstat"
)

// ProgressInterval is how often a shard reports progress while a phase
// runs; LiveInterval how often its progress carries live counts (when the
// orchestrator exports them).
const (
	ProgressInterval = 250 * time.Millisecond
	LiveInterval     = time.Second
)

// Serve is the shard side: it answers the orchestrator's requests from in
// until "close" or EOF, writing replies to out. It opens its client with
// opts when an "options" request (which adds the handshake, TLS and
// compression options) arrives, or at the first phase without one. A
// "cancel" line stops the running phase, which then replies with what it
// measured.
func Serve(ctx context.Context, opts client.Options, in io.Reader, out io.Writer) error {
	s := &server{opts: opts, enc: json.NewEncoder(out), cancel: func() {}, finished: make(chan Reply, 1)}
	defer s.close()
	if err := s.send(Reply{Op: "ready", Ready: true, Pid: os.Getpid()}); err != nil {
		return err
	}
	reqs := make(chan Request)
	readErr := make(chan error, 1)
	go readRequests(ctx, in, reqs, readErr)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			s.stopPhase() // the orchestrator has stopped writing
			return err
		case reply := <-s.finished:
			// The reply goes out only now, with the phase marked done: the
			// orchestrator may send the next request as soon as it reads it.
			s.running = false
			if err := s.send(reply); err != nil {
				return err
			}
		case r := <-reqs:
			if done, err := s.handle(ctx, r); done || err != nil {
				return err
			}
		}
	}
}

// server is one Serve: the client it opened and the phase it runs.
type server struct {
	opts     client.Options
	c        *client.Client
	wmu      sync.Mutex // serialises writes of enc
	enc      *json.Encoder
	running  bool
	cancel   context.CancelFunc // stops the running phase
	finished chan Reply         // the running phase's reply
}

func (s *server) send(r Reply) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.enc.Encode(r)
}

func (s *server) close() {
	s.cancel()
	if s.c != nil {
		s.c.Close()
	}
}

// stopPhase cancels the running phase and sends its reply, best effort:
// the orchestrator has stopped writing (or asked to close) but may still
// read the stopped phase's reply; closing matters more.
func (s *server) stopPhase() {
	s.cancel()
	if s.running {
		_ = s.send(<-s.finished)
	}
}

// readRequests decodes request lines from in onto reqs until EOF (nil on
// readErr: the orchestrator went away) or a bad line.
func readRequests(ctx context.Context, in io.Reader, reqs chan<- Request, readErr chan<- error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			readErr <- fmt.Errorf("bad request (%d bytes; not shown: an options line may hold secrets): %w", len(sc.Bytes()), err)
			return
		}
		r.recv = time.Now()
		select {
		case reqs <- r:
		case <-ctx.Done():
			return
		}
	}
	readErr <- sc.Err()
}

// handle answers one request; done reports that Serve should return.
func (s *server) handle(ctx context.Context, r Request) (done bool, err error) {
	switch r.Op {
	case "ping": // a remote orchestrator's heartbeat: the link is up
		return false, nil
	case "cancel":
		s.cancel()
		return false, nil
	case "close":
		s.stopPhase()
		return true, nil
	}
	if s.running {
		return true, fmt.Errorf("request %q while a phase runs", r.Op)
	}
	if r.Op == "options" {
		return false, s.send(s.options(r))
	}
	if s.c == nil {
		c, err := client.New(s.opts)
		if err != nil {
			return false, s.send(Reply{Op: r.Op, Kind: r.Kind, Err: err.Error()})
		}
		s.c = c
	}
	pctx, stop := context.WithCancel(ctx)
	s.cancel = stop
	s.running = true
	go func(c *client.Client) { s.finished <- runPhase(pctx, c, r, s.opts.Loops, s.send) }(s.c)
	return false, nil
}

// options opens the client with the options an "options" request adds.
func (s *server) options(r Request) Reply {
	reply := Reply{Op: "options"}
	switch {
	case s.c != nil:
		reply.Err = "options after the client was opened"
	case r.Options == nil:
		reply.Err = "options request without options"
	default:
		applyOptions(&s.opts, r.Options)
		c, err := client.New(s.opts)
		if err != nil {
			reply.Err = err.Error()
		} else {
			s.c = c
		}
	}
	return reply
}

// runPhase runs one request, sends its progress, and returns its reply
// with the shard's own cost over it (Cost).
func runPhase(ctx context.Context, c *client.Client, r Request, loops int, send func(Reply) error) Reply {
	m := startMeter(loops)
	pr := &client.Progress{}
	if r.Live {
		pr.Live = &client.Live{}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(ProgressInterval)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			case <-t.C:
				p := Reply{Op: "progress", Done: pr.Done.Load(), Total: pr.Total.Load()}
				if pr.Live != nil && n%int(LiveInterval/ProgressInterval) == 0 {
					p.Live = liveSnapshot(pr.Live)
				}
				// A failed progress write shows up again on the reply.
				_ = send(p)
			}
		}
	}()
	reply := Reply{Op: r.Op, Kind: r.Kind}
	err := runRequest(ctx, c, r, pr, &reply)
	close(stop)
	wg.Wait()
	if err != nil {
		reply.Err = err.Error()
	}
	reply.Conns = c.Conns()
	reply.Cost = m.stop()
	if pr.Live != nil {
		reply.Live = liveSnapshot(pr.Live) // the final counts
	}
	return reply
}

// runRequest runs a "run" request's phase on c, writing its result (also
// when cut short: a phase keeps what it measured) into reply.
func runRequest(ctx context.Context, c *client.Client, r Request, pr *client.Progress, reply *Reply) error {
	if r.Op != "run" {
		return fmt.Errorf("unknown request %q", r.Op)
	}
	p, err := client.DecodeParams(r.Kind, r.Params)
	if err != nil {
		return err
	}
	if !r.recv.IsZero() {
		reply.Delay = time.Since(r.recv)
	}
	res, err := c.Run(ctx, p, pr)
	if rs := c.Reconnects(); rs.Drops > 0 || rs.Reconnects > 0 || rs.Pending > 0 {
		reply.Reconnect = &rs
	}
	if pc := c.PeerCloses(); pc.N > 0 {
		reply.PeerCloses = &pc
	}
	if res != nil {
		var werr error
		if reply.Result, werr = json.Marshal(res); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// liveSnapshot is l's counts with this process's CPU time and memory.
func liveSnapshot(l *client.Live) *client.LiveSnapshot {
	s := l.Snapshot()
	if cpu, err := procstat.ProcessCPUTime(0); err == nil {
		s.CPUSeconds = cpu.Seconds()
	}
	s.RSS, _ = procstat.FS{}.RSS(0) // 0 when it cannot be read
	return &s
}
