package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/secret"
)

// Spec describes the shard processes of one server's run.
type Spec struct {
	Exe     string         // the wsplan binary; shards run `Exe shard ...`
	N       int            // number of shards, >= 1
	Client  client.Options // what every shard's client gets, but SourceAddrs
	Sources [][]string     // source addresses of shard i (may be empty)
	CPUs    []int          // CPUs the shards are pinned to
	LogDir  string         // shard i logs to LogDir/<Name>-shard-i.log; "" = memory only
	Name    string         // server name, for log files and messages
	Ready   time.Duration  // how long a shard may take to start; default 10s
	Grace   time.Duration  // SIGTERM → SIGKILL on Close; default 3s
	// Secrets are the plan's: a shard is given them to do its job, and
	// they are masked in what it sends back (errors, warnings) and in its
	// log. nil masks nothing.
	Secrets *secret.Set
}

// Group is a set of shard processes driven as one client; it implements the
// engine's Driver.
type Group struct {
	shards  []*proc
	grace   time.Duration
	weights []int                 // remote: how the first phase splits (client.weights or the shards' hosts)
	skew    time.Duration         // the last phase's start skew
	parts   []client.Result       // the last phase's result of each shard
	rc      client.ReconnectStats // the last phase's reconnects, over the shards
	peer    []client.PeerCloses   // each shard's closes by the server so far (its latest reply's)
	ledger  ledger                // every shard's own cost of every phase (CostsSince)
	stop    chan struct{}         // remote: ends the heartbeats
	wg      sync.WaitGroup
}

