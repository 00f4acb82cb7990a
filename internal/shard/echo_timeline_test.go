package shard

import (
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/scenarios/echo"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// TestGroupEchoTimeline: an echo phase over two shards (each with its
// loops) that lasts more than a second merges into one timeline whose
// counts add up exactly to the phase's (messages sent, echoes received)
// and whose worst second's maximum is the phase's maximum latency.
func TestGroupEchoTimeline(t *testing.T) {
	testenv.Slow(t, "2 s: a paced echo timeline across shards")
	slow := testserver.Start(t, testserver.Options{Delay: 4 * time.Millisecond}) // about 250 echoes/s per connection
	g := startGroup(t, &dropServer{Server: slow}, 2, false)
	env := &scenarios.Env{Driver: g, Progress: &client.Progress{}}
	connect(t, env, 4)
	const total = 1400 // 4 connections at <= 250/s each: more than a second
	res, err := g.Run(t.Context(), &echo.Params{Total: total, Concurrency: 4, Payload: new(units.Size(64)), Warmup: 40, Verify: new(true)}, env.Progress)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*echo.Result)
	if r.Success != total || r.Failed != 0 {
		t.Fatalf("echoes %d ok %d failed (%v)", r.Success, r.Failed, r.Errors)
	}
	if len(r.Seconds) < 2 {
		t.Fatalf("timeline of %d seconds over %v, want >= 2", len(r.Seconds), r.Used)
	}
	var sent, recv int64
	var worst time.Duration
	for i, s := range r.Seconds {
		sent += s.Sent
		recv += s.Recv
		worst = max(worst, s.Max)
		if s.Recv > 0 && (s.P50 <= 0 || s.P50 > s.P99 || s.P99 > s.Max) {
			t.Errorf("second %d: %+v", i, s)
		}
		if s.Late != 0 {
			t.Errorf("second %d: late %d in an echo phase", i, s.Late)
		}
	}
	if sent != total || recv != total {
		t.Errorf("timeline: %d sent, %d received, want %d each", sent, recv, total)
	}
	if want := time.Duration(r.Latency.Max()); worst != want {
		t.Errorf("worst second's max %v, phase max %v", worst, want)
	}
	if !strings.Contains(slow.URL, "127.0.0.1") {
		t.Errorf("not loopback: %s", slow.URL)
	}
}
