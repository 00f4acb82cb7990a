package shard

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/hold"
)

// TestGroupPeerCloses: the connections the server ends on each shard come
// to the orchestrator merged, with when: a few dropped, then the rest at
// once when the server dies; none before.
func TestGroupPeerCloses(t *testing.T) {
	srv := newDropServer(t)
	g := startGroup(t, srv, 2, false)
	connect(t, &scenarios.Env{Driver: g}, 20)
	if p := g.PeerCloses(); p.N != 0 {
		t.Fatalf("after connecting: %+v, want none", p)
	}
	// Each run's replies bring the shards' counts: hold until they tell.
	holdUntil := func(what string, cond func(client.PeerCloses) bool) client.PeerCloses {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, err := g.Run(t.Context(), &hold.Params{Duration: units.Duration(100 * time.Millisecond)}, nil); err != nil {
				t.Fatal(err)
			}
			p := g.PeerCloses()
			if cond(p) {
				return p
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: %+v", what, p)
			}
		}
	}
	srv.drop(4)
	if p := holdUntil("4 drops", func(p client.PeerCloses) bool { return p.N >= 4 }); p.N != 4 || p.First == 0 || p.Last < p.First {
		t.Fatalf("after 4 drops: %+v, want 4", p)
	}
	srv.Close()
	p := holdUntil("the death", func(p client.PeerCloses) bool { return p.N >= 20 })
	n, span := p.Burst()
	if p.N != 20 || n < 16 || span > client.PeerWindow {
		t.Errorf("after the server's death: %d closes, %d within %v; want 20, at least 16 within %v", p.N, n, span, client.PeerWindow)
	}
	if g.Conns() != 0 {
		t.Errorf("%d connections open after the death", g.Conns())
	}
}