// Start starts the shards and waits until each has opened its client.
func Start(s Spec) (*Group, error) {
	if s.N < 1 {
		return nil, fmt.Errorf("shards: need at least 1, got %d", s.N)
	}
	if s.Ready == 0 {
		s.Ready = 10 * time.Second
	}
	if s.Grace == 0 {
		s.Grace = 3 * time.Second
	}
	g := &Group{grace: s.Grace}
	for i := range s.N {
		p, err := startOne(s, i)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.shards = append(g.shards, p)
	}
	// Wait for every ready line.
	errs := make(chan error, len(g.shards))
	for _, p := range g.shards {
		go func() {
			r, err := p.read(s.Ready)
			if err == nil && !r.Ready {
				err = fmt.Errorf("unexpected first line %+v", r)
			}
			errs <- err
		}()
	}
	var all []error
	for range g.shards {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	if len(all) > 0 {
		g.Close()
		return nil, errors.Join(all...)
	}
	// The handshake, TLS and compression options go over stdin (header
	// values may be secrets); each shard opens its client with them.
	for _, p := range g.shards {
		go func() {
			if err := p.send(Request{Op: "options", Options: wireOptions(s.Client)}); err != nil {
				errs <- p.died()
				return
			}
			r, err := p.read(s.Ready)
			if err == nil && r.Err != "" {
				err = fmt.Errorf("shard %d: %s", p.i, r.Err)
			}
			errs <- err
		}()
	}
	for range g.shards {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	if len(all) > 0 {
		g.Close()
		return nil, errors.Join(all...)
	}
	return g, nil
}

// Pids returns the shard processes' pids, for CPU and memory sampling.
// Remote shards run on other hosts and have none here.
func (g *Group) Pids() []int {
	out := make([]int, 0, len(g.shards))
	for _, p := range g.shards {
		if p.p != nil {
			out = append(out, p.p.Pid)
		}
	}
	return out
}

// Parts returns the last phase's result of each shard before they were
// merged (nil for a shard that had nothing to do or sent none).
func (g *Group) Parts() []client.Result { return g.parts }

// StartSkew is the last phase's start skew: the spread of the moments the
// shards started it, each placed on the orchestrator's clock as the
// request's send time + half the link's round trip + the shard's delay
// between reading the request and starting (so hosts' clocks need no
// sync). 0 for a single shard.
func (g *Group) StartSkew() time.Duration { return g.skew }

// Conns returns the open connections over all shards.
func (g *Group) Conns() int {
	n := 0
	for _, p := range g.shards {
		n += p.conns
	}
	return n
}

// Close stops every shard: a "close" request, then SIGTERM/SIGKILL of its
// process group if it does not exit.
func (g *Group) Close() error {
	var errs []error
	if g.stop != nil {
		close(g.stop)
		g.stop = nil
		g.wg.Wait()
	}
	for _, p := range g.shards {
		// A shard that already died cannot read: its exit is what matters.
		_ = p.send(Request{Op: "close"})
		p.in.Close()
	}
	for _, p := range g.shards {
		if p.p == nil {
			continue // a remote shard closes its client when its link ends
		}
		select {
		case <-p.p.Done():
		case <-time.After(g.grace):
		}
		if err := p.p.Stop(g.grace); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", p.i, err))
		}
	}
	return errors.Join(errs...)
}

// phase sends one request per shard and collects the replies, forwarding
// progress to pr and a cancel to every shard when ctx ends. A shard that
// dies fails the phase: the others are cancelled and their replies drained.
func (g *Group) phase(ctx context.Context, reqs []Request, pr *client.Progress) ([]Reply, error) {
	replies := make([]Reply, len(g.shards))
	prog := &progressSum{pr: pr, done: make([]int64, len(g.shards)), total: make([]int64, len(g.shards))}
	type outcome struct {
		i   int
		err error
	}
	results := make(chan outcome, len(g.shards))
	for i, p := range g.shards {
		if reqs[i].Op == "" { // nothing for this shard to do
			results <- outcome{i, nil}
			continue
		}
		p.sent = time.Now()
		if err := p.send(reqs[i]); err != nil {
			results <- outcome{i, p.died()}
			continue
		}
		go func() {
			for {
				r, err := p.read(0)
				if err != nil {
					results <- outcome{i, err}
					return
				}
				if r.Op == "progress" {
					prog.add(i, r, p.name())
					continue
				}
				replies[i] = r
				p.conns = r.Conns
				results <- outcome{i, nil}
				return
			}
		}()
	}
	var first error
	cancelled := false
	cancelAll := func() {
		if cancelled {
			return
		}
		cancelled = true
		for _, p := range g.shards {
			// A dead shard cannot be cancelled; its error is reported.
			_ = p.send(Request{Op: "cancel"})
		}
	}
	for left := len(g.shards); left > 0; {
		select {
		case o := <-results:
			left--
			if o.err != nil {
				g.shards[o.i].conns = 0
				if first == nil {
					first = o.err
				}
				cancelAll()
			}
		case <-ctx.Done():
			cancelAll()
			ctx = context.Background() // keep draining
		}
	}
	return replies, first
}

// progressSum adds up the shards' progress lines into one Progress.
type progressSum struct {
	pr          *client.Progress // nil: none
	mu          sync.Mutex
	done, total []int64
}

// add takes shard i's progress line.
func (s *progressSum) add(i int, r Reply, name string) {
	s.mu.Lock()
	s.done[i], s.total[i] = r.Done, r.Total
	var sum, all int64
	for j := range s.done {
		sum += s.done[j]
		all += s.total[j]
	}
	s.mu.Unlock()
	if s.pr == nil {
		return
	}
	s.pr.Done.Store(sum)
	s.pr.Total.Store(all)
	if s.pr.Live != nil && r.Live != nil {
		s.pr.Live.SetShard(i, name, *r.Live)
	}
}

// Run runs one phase of any kind over the shards: the kind's Split
// divides it by the shards' open connections, every shard runs its part,
// and the kind's Merge adds up the results. Every shard's error is
// returned (joined, each naming its shard), and a shard's partial result
// is merged even when it failed or was cut short, so the phase keeps what
// it measured.
func (g *Group) Run(ctx context.Context, p client.Params, pr *client.Progress) (client.Result, error) {
	if err := client.Ready(p); err != nil {
		return nil, err
	}
	w := make([]int, len(g.shards))
	open := 0
	for i, s := range g.shards {
		w[i] = s.conns
		open += s.conns
	}
	if open == 0 && g.weights != nil {
		w = g.weights // nothing open yet: the plan's or the hosts' weights
	}
	reqs := make([]Request, len(g.shards))
	for i, part := range p.Split(w) {
		if part == nil {
			continue
		}
		b, err := json.Marshal(part)
		if err != nil {
			return nil, fmt.Errorf("shards: %s params: %w", client.KindName(p), err)
		}
		reqs[i] = Request{Op: "run", Kind: client.KindName(p), Params: b, Live: pr != nil && pr.Live != nil}
	}
	g.progressStart(pr)
	replies, err := g.phase(ctx, reqs, pr)
	g.skew = g.startSkew(reqs, replies)
	var errs []error
	switch {
	case err != nil: // a shard died; the others were canceled because of it
		errs = append(errs, err)
	case ctx.Err() != nil:
		errs = append(errs, ctx.Err()) // as an in-process client returns it
	}
	var res client.Result
	g.parts = make([]client.Result, len(replies))
	g.rc = client.ReconnectStats{}
	for i, r := range replies {
		g.account(i, r, pr)
		// A cancellation the group sent is said once above, not per shard.
		if r.Err != "" && !(len(errs) > 0 && r.Err == context.Canceled.Error()) {
			errs = append(errs, fmt.Errorf("shard %d: %s", i, r.Err))
		}
		if len(r.Result) == 0 {
			continue
		}
		x, derr := client.DecodeResult(r.Kind, r.Result)
		if derr != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", i, derr))
			continue
		}
		if y, derr := client.DecodeResult(r.Kind, r.Result); derr == nil {
			g.parts[i] = y // a copy: Merge adds into x
		}
		if res == nil {
			res = x
		} else {
			res.Merge(x)
		}
	}
	if pr != nil && pr.Live != nil {
		pr.Live.ShardRunsDone() // a phase of several runs counts on
	}
	if res == nil {
		res = client.NewResult(p)
	}
	return res, errors.Join(errs...)
}

