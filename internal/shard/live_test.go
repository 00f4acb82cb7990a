package shard

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/hold"
)

// TestGroupLiveConnections: over shards, a phase's live counts say the
// connections opened and open, and the open ones follow drops mid-hold
// as the shards' progress lines bring them.
func TestGroupLiveConnections(t *testing.T) {
	testenv.Slow(t, "3 s: live counts across two shards")
	srv := newDropServer(t)
	g := startGroup(t, srv, 2, false)
	pr := &client.Progress{Live: &client.Live{}}
	connect(t, &scenarios.Env{Driver: g, Progress: pr}, 20)
	if s := pr.Live.Snapshot(); s.Connects != 20 || s.Open != 20 || s.ConnectFailed.Total() != 0 {
		t.Errorf("connect: connects %d, open %d, failures %v; want 20, 20, none", s.Connects, s.Open, s.ConnectFailed)
	}
	if sh := pr.Live.Shards(); len(sh) != 2 || sh[0].Connects != 10 || sh[1].Open != 10 {
		t.Errorf("connect's shards %+v, want 10 each", sh)
	}
	held := &client.Progress{Live: &client.Live{}}
	done := make(chan error, 1)
	go func() {
		_, err := g.Run(t.Context(), &hold.Params{Duration: units.Duration(3 * time.Second)}, held)
		done <- err
	}()
	waitFor(t, func() bool { s := held.Live.Snapshot(); return s.HasOpen && s.Open == 20 }, "the hold's 20 open")
	srv.drop(4)
	waitFor(t, func() bool { return held.Live.Snapshot().Open == 16 }, "the drops on the shards' progress lines")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := held.Live.Snapshot(); s.Open != 16 || s.Connects != 0 {
		t.Errorf("hold: open %d, connects %d; want 16, 0", s.Open, s.Connects)
	}
}

// TestGroupLiveRefused: connections given up on each shard come to the
// orchestrator by reason.
func TestGroupLiveRefused(t *testing.T) {
	closed := testserver.ClosedAddr(t)
	g := startGroupAt(t, closed, 2, false)
	pr := &client.Progress{Live: &client.Live{}}
	res, err := g.Run(t.Context(), &client.ConnectParams{Connections: 20, Concurrency: 20, Retries: 1, Timeout: units.Duration(5 * time.Second)}, pr)
	if err != nil || res.(*client.ConnectResult).Failed != 20 {
		t.Fatalf("connect: %+v %v", res, err)
	}
	s := pr.Live.Snapshot()
	if s.ConnectFailed[client.ConnectRefused] != 20 || s.ConnectFailed.Total() != 20 || s.Connects != 0 {
		t.Errorf("merged: failures %v, connects %d; want 20 refused", s.ConnectFailed, s.Connects)
	}
	for _, sh := range pr.Live.Shards() {
		if sh.ConnectFailed[client.ConnectRefused] != 10 {
			t.Errorf("shard %s: failures %v, want 10 refused", sh.Name, sh.ConnectFailed)
		}
	}
}
