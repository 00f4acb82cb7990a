package hold

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/scenarios/echo"

	"github.com/wsplan/wsplan/internal/units"
)

func TestHold(t *testing.T) {
	s := &testserver.EchoServer{}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: 2})
	clienttest.MustConnect(t, c, 20)
	start := time.Now()
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(300 * time.Millisecond)}, nil)
	if err != nil || res.Conns != 20 || res.Alive != 20 || res.Pings != 0 || res.Pongs != 0 {
		t.Fatalf("idle hold: %+v, %v", res, err)
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 500*time.Millisecond {
		t.Errorf("idle hold took %v, want 300 ms", d)
	}
	// Pings every 100 ms for 1 s: 10 per connection, spread over the
	// interval; gorilla answers each with a pong.
	testenv.RetryTiming(t, func() string {
		var pr client.Progress
		res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(time.Second), Ping: units.Duration(100 * time.Millisecond)}, &pr)
		if err != nil {
			t.Fatal(err)
		}
		if res.Conns != 20 || res.Alive != 20 || res.Pings != res.Pongs || pr.Total.Load() != 200 || pr.Done.Load() != res.Pings {
			t.Errorf("ping hold: %+v, progress %d/%d; want every ping answered on 20 connections", res, pr.Done.Load(), pr.Total.Load())
		}
		if res.Pings != 200 {
			return fmt.Sprintf("ping hold sent %d pings in 1 s, want 200", res.Pings)
		}
		return ""
	})
	// The connections still echo afterwards.
	er, err := client.RunAs[echo.Result](c, t.Context(), &echo.Params{Total: 40, Concurrency: 20, Payload: new(units.Size(32)), Verify: new(true)}, nil)
	if err != nil || er.Success != 40 {
		t.Errorf("echo after hold: %+v, %v", er, err)
	}
}

func TestHoldDrops(t *testing.T) {
	// A server that answers no ping and closes every connection after 200 ms.
	s := &testserver.RawServer{Handle: func(c net.Conn, r *bufio.Reader) {
		time.Sleep(200 * time.Millisecond)
	}}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 6)
	start := time.Now()
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(500 * time.Millisecond), Ping: units.Duration(50 * time.Millisecond)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var dropped int64
	for _, n := range res.Errors {
		dropped += n
	}
	if res.Conns != 6 || res.Alive != 0 || res.Pongs != 0 || res.Pings < 18 || res.Pings > 30 || dropped != 6 {
		t.Errorf("result %+v; want 6 dropped, 4 pings each and no pong", res)
	}
	// Waiting for the dead connections' pongs would take the hold's
	// 500 ms and the whole drain after it; a loaded host adds far less.
	if d := time.Since(start); d >= 500*time.Millisecond+DefaultDrain {
		t.Errorf("hold took %v: a dead connection's pongs must not be waited for", d)
	}
	if c.Conns() != 0 {
		t.Errorf("Conns() = %d", c.Conns())
	}
}

// TestHoldWrongPongs: a pong that does not carry its ping's payload
// answers no ping (RFC 6455 5.5.3): a server that sends such pongs leaves
// its pings unanswered, and the hold's pings_lost says so.
func TestHoldWrongPongs(t *testing.T) {
	testenv.Slow(t, "4 s: pings answered wrongly, waited out")
	for _, tc := range []struct {
		name  string
		pong  func(p []byte) []byte
		wrong bool
	}{
		{"its ping's payload", nil, false},
		{"another payload", func(p []byte) []byte { return []byte("pong!!!!") }, true},
		{"a later sequence", func(p []byte) []byte { return []byte{0xff, 0, 0, 0, 0, 0, 0, 0} }, true},
		{"empty", func([]byte) []byte { return nil }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.Start(t, testserver.Options{Pong: tc.pong})
			c := clienttest.NewClient(t, client.Options{Targets: []string{srv.Addr()}, Loops: 1})
			clienttest.MustConnect(t, c, 5)
			res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(300 * time.Millisecond), Ping: units.Duration(100 * time.Millisecond)}, nil)
			if err != nil || res.Pings == 0 {
				t.Fatalf("hold: %+v, %v", res, err)
			}
			if tc.wrong && res.Pongs != 0 {
				t.Errorf("%d of %d wrong pongs counted as answers", res.Pongs, res.Pings)
			}
			if !tc.wrong && res.Pongs != res.Pings {
				t.Errorf("%d pongs for %d pings, want every ping answered", res.Pongs, res.Pings)
			}
		})
	}
}

// TestHoldSplitMerge: every part holds all of its connections; parts
// from loops and shards merge exactly, straight or after the shard wire.
func TestHoldSplitMerge(t *testing.T) {
	for i, p := range (&Params{Duration: units.Duration(time.Second)}).Split([]int{3, 0, 5}) {
		if p == nil || p.(*Params).Duration.D() != time.Second {
			t.Errorf("hold part %d: %+v", i, p)
		}
	}
	for _, viaWire := range []bool{false, true} {
		h := &Result{Conns: 10, Alive: 9, Pings: 100, Pongs: 99, Used: time.Second, Errors: client.Reasons{client.ReasonEOF: 1}}
		k := &Result{Conns: 5, Alive: 5, Pings: 50, Pongs: 50, Used: 2 * time.Second, Ended: client.Ended{Stopped: client.StopClosed}}
		if viaWire {
			h, k = clienttest.Wire(t, h), clienttest.Wire(t, k)
		}
		h.Merge(k)
		if h.Conns != 15 || h.Alive != 14 || h.Pings != 150 || h.Pongs != 149 || h.Used != 2*time.Second || h.Errors[client.ReasonEOF] != 1 || h.Stopped != client.StopClosed {
			t.Errorf("hold merge (wire %v): %+v", viaWire, h)
		}
	}
}