// account keeps what shard i's reply r says beside its result: its
// reconnects, the server's closes, its own cost, its final live counts.
func (g *Group) account(i int, r Reply, pr *client.Progress) {
	if r.Reconnect != nil {
		g.rc.Merge(*r.Reconnect)
	}
	if r.PeerCloses != nil {
		for len(g.peer) <= i {
			g.peer = append(g.peer, client.PeerCloses{})
		}
		g.peer[i] = *r.PeerCloses
	}
	if r.Cost != nil {
		c := *r.Cost
		c.Shard = g.shards[i].name()
		g.ledger.append(c)
	}
	if r.Live != nil && pr != nil && pr.Live != nil {
		pr.Live.SetShard(i, g.shards[i].name(), *r.Live) // the final counts
	}
}

// progressStart readies pr for a run's progress lines: the shards bring
// their totals, and until they do Live has their open connections.
func (g *Group) progressStart(pr *client.Progress) {
	if pr == nil {
		return
	}
	pr.Done.Store(0)
	pr.Total.Store(0)
	if pr.Live != nil {
		for i, s := range g.shards {
			pr.Live.SetShardOpen(i, s.name(), int64(s.conns))
		}
	}
}

// Reconnects returns what the shards' reconnectors did over the last
// phase (client.Client.Reconnects, merged).
func (g *Group) Reconnects() client.ReconnectStats { return g.rc }

// PeerCloses returns the connections the server closed or reset, over
// the shards, as their last replies counted them
// (client.Client.PeerCloses, merged).
func (g *Group) PeerCloses() client.PeerCloses {
	var p client.PeerCloses
	for _, o := range g.peer {
		p.Merge(o)
	}
	return p
}

// startSkew places each shard's phase start on the orchestrator's clock
// and returns their spread (see StartSkew).
func (g *Group) startSkew(reqs []Request, replies []Reply) time.Duration {
	var first, last time.Time
	for i, p := range g.shards {
		if reqs[i].Op == "" || replies[i].Op == "" {
			continue
		}
		t := p.sent.Add(p.rtt/2 + replies[i].Delay)
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if last.IsZero() || t.After(last) {
			last = t
		}
	}
	return last.Sub(first)
}
