package shard

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/scenarios/echo"
	"github.com/wsplan/wsplan/scenarios/hold"
	"github.com/wsplan/wsplan/scenarios/rate"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// TestRateWireIsExact: two shards' rate results, sent over the wire and
// merged, give the overall latency of one histogram holding everything,
// and a timeline whose counts and maxima are exact.
func TestRateWireIsExact(t *testing.T) {
	const secs = 3
	all := client.NewHistogram()
	shards := make([]rate.Result, 2)
	for s := range shards {
		shards[s] = rate.Result{Sent: 100, Recv: 90, Latency: client.NewHist(), Seconds: make([]client.PacedSecond, secs)}
		for i := range secs {
			h := client.NewHistogram()
			for v := int64(1); v <= 3000; v++ {
				x := (v*v*int64(s+1) + int64(i)*7919) % 50_000_000
				h.RecordValue(x)
				all.RecordValue(x)
			}
			shards[s].Latency.Merge(h)
			shards[s].Seconds[i] = client.PacedSecond{Sent: int64(10 * (i + 1)), Recv: 3000, Late: int64(s),
				P50: time.Duration(h.ValueAtQuantile(50)), P99: time.Duration(h.ValueAtQuantile(99)), Max: time.Duration(h.Max())}
		}
	}
	var merged client.Result
	for _, r := range shards {
		back := overWire(t, "rate", &r)
		if b := back.(*rate.Result); b.Sent != 100 || b.Recv != 90 {
			t.Errorf("counts after the wire: %+v", b)
		}
		if merged == nil {
			merged = back
		} else {
			merged.Merge(back)
		}
	}
	m := merged.(*rate.Result)
	for i, s := range m.Seconds {
		if s.Sent != int64(20*(i+1)) || s.Recv != 6000 || s.Late != 1 {
			t.Errorf("second %d: %+v", i, s)
		}
		if want := max(shards[0].Seconds[i].Max, shards[1].Seconds[i].Max); s.Max != want || s.P99 < shards[0].Seconds[i].P99 {
			t.Errorf("second %d: max %v p99 %v, want max %v", i, s.Max, s.P99, want)
		}
	}
	for _, q := range []float64{50, 99, 99.9, 100} {
		if g, w := m.Latency.ValueAtQuantile(q), all.ValueAtQuantile(q); g != w {
			t.Errorf("overall p%v = %d, want %d", q, g, w)
		}
	}
}

