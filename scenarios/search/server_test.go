package search_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/report"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/rate"
	"github.com/wsplan/wsplan/scenarios/search"
)

// slowServer is a gorilla/websocket echo server on 127.0.0.1; with every
// > 0, the every-th message (counted over all connections) holds a lock
// that every echo takes for pause: the whole server stalls, as one with a
// stop-the-world pause would, so it carries at most every/pause messages
// per second.
type slowServer struct {
	every int64
	pause time.Duration

	mu  sync.Mutex
	srv *testserver.Server
}

func (s *slowServer) start(t *testing.T) string {
	t.Helper()
	s.srv = testserver.Start(t, testserver.Options{Reply: func(id int64, _ int, _ []byte) testserver.Action {
		s.mu.Lock()
		if s.every > 0 && id%s.every == 0 {
			time.Sleep(s.pause)
		}
		s.mu.Unlock()
		return testserver.Echo
	}})
	return s.srv.Addr()
}

// runSearch runs a search over 50 connections against srv with a real client
// (in this process, one event loop) and returns its outcome.
func runSearch(t *testing.T, srv *slowServer) scenarios.Outcome {
	t.Helper()
	addr := srv.start(t)
	defer srv.srv.Close()
	c, err := client.New(client.Options{Targets: []string{addr}, NoDelay: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	env := &scenarios.Env{Driver: c, Progress: &client.Progress{}}
	if r, err := c.Connect(t.Context(), client.ConnectParams{Connections: 50, Concurrency: 50, Timeout: units.Duration(5 * time.Second)}, env.Progress); err != nil || r.Success != 50 {
		t.Fatalf("connect: %+v %v", r, err)
	}
	s := &search.Phase{Start: 250, Max: 4000, Tolerance: 0.25, SLO: `p99 < duration("250ms") && lost == 0`, StepDuration: units.Duration(time.Second), Settle: units.Duration(200 * time.Millisecond), Send: rate.Send{Drain: units.Duration(time.Second)}}
	ctx := scenarios.Context{Conns: 50}
	scenarios.Defaults(s, ctx)
	if errs := scenarios.Check(s, ctx); len(errs) != 0 {
		t.Fatal(errs)
	}
	out, err := s.Run(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A server that stalls 50 ms every 25th message carries at most 500
// messages/s: the search finds a capacity well below the same server's
// without the stalls, which holds the SLO up to max (at least to 2,000 on
// a loaded host), and below twice the
// ceiling (at 1,000 messages/s its queue grows by 500 a second: latency
// over a second by the end of a step). The SLO is loose (p99 < 250 ms) so
// that a loaded host does not fail the normal server.
func TestSearchFindsSlowServer(t *testing.T) {
	testenv.Slow(t, "two searches against real servers, about 15 s")
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	// The normal server should hold the SLO to max (4,000/s); a loaded
	// host can fail a step of it, so it gets three tries to show it holds
	// at least 2,000/s: four times the slowed server's ceiling.
	var normal scenarios.Outcome
	for try := 1; try <= 3; try++ {
		if normal = runSearch(t, &slowServer{}); normal.Metrics.Float("capacity") >= 2000 {
			break
		}
		t.Logf("try %d: normal server capacity %v (%s): the host is loaded, trying again", try, normal.Metrics.Float("capacity"), normal.Stop)
	}
	slow := runSearch(t, &slowServer{every: 25, pause: 50 * time.Millisecond})
	var run result.Run
	for _, o := range []struct {
		name string
		out  scenarios.Outcome
	}{{"normal", normal}, {"slowed", slow}} {
		run.Results = append(run.Results, result.Result{Server: o.name, Phase: "search", Kind: "search", OK: !o.out.Failed,
			Error: o.out.Error, Warnings: o.out.Warnings, Metrics: o.out.Metrics, Steps: o.out.Steps, Stop: o.out.Stop})
	}
	var b strings.Builder
	if err := report.Tables(&b, &run, nil, report.FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())

	nc, sc := normal.Metrics.Float("capacity"), slow.Metrics.Float("capacity")
	if nc < 2000 {
		t.Errorf("normal server: capacity %v, stop %q; want 4000 (max reached), at least 2000", nc, normal.Stop)
	}
	if !(sc > 0 && sc < 1000 && sc < nc) {
		t.Errorf("slowed server: capacity %v (stop %q), want in (0, 1000): below twice its ceiling and below the normal server's %v", sc, slow.Stop, nc)
	}
	failed := false
	for _, st := range slow.Steps {
		failed = failed || st.Verdict == search.VerdictFail
	}
	if !failed || !strings.HasPrefix(slow.Stop, "slo failed at ") {
		t.Errorf("slowed server: no failing step, stop %q", slow.Stop)
	}
}
