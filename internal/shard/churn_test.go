package shard

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/churn"
)

// TestGroupChurn: the churn kind runs over two shards, its rate split by
// their connections and its results merged by its own contract: every
// cycle of both shards counted once, each reopened, the set whole.
func TestGroupChurn(t *testing.T) {
	testenv.Slow(t, "1 s: churn across two shards")
	srv := newDropServer(t)
	g := startGroup(t, srv, 2, false)
	env := &scenarios.Env{Driver: g, Progress: &client.Progress{}}
	connect(t, env, 40)
	p := &churn.Phase{Params: churn.Params{Duration: units.Duration(time.Second), Rate: 100, Close: churn.CloseMixed, Ping: units.Duration(100 * time.Millisecond)}}
	scenarios.Defaults(p, scenarios.Context{Conns: 40})
	if errs := scenarios.Check(p, scenarios.Context{Conns: 40}); len(errs) > 0 {
		t.Fatal(errs)
	}
	out, err := p.Run(t.Context(), env)
	if err != nil || out.Failed {
		t.Fatalf("churn: %v %q", err, out.Error)
	}
	m := out.Metrics
	cycles := m.Int("cycles")
	if cycles < 95 || cycles > 100 || m.Int("clean")+m.Int("resets") != cycles || m.Int("failed") != 0 {
		t.Errorf("metrics %v: want 100 cycles, each closed and reopened", m)
	}
	if m.Int("conns") != 40 || m.Int("alive") != 40 || g.Conns() != 40 || m.Dur("p99") <= 0 || m.Int("pongs") == 0 {
		t.Errorf("metrics %v, %d open: want the 40 kept, handshake latency and pongs", m, g.Conns())
	}
	if got := env.Progress.Done.Load(); got <= 0 || got > cycles {
		t.Errorf("progress %d, cycles %d", got, cycles) // the last progress line may lag the result
	}
	if srv.Conns() != 40+cycles {
		t.Errorf("server saw %d upgrades, want %d", srv.Conns(), 40+cycles)
	}
}
