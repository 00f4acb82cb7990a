package churn

import (
	"bufio"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/scenarios/echo"

	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// TestChurn: at a rate, connections close (a clean close handshake, a
// reset, or either) and their replacements open while the others keep
// pinging; every cycle is accounted for (closed one way, reopened), the
// set is as large at the end as at the start, and the server sees every
// connection that was closed go away. The live counts say the
// replacements opened and the set open.
func TestChurn(t *testing.T) {
	testenv.Slow(t, "6 s: churn with each close style")
	for _, how := range []string{CloseClean, CloseReset, CloseMixed} {
		t.Run(how, func(t *testing.T) {
			srv := testserver.Start(t, testserver.Options{})
			c := clienttest.NewClient(t, client.Options{Targets: []string{srv.Addr()}, Loops: 2})
			clienttest.MustConnect(t, c, 100)
			pr := &client.Progress{Live: &client.Live{}}
			res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(2 * time.Second), Rate: 100, Close: how, Ping: units.Duration(200 * time.Millisecond)}, pr)
			if err != nil {
				t.Fatal(err)
			}
			if res.Cycles < 190 || res.Cycles > 200 || res.Skipped != 0 || res.Stopped != "" {
				t.Errorf("%d cycles (%d skipped, stopped %q), want 200 at 100/s for 2s", res.Cycles, res.Skipped, res.Stopped)
			}
			if res.Connect.Success != res.Cycles || res.Connect.Failed != 0 || res.Connect.Latency.TotalCount() != res.Cycles {
				t.Errorf("replacements %+v for %d cycles", res.Connect, res.Cycles)
			}
			closes := res.Clean + res.Resets
			if closes != res.Cycles || res.CloseEOF != 0 || res.CloseTimeouts != 0 || len(res.CloseErrors) != 0 {
				t.Errorf("closes: %d clean, %d reset, %d eof, %d timeouts, %v; want %d", res.Clean, res.Resets, res.CloseEOF, res.CloseTimeouts, res.CloseErrors, res.Cycles)
			}
			switch how {
			case CloseClean:
				if res.Resets != 0 || res.CloseLatency.TotalCount() != res.Clean {
					t.Errorf("clean: %d resets, %d close latencies", res.Resets, res.CloseLatency.TotalCount())
				}
			case CloseReset:
				if res.Clean != 0 {
					t.Errorf("reset: %d clean", res.Clean)
				}
			case CloseMixed:
				if res.Clean < res.Cycles/4 || res.Resets < res.Cycles/4 {
					t.Errorf("mixed: %d clean, %d reset", res.Clean, res.Resets)
				}
			}
			if res.Conns != 100 || res.Alive != 100 || c.Conns() != 100 || res.Dropped != 0 {
				t.Errorf("conns %d → %d (client %d), dropped %d %v", res.Conns, res.Alive, c.Conns(), res.Dropped, res.Errors)
			}
			if res.Pings < 900 || res.Pongs+res.PingsCut != res.Pings || res.PingsCut > res.Cycles || res.PingLatency.TotalCount() != res.Pongs {
				t.Errorf("pings %d, pongs %d, cut %d, latencies %d", res.Pings, res.Pongs, res.PingsCut, res.PingLatency.TotalCount())
			}
			if pr.Done.Load() != res.Cycles || pr.Total.Load() != 200 {
				t.Errorf("progress %d/%d", pr.Done.Load(), pr.Total.Load())
			}
			if s := pr.Live.Snapshot(); s.Connects != res.Connect.Success || s.Open != 100 || s.ConnectFailed.Total() != 0 || s.Sent != res.Pings || s.Recv != res.Pongs {
				t.Errorf("live: %d opened, %d open, failures %v, pings %d/%d; want %d, 100, none, %d/%d", s.Connects, s.Open, s.ConnectFailed, s.Sent, s.Recv, res.Connect.Success, res.Pings, res.Pongs)
			}
			testenv.WaitFor(t, "the server to see the closed connections go", func() bool { return srv.Live() == 100 })
			if srv.Conns() != 100+res.Cycles {
				t.Errorf("server saw %d upgrades, want %d", srv.Conns(), 100+res.Cycles)
			}
			// The set is usable by the next phase.
			if e, err := client.RunAs[echo.Result](c, t.Context(), &echo.Params{Total: 200, Concurrency: 100, Payload: new(units.Size(16)), Verify: new(true)}, nil); err != nil || e.Success != 200 {
				t.Errorf("echo after churn: %+v, %v", e, err)
			}
		})
	}
}

