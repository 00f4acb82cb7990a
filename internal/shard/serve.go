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
)

// ProgressInterval is how often a shard reports progress while a phase runs.
const ProgressInterval = 250 * time.Millisecond

// Serve is the shard side: it answers the orchestrator's requests from in
// until "close" or EOF, writing replies to out. It opens its client with
// opts when an "options" request (which adds the handshake, TLS and
// compression options) arrives, or at the first phase without one. A
// "cancel" line stops the running phase, which then replies with what it
// measured.
func Serve(ctx context.Context, opts client.Options, in io.Reader, out io.Writer) error {
	var c *client.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	var wmu sync.Mutex
	enc := json.NewEncoder(out)
	send := func(r Reply) error {
		wmu.Lock()
		defer wmu.Unlock()
		return enc.Encode(r)
	}
	if err := send(Reply{Op: "ready", Ready: true, Pid: os.Getpid()}); err != nil {
		return err
	}

	reqs := make(chan Request)
	readErr := make(chan error, 1)
	go func() {
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
		readErr <- sc.Err() // nil at EOF: the orchestrator went away
	}()

	var (
		running  bool
		cancel   context.CancelFunc = func() {}
		finished                    = make(chan Reply, 1)
	)
	defer func() { cancel() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			cancel()
			if running {
				// Best effort: the orchestrator has stopped writing, it
				// may still read the stopped phase's reply.
				_ = send(<-finished)
			}
			return err
		case reply := <-finished:
			// The reply goes out only now, with the phase marked done: the
			// orchestrator may send the next request as soon as it reads it.
			running = false
			if err := send(reply); err != nil {
				return err
			}
		case r := <-reqs:
			switch r.Op {
			case "ping": // a remote orchestrator's heartbeat: the link is up
				continue
			case "cancel":
				cancel()
				continue
			case "close":
				cancel()
				if running {
					// Best effort, as above: closing matters more.
					_ = send(<-finished)
				}
				return nil
			}
			if running {
				return fmt.Errorf("request %q while a phase runs", r.Op)
			}
			if r.Op == "options" {
				reply := Reply{Op: "options"}
				switch {
				case c != nil:
					reply.Err = "options after the client was opened"
				case r.Options == nil:
					reply.Err = "options request without options"
				default:
					applyOptions(&opts, r.Options)
					var err error
					if c, err = client.New(opts); err != nil {
						c = nil
						reply.Err = err.Error()
					}
				}
				if err := send(reply); err != nil {
					return err
				}
				continue
			}
			if c == nil {
				var err error
				if c, err = client.New(opts); err != nil {
					c = nil
					if err := send(Reply{Op: r.Op, Kind: r.Kind, Err: err.Error()}); err != nil {
						return err
					}
					continue
				}
			}
			pctx, stop := context.WithCancel(ctx)
			cancel = stop
			running = true
			go func(c *client.Client) { finished <- runPhase(pctx, c, r, send) }(c)
		}
	}
}

// runPhase runs one request, sends its progress, and returns its reply.
func runPhase(ctx context.Context, c *client.Client, r Request, send func(Reply) error) Reply {
	pr := &client.Progress{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				// A failed progress write shows up again on the reply.
				_ = send(Reply{Op: "progress", Done: pr.Done.Load(), Total: pr.Total.Load()})
			}
		}
	}()
	reply := Reply{Op: r.Op, Kind: r.Kind}
	var err error
	if r.Op != "run" {
		err = fmt.Errorf("unknown request %q", r.Op)
	} else {
		var p client.Params
		if p, err = client.DecodeParams(r.Kind, r.Params); err == nil {
			var res client.Result
			if !r.recv.IsZero() {
				reply.Delay = time.Since(r.recv)
			}
			// A phase cut short still replies with what it measured.
			res, err = c.Run(ctx, p, pr)
			if res != nil {
				var werr error
				if reply.Result, werr = json.Marshal(res); werr != nil && err == nil {
					err = werr
				}
			}
		}
	}
	close(stop)
	wg.Wait()
	if err != nil {
		reply.Err = err.Error()
	}
	reply.Conns = c.Conns()
	return reply
}
