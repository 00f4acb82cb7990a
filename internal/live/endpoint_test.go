package live

import (
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
	closekind "github.com/wsplan/wsplan/scenarios/close"
	"github.com/wsplan/wsplan/scenarios/hold"
)

// endpoint scrapes a --metrics-listen server.
type endpoint struct {
	t    *testing.T
	addr string
}

// value is the merged series name of phase (with reason, when not "")
// as the endpoint's text exposition says now; -1 when absent.
func (e endpoint) value(name, phase, reason string) float64 {
	e.t.Helper()
	resp, err := http.Get("http://" + e.addr + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, m := range mfs[name].GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.Label {
			labels[lp.GetName()] = lp.GetValue()
		}
		if labels[LabelPhase] == phase && labels[LabelReason] == reason && labels[LabelShard] == "" {
			return valueOf(m)
		}
	}
	return -1
}

// startEndpoint serves a new hub's series on a loopback port until the
// test ends.
func startEndpoint(t *testing.T) (*Hub, endpoint) {
	t.Helper()
	h := NewHub("t", nil)
	srv, err := Listen(h, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return h, endpoint{t, srv.Addr()}
}

func valueOf(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// waitValue polls until the series reads want (5 s at most).
func (e endpoint) waitValue(name, phase string, want float64) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := e.value(name, phase, "")
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s{phase=%q} = %v, want %v", name, phase, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEndpointConnectRefused: a connect phase against a closed port
// reports its connections on the live endpoint as refused (given up:
// their retries are not counted apart), while it runs and once it ended.
func TestEndpointConnectRefused(t *testing.T) {
	h, e := startEndpoint(t)
	closed := testserver.ClosedAddr(t)
	c, err := client.New(client.Options{Targets: []string{closed}, Loops: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pr := &client.Progress{Live: &client.Live{}}
	end := h.Begin(Phase{Server: "down", Phase: "connect", Kind: "connect"}, pr.Live, 0, c.Conns())
	res, err := c.Connect(t.Context(), client.ConnectParams{Connections: 20, Concurrency: 20, Retries: 1, Timeout: units.Duration(5 * time.Second)}, pr)
	if err != nil || res.Failed != 20 {
		t.Fatalf("connect: %+v %v", res, err)
	}
	check := func(when string) {
		t.Helper()
		for r := range client.NumConnectReasons {
			want := 0.0
			if r == client.ConnectRefused {
				want = 20
			}
			if got := e.value(ConnectFailures, "connect", r.String()); got != want {
				t.Errorf("%s: %s{reason=%q} = %v, want %v", when, ConnectFailures, r, got, want)
			}
		}
		if got := e.value(Connects, "connect", ""); got != 0 {
			t.Errorf("%s: %s = %v, want 0", when, Connects, got)
		}
	}
	check("running")
	end(c.Conns())
	check("ended")
}

// TestEndpointConnectionsOpen: wsplan_connections_open follows a hold's
// connections as they are dropped mid-phase, and reads 0 after a close
// phase closed them.
func TestEndpointConnectionsOpen(t *testing.T) {
	testenv.Slow(t, "2 s: a live endpoint scraped while connections open")
	h, e := startEndpoint(t)
	ts := testserver.Start(t, testserver.Options{})
	c, err := client.New(client.Options{Targets: []string{ts.Addr()}, Loops: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	run := func(name string, p client.Params, during func()) {
		t.Helper()
		pr := &client.Progress{Live: &client.Live{}}
		end := h.Begin(Phase{Server: "ts", Phase: name, Kind: client.KindName(p)}, pr.Live, 0, c.Conns())
		done := make(chan error, 1)
		go func() {
			_, err := c.Run(t.Context(), p, pr)
			done <- err
		}()
		if during != nil {
			during()
		}
		if err := <-done; err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		end(c.Conns())
	}
	run("connect", &client.ConnectParams{Connections: 20, Concurrency: 20, Timeout: units.Duration(5 * time.Second)}, nil)
	if got := e.value(Connects, "connect", ""); got != 20 {
		t.Errorf("connect: %s = %v, want 20", Connects, got)
	}
	run("hold", &hold.Params{Duration: units.Duration(2 * time.Second)}, func() {
		e.waitValue(ConnectionsOpen, "hold", 20)
		ts.Drop(5)
		e.waitValue(ConnectionsOpen, "hold", 15)
	})
	run("close", &closekind.Params{Connections: 15, Concurrency: 15, Timeout: units.Duration(5 * time.Second)}, nil)
	if got := e.value(ConnectionsOpen, "close", ""); got != 0 {
		t.Errorf("after the close phase: %s = %v, want 0", ConnectionsOpen, got)
	}
	if got := e.value(ConnectionsOpen, "hold", ""); got != 15 {
		t.Errorf("the ended hold: %s = %v, want its 15 at its end", ConnectionsOpen, got)
	}
}
