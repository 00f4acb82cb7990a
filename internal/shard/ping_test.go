package shard

import (
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/ping"
)

// TestGroupPing: the ping kind runs over two shards, split and merged by
// its own contract.
func TestGroupPing(t *testing.T) {
	srv := newDropServer(t)
	g := startGroup(t, srv, 2, false)
	env := &scenarios.Env{Driver: g, Progress: &client.Progress{}}
	connect(t, env, 20)
	p := &ping.Phase{Params: ping.Params{Total: 3000}}
	scenarios.Defaults(p, scenarios.Context{Conns: 20})
	out, err := p.Run(t.Context(), env)
	if err != nil || out.Failed {
		t.Fatalf("ping: %v %q", err, out.Error)
	}
	if m := out.Metrics; m.Int("success") != 3000 || m.Int("total") != 3000 || m.Dur("p50") <= 0 || m.Int("concurrency") != 20 {
		t.Errorf("metrics %v", m)
	}
	if env.Progress.Done.Load() > 3000 {
		t.Errorf("progress %d of 3000", env.Progress.Done.Load())
	}
}
