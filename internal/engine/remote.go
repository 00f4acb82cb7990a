package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/shard"
	"github.com/wsplan/wsplan/sysctl"
)

// remoteDriver reaches the plan's remote shards (client.remote) for one
// server: every shard opens a client with co (its own event loops when
// client.loops is 0, its own source addresses).
func (e *runner) remoteDriver(srv plan.Server, co client.Options) (Driver, error) {
	cfg, err := shard.OrchestratorTLS(e.plan.Client.Certs)
	if err != nil {
		return nil, err
	}
	co.SourceAddrs = nil
	co.Loops = e.plan.Client.Loops
	g, hellos, err := shard.Dial(context.Background(), shard.RemoteSpec{
		Addrs: e.plan.Client.Remote, Weights: e.plan.Client.Weights, Client: co, TLS: cfg,
		IdleExit: e.plan.Client.IdleExit.D(), Secrets: e.plan.Secrets,
	})
	if err != nil {
		return nil, fmt.Errorf("client.remote: %w", err)
	}
	var who []string
	for _, h := range hellos {
		who = append(who, fmt.Sprintf("%s (pid %d, %d CPUs, rtt %s)", h.Addr, h.Pid, len(h.Host.OnlineCPUs), h.RTT.Round(time.Microsecond)))
	}
	e.o.Notice("%s: %d remote client shards: %s", srv.Name, len(hellos), strings.Join(who, ", "))
	return g, nil
}

// RemoteShares returns each remote shard's share of n (connections): by
// the plan's weights, or by DefaultWeight of the hosts the shards reported.
func RemoteShares(p *plan.Plan, hosts []sysctl.HostFacts, n int) []int {
	w := p.Client.Weights
	if len(w) != len(hosts) {
		w = make([]int, len(hosts))
		for i, h := range hosts {
			w[i] = shard.DefaultWeight(h)
		}
	}
	total := 0
	for _, x := range w {
		total += x
	}
	out := make([]int, len(w))
	given := 0
	for i, x := range w {
		out[i] = n * x / max(1, total)
		given += out[i]
	}
	for i := 0; given < n && len(out) > 0; i = (i + 1) % len(out) {
		out[i]++
		given++
	}
	return out
}

// remotePreflight reaches every remote shard, learns its host (fd limit,
// port range, memory, CPUs) and applies the per-host checks to its share
// of the plan's connections. A shard that cannot be reached or refuses
// is an error naming it; the findings name their shard.
func remotePreflight(p *plan.Plan) ([]sysctl.Finding, error) {
	cfg, err := shard.OrchestratorTLS(p.Client.Certs)
	if err != nil {
		return nil, fmt.Errorf("%s: client.certs: %w", p.File, err)
	}
	hosts := make([]sysctl.HostFacts, len(p.Client.Remote))
	errs := make([]error, len(p.Client.Remote))
	done := make(chan struct{})
	for i, addr := range p.Client.Remote {
		go func() {
			defer func() { done <- struct{}{} }()
			h, err := shard.Probe(context.Background(), addr, cfg, p.Client.IdleExit.D())
			hosts[i] = h.Host
			if err != nil {
				errs[i] = fmt.Errorf("%s: client.remote[%d]: %w", p.File, i, err)
			}
		}()
	}
	for range p.Client.Remote {
		<-done
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	conns := Conns(p)
	shares := RemoteShares(p, hosts, conns)
	targets := p.Defaults.Ports
	for _, s := range p.Servers {
		if len(s.Addrs) > 0 {
			targets = min(targets, len(s.Addrs))
		}
	}
	var out []sysctl.Finding
	for i, h := range hosts {
		need := sysctl.Needs{
			Conns:            shares[i],
			ClientProcesses:  []sysctl.ClientNeed{{FDs: sysctl.ClientFDs(shares[i]), Conns: shares[i]}},
			Targets:          targets,
			MemPerConnClient: MemPerConnClient,
		}
		for _, f := range sysctl.Preflight(need, h) {
			if strings.Contains(f.What, "client process needs") {
				// Local shards are no fix on another host.
				f.Fix = "raise that host's hard limit (ulimit -Hn, limits.conf, or the container runtime's nofile), lower its share in client.weights, or add remote shards"
			}
			f.What = fmt.Sprintf("client.remote[%d] (%s): %s", i, p.Client.Remote[i], f.What)
			out = append(out, f)
		}
	}
	return out, nil
}

// startSkew is the remote shards' start skew of the phase just run (see
// shard.Group.StartSkew); 0 for a client on this host.
func startSkew(drv Driver) time.Duration {
	if g, ok := drv.(*shard.Group); ok && len(g.Pids()) == 0 {
		return g.StartSkew()
	}
	return 0
}
