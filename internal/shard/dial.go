package shard

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/secret"
	"github.com/wsplan/wsplan/sysctl"
)

// RemoteSpec describes the remote shards of one server's run: processes
// of `wsplan shard --listen` on other hosts.
type RemoteSpec struct {
	Addrs   []string       // host:port of each shard
	Weights []int          // how the first phase splits; nil = DefaultWeight of each shard's host
	Client  client.Options // what every shard's client gets (Loops 0 = the shard's CPUs)
	TLS     *tls.Config    // OrchestratorTLS
	// IdleExit is how long a shard waits for the next orchestrator after
	// this one leaves before it exits; 0 = the shard's own setting.
	IdleExit time.Duration
	Ready    time.Duration // how long a shard may take to answer and open its client; default HandshakeTimeout
	Link     time.Duration // link timeout; default LinkTimeout
	// DialContext opens the TCP link to a shard; default a net.Dialer's
	// (a test dials from another network namespace with it).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Secrets are masked in what the shards send back (Spec.Secrets).
	Secrets *secret.Set
}

// Hello is what a remote shard says about itself when it is reached.
type Hello struct {
	Addr string
	Pid  int
	Host sysctl.HostFacts
	RTT  time.Duration // the link's round trip, measured on the first exchange
}

// DefaultWeight is a shard's share of connections when the plan gives no
// weights: 1,000 per CPU it may run on, at most its fd hard limit less
// sysctl.FDSlack (whichever is known; 1 when nothing is).
func DefaultWeight(h sysctl.HostFacts) int {
	w := 1000 * len(h.OnlineCPUs)
	if h.NoFileHard > sysctl.FDSlack {
		fds := int(min(h.NoFileHard-sysctl.FDSlack, 1<<30))
		if w == 0 || fds < w {
			w = fds
		}
	}
	return max(1, w)
}

// probeEnd bounds Probe's wait for the shard to end the probe's session.
const probeEnd = 2 * time.Second

// Probe reaches the shard at addr, reads its hello and ends the session:
// preflight learns each host's facts before anything starts.
func Probe(ctx context.Context, addr string, cfg *tls.Config, idleExit time.Duration) (Hello, error) {
	p, h, err := dialOne(ctx, -1, addr, cfg, Request{Op: "probe", IdleExit: idleExit}, HandshakeTimeout, LinkTimeout, nil)
	if p != nil {
		// The shard ends a probe's session after its hello: wait for that
		// end, so that the run's own dial right after finds it free.
		_, _ = p.read(probeEnd)
		p.in.Close()
	}
	return h, err
}

// Dial reaches every shard, opens its client and starts the heartbeats.
// A shard that cannot be reached, refuses (another orchestrator is
// connected, or the certificates differ) or cannot open its client fails
// Dial with its address; the shards reached are closed again.
func Dial(ctx context.Context, s RemoteSpec) (*Group, []Hello, error) {
	if len(s.Addrs) == 0 {
		return nil, nil, errors.New("remote shards: no addresses")
	}
	if s.Weights != nil && len(s.Weights) != len(s.Addrs) {
		return nil, nil, fmt.Errorf("remote shards: %d weights for %d shards", len(s.Weights), len(s.Addrs))
	}
	if s.Ready == 0 {
		s.Ready = HandshakeTimeout
	}
	if s.Link == 0 {
		s.Link = LinkTimeout
	}
	g := &Group{stop: make(chan struct{})}
	hellos := make([]Hello, len(s.Addrs))
	type dialed struct {
		i   int
		p   *proc
		h   Hello
		err error
	}
	ch := make(chan dialed, len(s.Addrs))
	for i, addr := range s.Addrs {
		go func() {
			opts := s.Client
			p, h, err := dialOne(ctx, i, addr, s.TLS, Request{Op: "open", Options: &opts, IdleExit: s.IdleExit}, s.Ready, s.Link, s.DialContext)
			if err == nil {
				p.secrets = s.Secrets
				var r Reply
				if r, err = p.read(s.Ready); err == nil && !r.Ready {
					err = fmt.Errorf("shard %d (%s): %s", i, addr, orUnexpected(r))
				}
			}
			ch <- dialed{i, p, h, err}
		}()
	}
	procs := make([]*proc, len(s.Addrs))
	var errs []error
	for range s.Addrs {
		d := <-ch
		procs[d.i], hellos[d.i] = d.p, d.h
		if d.err != nil {
			errs = append(errs, d.err)
		}
	}
	for _, p := range procs {
		if p != nil {
			g.shards = append(g.shards, p)
		}
	}
	if len(errs) > 0 {
		g.Close()
		return nil, hellos, errors.Join(errs...)
	}
	g.weights = s.Weights
	if g.weights == nil {
		g.weights = make([]int, len(hellos))
		for i, h := range hellos {
			g.weights[i] = DefaultWeight(h.Host)
		}
	}
	for _, p := range g.shards {
		g.wg.Add(1)
		go g.heartbeat(p, s.Link/4, g.stop)
	}
	return g, hellos, nil
}

func orUnexpected(r Reply) string {
	if r.Err != "" {
		return r.Err
	}
	return fmt.Sprintf("unexpected reply %+v", r)
}

// heartbeat tells a shard every interval that the orchestrator is alive,
// until stop closes. (stop is passed, not read from g: Close clears g.stop
// while the heartbeats still wait on it.)
func (g *Group) heartbeat(p *proc, every time.Duration, stop <-chan struct{}) {
	defer g.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if p.send(Request{Op: "ping"}) != nil {
				return // the phase's read reports the lost link
			}
		}
	}
}

// dialOne connects to one shard over TLS, sends first and reads its hello.
func dialOne(ctx context.Context, i int, addr string, cfg *tls.Config, first Request, ready, link time.Duration,
	dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*proc, Hello, error) {
	h := Hello{Addr: addr}
	fail := func(err error) error {
		if i < 0 { // a probe
			return fmt.Errorf("shard %s: %w", addr, err)
		}
		return fmt.Errorf("shard %d (%s): %w", i, addr, err)
	}
	dctx, cancel := context.WithTimeout(ctx, ready)
	defer cancel()
	if dial == nil {
		dial = (&net.Dialer{KeepAlive: link}).DialContext
	}
	raw, err := dial(dctx, "tcp", addr)
	if err != nil {
		return nil, h, fail(err)
	}
	c := tls.Client(raw, cfg)
	if err := c.HandshakeContext(dctx); err != nil {
		raw.Close()
		return nil, h, fail(err)
	}
	lc := &linkConn{Conn: c, timeout: ready}
	sc := bufio.NewScanner(lc)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	p := &proc{i: i, addr: addr, link: c, in: lc, out: sc}
	t0 := time.Now()
	if err := p.send(first); err != nil {
		c.Close()
		return nil, h, fail(err)
	}
	r, err := p.read(ready)
	if err == nil && r.Op != "hello" {
		err = fail(errors.New(orUnexpected(r)))
	}
	if err != nil {
		c.Close()
		return nil, h, err
	}
	p.rtt = max(0, time.Since(t0)-r.Delay)
	lc.timeout = link
	h.Pid, h.RTT = r.Pid, p.rtt
	if r.Host != nil {
		h.Host = *r.Host
	}
	return p, h, nil
}