// overWire sends res as a shard's reply line and decodes it back.
func overWire(t *testing.T, kind string, res client.Result) client.Result {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	line, err := json.Marshal(Reply{Op: "run", Kind: kind, Result: b})
	if err != nil {
		t.Fatal(err)
	}
	var back Reply
	if err := json.Unmarshal(line, &back); err != nil {
		t.Fatal(err)
	}
	out, err := client.DecodeResult(back.Kind, back.Result)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runReq is a run request for p.
func runReq(t *testing.T, p client.Params) Request {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return Request{Op: "run", Kind: client.KindName(p), Params: b}
}

// TestServeRateAndHold runs the shard side in this process over pipes: a
// connect, a rate and a hold with pings, as the orchestrator sends them.
func TestServeRateAndHold(t *testing.T) {
	testenv.Slow(t, "2 s: rate and hold served by a shard process")
	srv := testserver.Start(t, testserver.Options{})
	defer srv.Close()

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, client.Options{Targets: []string{strings.TrimPrefix(srv.URL, "http://")}}, inR, outW)
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	enc := json.NewEncoder(inW)
	reply := func(req Request) Reply {
		t.Helper()
		if req.Op != "" {
			if err := enc.Encode(req); err != nil {
				t.Fatal(err)
			}
		}
		for sc.Scan() {
			var r Reply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if r.Op != "progress" {
				return r
			}
		}
		t.Fatalf("shard output ended: %v; Serve: %v", sc.Err(), <-done)
		return Reply{}
	}
	if r := reply(Request{}); !r.Ready {
		t.Fatalf("first line %+v", r)
	}
	if r := reply(runReq(t, &client.ConnectParams{Connections: 20, Concurrency: 20, Timeout: units.Duration(5 * time.Second)})); r.Err != "" || r.Conns != 20 {
		t.Fatalf("connect: %+v", r)
	}
	r := reply(runReq(t, &rate.Params{Duration: units.Duration(time.Second), Rate: 10, PhaseFirst: 20, PhaseTotal: 40, Send: rate.Send{Payload: new(units.Size(64)), Verify: new(true)}}))
	if r.Err != "" || len(r.Result) == 0 {
		t.Fatalf("rate: %+v", r)
	}
	res, err := client.DecodeResult(r.Kind, r.Result)
	if err != nil {
		t.Fatal(err)
	}
	// Phases 20/40…39/40: the second half of each 100 ms period, 10 each.
	if rr := res.(*rate.Result); rr.Sent != 200 || rr.Recv != 200 || rr.Lost() != 0 || len(rr.Seconds) == 0 || rr.Seconds[0].Max == 0 || rr.Latency.TotalCount() != 200 {
		t.Fatalf("rate result %+v", rr)
	}
	r = reply(runReq(t, &hold.Params{Duration: units.Duration(500 * time.Millisecond), Ping: units.Duration(100 * time.Millisecond)}))
	if res, err = client.DecodeResult(r.Kind, r.Result); err != nil {
		t.Fatal(err)
	}
	if h := res.(*hold.Result); r.Err != "" || h.Pings != 100 || h.Pongs != 100 || h.Alive != 20 {
		t.Fatalf("hold: %+v %+v", r, h)
	}
	if err := enc.Encode(Request{Op: "close"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	inW.Close()
}

// TestHistogramWireIsExact: percentiles of histograms merged after a trip
// over the wire equal those of one histogram holding every value.
func TestHistogramWireIsExact(t *testing.T) {
	a, b, all := client.NewHistogram(), client.NewHistogram(), client.NewHistogram()
	for i := int64(1); i <= 20000; i++ {
		v := i * i % 7919 * int64(time.Microsecond)
		if i%2 == 0 {
			a.RecordValue(v)
		} else {
			b.RecordValue(v + int64(time.Millisecond))
			v += int64(time.Millisecond)
		}
		all.RecordValue(v)
	}
	var merged client.Result
	for _, h := range []*echo.Result{{Latency: client.Hist{Histogram: a}}, {Latency: client.Hist{Histogram: b}}} {
		back := overWire(t, "echo", h)
		if merged == nil {
			merged = back
		} else {
			merged.Merge(back)
		}
	}
	m := merged.(*echo.Result).Latency
	if m.TotalCount() != all.TotalCount() {
		t.Fatalf("count %d, want %d", m.TotalCount(), all.TotalCount())
	}
	for _, q := range []float64{50, 75, 90, 95, 99, 99.9, 100} {
		if g, w := m.ValueAtQuantile(q), all.ValueAtQuantile(q); g != w {
			t.Errorf("p%v = %d, want %d", q, g, w)
		}
	}
	if m.Min() != all.Min() || m.Max() != all.Max() {
		t.Errorf("min/max %d/%d, want %d/%d", m.Min(), m.Max(), all.Min(), all.Max())
	}
}

func TestWireKeepsCounts(t *testing.T) {
	r := &client.ConnectResult{Total: 10, Success: 8, Failed: 2, Retried: 3, Used: 1500 * time.Millisecond,
		Errors: client.Reasons{client.ReasonTimeout: 2}, Latency: client.NewHist(), Ended: client.Ended{Stopped: client.StopCanceled}}
	back := overWire(t, "connect", r).(*client.ConnectResult)
	if back.Total != 10 || back.Success != 8 || back.Failed != 2 || back.Retried != 3 || back.Used != 1500*time.Millisecond || back.Errors["timeout"] != 2 || back.Stopped != client.StopCanceled {
		t.Errorf("round trip = %+v", back)
	}
}
