package shard

import (
	"os"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/broadcast"
)

// newRoomServer is a gorilla broadcast server on the /broadcast
// convention: a message goes to every connection of its room.
func newRoomServer(t *testing.T) string {
	t.Helper()
	return testserver.Start(t, testserver.Options{Rooms: true}).Addr()
}

// TestGroupBroadcast: the broadcast kind over two shards; rooms span both
// (room_size 7 does not divide the shards' halves), so deliveries cross
// processes and the fanout table merges exactly. Its live counts add up
// over the kind's three runs (open, run, close), each of which the shards
// count from zero.
func TestGroupBroadcast(t *testing.T) {
	addr := newRoomServer(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Start(Spec{Exe: exe, N: 2, Client: client.Options{Targets: []string{addr}, Path: "/broadcast"}, Name: "test", Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	env := &scenarios.Env{Driver: g, Progress: &client.Progress{Live: &client.Live{}}}
	p := &broadcast.Phase{Params: broadcast.Params{Rooms: 3, RoomSize: 7, Rate: 20, Duration: units.Duration(500 * time.Millisecond)}}
	scenarios.Defaults(p, scenarios.Context{})
	if errs := scenarios.Check(p, scenarios.Context{}); len(errs) > 0 {
		t.Fatalf("check: %v", errs)
	}
	out, err := p.Run(t.Context(), env)
	if err != nil || out.Failed {
		t.Fatalf("broadcast: %v %q", err, out.Error)
	}
	// 3 publishers × 20/s × 0.5 s = 30 messages, × 7 receivers.
	m := out.Metrics
	if m.Int("published") != 30 || m.Int("deliveries") != 210 || m.Int("delivered") != 210 || m.Int("lost") != 0 || m.Int("incomplete") != 0 {
		t.Errorf("metrics %v", m)
	}
	if m.Dur("fanout_p99") <= 0 || m.Dur("fanout_max") < m.Dur("p50") || m.Dur("p99") <= 0 {
		t.Errorf("latency p50 %v p99 %v fanout p99 %v max %v", m.Dur("p50"), m.Dur("p99"), m.Dur("fanout_p99"), m.Dur("fanout_max"))
	}
	if n := g.Conns(); n != 0 {
		t.Errorf("%d connections left open after the phase", n)
	}
	if s := env.Progress.Live.Snapshot(); s.Sent != 30 || s.Recv != 210 || s.Connects != 21 || s.Open != 0 || s.Latency.Count != 210 {
		t.Errorf("live: sent %d, received %d, connects %d, open %d, latencies %d; want 30, 210, 21, 0, 210", s.Sent, s.Recv, s.Connects, s.Open, s.Latency.Count)
	}
}
