package close

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/scenarios/echo"

	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// closeServer answers a client's close frame as reply says: with a close
// frame carrying that payload, or (reply nil) not at all; with drop, it
// closes the TCP connection instead, without a close frame.
func closeServer(t *testing.T, reply []byte, drop bool) string {
	t.Helper()
	s := &testserver.RawServer{Handle: func(c net.Conn, r *bufio.Reader) {
		for {
			_, op, _, err := testserver.ReadClientFrame(r)
			if err != nil {
				return
			}
			if op != client.OpClose {
				continue
			}
			if drop {
				return
			}
			if reply != nil {
				_, _ = c.Write(testserver.ServerFrame(true, client.OpClose, reply))
			}
		}
	}}
	return s.Start(t)
}

// TestCloseKind: every connection's close is answered by a real server
// (gorilla's close handler echoes the code), timed, and the connection is
// gone after, not counted as the server's closes (Client.PeerCloses);
// the ones the phase did not close stay usable.
func TestCloseKind(t *testing.T) {
	addr := testserver.Start(t, testserver.Options{}).Addr()
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: 2})
	clienttest.MustConnect(t, c, 30)
	pr := &client.Progress{}
	res, err := client.RunAs[Result](c, t.Context(), &Params{Connections: 20, Concurrency: 5}, pr)
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 20 || res.Success != 20 || res.Failed != 0 || res.OtherCode != 0 || res.Stopped != "" ||
		res.Latency.TotalCount() != 20 || res.Latency.Min() <= 0 || len(res.Errors) != 0 {
		t.Errorf("result %+v", res)
	}
	if pr.Done.Load() != 20 || pr.Total.Load() != 20 {
		t.Errorf("progress %d/%d", pr.Done.Load(), pr.Total.Load())
	}
	if p := c.PeerCloses(); p.N != 0 || p.First != 0 || len(p.Recent) != 0 {
		t.Errorf("after the client's own closes: peer closes %+v, want none", p)
	}
	if n := c.Conns(); n != 10 {
		t.Errorf("%d connections open after closing 20 of 30, want 10", n)
	}
	if e, err := client.RunAs[echo.Result](c, t.Context(), &echo.Params{Total: 100, Concurrency: 10, Payload: new(units.Size(16)), Verify: new(true)}, nil); err != nil || e.Success != 100 {
		t.Errorf("echo on the connections left: %+v, %v", e, err)
	}
	if _, err := client.RunAs[Result](c, t.Context(), &Params{Connections: 11, Concurrency: 1}, nil); err == nil || !strings.Contains(err.Error(), "exceeds the 10 open connections") {
		t.Errorf("more than open: %v", err)
	}
}

// TestCloseKindFailures: a server that answers with another code, one that
// never answers (the timeout drops the connection) and one that drops
// the connection without a close frame.
func TestCloseKindFailures(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		reply                     []byte
		drop                      bool
		success, otherCode, fails int64
		reason                    string
	}{
		{"other code", []byte{0x03, 0xe9}, false, 4, 4, 0, "server close 1001"},
		{"no code", []byte{}, false, 4, 4, 0, "server close"},
		{"no answer", nil, false, 0, 0, 4, string(client.ReasonTimeout)},
		{"dropped", nil, true, 0, 0, 4, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clienttest.NewClient(t, client.Options{Targets: []string{closeServer(t, tc.reply, tc.drop)}, Loops: 1})
			clienttest.MustConnect(t, c, 4)
			res, err := client.RunAs[Result](c, t.Context(), &Params{Connections: 4, Concurrency: 4, Timeout: units.Duration(200 * time.Millisecond)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Success != tc.success || res.OtherCode != tc.otherCode || res.Failed != tc.fails || res.Latency.TotalCount() != tc.success {
				t.Errorf("result %+v", res)
			}
			reasons := res.Errors
			if tc.otherCode > 0 {
				reasons = res.Codes
			}
			failures := int64(0)
			for _, n := range res.Errors {
				failures += n
			}
			if tc.reason != "" && reasons[client.Reason(tc.reason)] != 4 || failures != tc.fails {
				t.Errorf("codes %v, errors %v, want %q ×4", res.Codes, res.Errors, tc.reason)
			}
			if n := c.Conns(); n != 0 {
				t.Errorf("%d connections open after the phase", n)
			}
		})
	}
}

// TestCloseKindParts: the phase split over two clients by its own Split and
// merged by its own Merge, as shards run it, closes every connection once.
func TestCloseKindParts(t *testing.T) {
	addr := testserver.Start(t, testserver.Options{}).Addr()
	clients := []*client.Client{clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: 2}), clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: 1})}
	clienttest.MustConnect(t, clients[0], 12)
	clienttest.MustConnect(t, clients[1], 6)
	p := &Params{Connections: 15, Concurrency: 3}
	parts := p.Split([]int{clients[0].Conns(), clients[1].Conns()})
	var merged Result
	for i, part := range parts {
		if part == nil {
			t.Fatalf("part %d is empty", i)
		}
		res, err := clients[i].Run(t.Context(), part, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			merged = *res.(*Result)
		} else {
			merged.Merge(res)
		}
	}
	if merged.Total != 15 || merged.Success != 15 || merged.Failed != 0 || merged.Latency.TotalCount() != 15 {
		t.Errorf("merged %+v", merged)
	}
	if open := clients[0].Conns() + clients[1].Conns(); open != 3 {
		t.Errorf("%d connections open, want 3", open)
	}
}

func TestCloseKindParams(t *testing.T) {
	for _, p := range []Params{
		{Connections: 0, Concurrency: 1},
		{Connections: 2, Concurrency: 3},
		{Connections: 2, Concurrency: 0},
		{Connections: 2, Concurrency: 1, Timeout: units.Duration(-time.Second)},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
	if err := (&Params{Connections: 2, Concurrency: 2, Timeout: units.Duration(time.Second)}).Validate(); err != nil {
		t.Error(err)
	}
	// Every part that closes connections closes at least one at a time.
	for i, part := range (&Params{Connections: 10, Concurrency: 1}).Split([]int{5, 5}) {
		if q := part.(*Params); q.Connections != 5 || q.Concurrency != 1 {
			t.Errorf("part %d: %+v", i, q)
		}
	}
}
