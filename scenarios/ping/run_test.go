package ping

import (
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/scenarios/echo"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/units"
)

func TestPing(t *testing.T) {
	addr := (&testserver.EchoServer{}).Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: 2})
	clienttest.MustConnect(t, c, 10)
	pr := &client.Progress{Live: &client.Live{}}
	res, err := client.RunAs[Result](c, t.Context(), &Params{Total: 2000, Concurrency: 10}, pr)
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 2000 || res.Success != 2000 || res.Failed != 0 || res.Stopped != "" || res.Latency.TotalCount() != 2000 || res.Latency.Min() <= 0 {
		t.Errorf("result %+v", res)
	}
	if pr.Done.Load() != 2000 || pr.Total.Load() != 2000 {
		t.Errorf("progress %d/%d", pr.Done.Load(), pr.Total.Load())
	}
	if n := pr.Live.Snapshot().Latency.Count; n != 2000 {
		t.Errorf("live latencies %d, want every pong's (2000)", n)
	}
	// An echo phase after it sees no stray pong or message.
	if e, err := client.RunAs[echo.Result](c, t.Context(), &echo.Params{Total: 100, Concurrency: 10, Payload: new(units.Size(16)), Verify: new(true)}, nil); err != nil || e.Success != 100 {
		t.Errorf("echo after ping: %+v, %v", e, err)
	}
	if _, err := client.RunAs[Result](c, t.Context(), &Params{Total: 10, Concurrency: 11}, nil); err == nil || !strings.Contains(err.Error(), "exceeds the 10 open connections") {
		t.Errorf("too much concurrency: %v", err)
	}
}
