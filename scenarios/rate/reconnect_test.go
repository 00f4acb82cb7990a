package rate

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// TestReconnectRate: the server drops every connection in the middle of
// a rate phase; with a backoff policy each comes back, takes its place on
// the timetable (its next message is the one due next: no marker
// mismatch), and the messages in flight at the drop count as lost, never
// sent again.
func TestReconnectRate(t *testing.T) {
	testenv.Slow(t, "1 s: a second of rate with reconnects")
	srv := testserver.Start(t, testserver.Options{})
	c := clienttest.NewClient(t, client.Options{Targets: []string{srv.Addr()}, Loops: 2,
		Reconnect: &client.Reconnect{Policy: client.ReconnectBackoff, Base: units.Duration(50 * time.Millisecond), Max: units.Duration(time.Second), Jitter: client.JitterFull}})
	clienttest.MustConnect(t, c, 40)
	time.AfterFunc(400*time.Millisecond, func() { srv.Drop(40) })
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(time.Second), Rate: 50, Send: Send{Payload: new(units.Size(64)), Verify: new(true)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs := c.Reconnects()
	if rs.Drops != 40 || rs.Reconnects != 40 || rs.Pending != 0 || rs.Latency.TotalCount() != 40 || rs.Latency.Max() > int64(200*time.Millisecond) {
		t.Errorf("reconnects %+v (max %v): want 40 dropped, 40 back within the backoff", rs, time.Duration(rs.Latency.Max()))
	}
	if rs.Peak() < 10 || rs.Peak() > 400 {
		t.Errorf("peak %d per second", rs.Peak())
	}
	if res.Failed != 0 || res.Errors["marker mismatch"] != 0 || res.Stopped != "" {
		t.Errorf("rate after the reconnects: failed %d %v, stopped %q", res.Failed, res.Errors, res.Stopped)
	}
	// 40 × 50/s × 1 s = 2000 due; the drop loses what was in flight (a
	// few per connection) and what was due while they were away (~25 ms
	// each on average): the rest is sent and echoed.
	t.Logf("scheduled %d, sent %d, recv %d, lost %d, unsent %d; reconnect p50 %v", res.Scheduled, res.Sent, res.Recv, res.Lost(), res.Unsent, time.Duration(rs.Latency.ValueAtQuantile(50)))
	if res.Scheduled < 1900 || res.Sent < 1600 || res.Recv+res.Lost() != res.Sent || res.Lost() > 40*5 || res.Unsent+res.Sent != res.Scheduled {
		t.Errorf("scheduled %d, sent %d, recv %d, lost %d, unsent %d: want the timetable kept after the reconnects", res.Scheduled, res.Sent, res.Recv, res.Lost(), res.Unsent)
	}
	if c.Conns() != 40 {
		t.Errorf("%d open after the phase, want 40", c.Conns())
	}
	// The next phase uses the connections that came back.
	next, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(100 * time.Millisecond), Rate: 20, Send: Send{Payload: new(units.Size(16)), Verify: new(true)}}, nil)
	if err != nil || next.Sent != 80 || next.Recv != 80 || next.Failed != 0 {
		t.Errorf("rate after: sent %d recv %d failed %d %v %v", next.Sent, next.Recv, next.Failed, next.Errors, err)
	}
	if rs := c.Reconnects(); rs.Drops != 0 || rs.Reconnects != 0 {
		t.Errorf("the next phase's reconnects %+v: want none", rs)
	}
}