// TestChurnLifetime: with a lifetime instead of a rate, each connection
// closes when its own life ends and its replacement draws a new one: a
// fixed lifetime of 200 ms over 40 connections for 1 s is about 40 × 4.5
// cycles (the first lives are spread over [0, 200ms]), never more than
// 40 × 5.
func TestChurnLifetime(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	c := clienttest.NewClient(t, client.Options{Targets: []string{srv.Addr()}})
	clienttest.MustConnect(t, c, 40)
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(time.Second), Lifetime: units.Duration(200 * time.Millisecond), LifetimeDist: LifetimeFixed, Close: CloseReset, Seed: 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// At most 40 × 5 lives fit in 1 s (none shorter than its lifetime);
	// at least each connection's first life ends (a busy host may take
	// long to reopen: about 180 on an idle one).
	if res.Cycles < 40 || res.Cycles > 200 || res.Connect.Success != res.Cycles || res.Alive != 40 {
		t.Errorf("%d cycles, %d reopened, %d alive: want 40 to 200 (~180), all reopened, 40", res.Cycles, res.Connect.Success, res.Alive)
	}
}

// TestChurnCloseTimeout: a server that never answers a close frame has
// each clean close cut after close_timeout, counted as such.
func TestChurnCloseTimeout(t *testing.T) {
	srv := &testserver.RawServer{Handle: func(c net.Conn, r *bufio.Reader) {
		for {
			if _, _, _, err := testserver.ReadClientFrame(r); err != nil {
				return
			}
		}
	}}
	addr := srv.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 10)
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(500 * time.Millisecond), Rate: 20, CloseTimeout: units.Duration(100 * time.Millisecond)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cycles < 8 || res.CloseTimeouts != res.Cycles || res.Clean != 0 || res.Connect.Success != res.Cycles {
		t.Errorf("%d cycles, %d close timeouts, %d clean, %d reopened", res.Cycles, res.CloseTimeouts, res.Clean, res.Connect.Success)
	}
}

// TestChurnReplacementsFail: replacements that cannot connect are counted
// failed with their reason, and the set shrinks by as many.
func TestChurnReplacementsFail(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	c := clienttest.NewClient(t, client.Options{Targets: []string{srv.Addr()}})
	clienttest.MustConnect(t, c, 20)
	srv.Listener.Close() // new connections are refused; open ones stay
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(300 * time.Millisecond), Rate: 20, Close: CloseReset}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cycles < 4 || res.Connect.Failed != res.Cycles || res.Connect.Success != 0 || res.Alive != 20-res.Cycles || res.Connect.Errors["connect: connection refused"] != res.Cycles {
		t.Errorf("%d cycles, %+v, %d alive", res.Cycles, res.Connect, res.Alive)
	}
}

func TestParams(t *testing.T) {
	for _, c := range []struct {
		p    Params
		want string
	}{
		{Params{Duration: units.Duration(time.Second), Rate: 1}, ""},
		{Params{Duration: units.Duration(time.Second), Lifetime: units.Duration(time.Second), LifetimeDist: LifetimeUniform}, ""},
		{Params{Duration: units.Duration(time.Second)}, "give one of rate and lifetime"},
		{Params{Duration: units.Duration(time.Second), Rate: 1, Lifetime: units.Duration(time.Second)}, "give one of rate and lifetime"},
		{Params{Rate: 1}, "duration: must be > 0"},
		{Params{Duration: units.Duration(time.Second), Rate: math.Inf(1)}, "rate must be finite"},
		{Params{Duration: units.Duration(time.Second), Rate: 1, Retries: -1}, "retries: must be >= 0, got -1"},
		{Params{Duration: units.Duration(time.Second), Rate: 1, Close: "slam"}, `close must be clean, reset or mixed, got "slam"`},
		{Params{Duration: units.Duration(time.Second), Lifetime: 1, LifetimeDist: "normal"}, `lifetime_dist must be`},
	} {
		err := client.Ready(&c.p) // the tags' defaults, then Validate
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
	parts := (&Params{Duration: units.Duration(time.Second), Rate: 90, Seed: 5}).Split([]int{10, 0, 20})
	if parts[1] != nil || parts[0].(*Params).Rate != 30 || parts[2].(*Params).Rate != 60 || parts[0].(*Params).Seed == parts[2].(*Params).Seed {
		t.Errorf("split %+v %+v %+v", parts[0], parts[1], parts[2])
	}
}
