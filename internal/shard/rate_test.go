package shard

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gorilla/websocket"

	"github.com/wsplan/wsplan/internal/client"
)

// TestRateWireIsExact: two shards' timelines, sent over the wire and
// merged, give every second the percentiles of one histogram holding all
// of that second's values, and the overall latency those of everything.
func TestRateWireIsExact(t *testing.T) {
	const secs = 3
	all := client.NewHistogram()
	perSec := make([]*hdrhistogram.Histogram, secs)
	shards := make([]client.RateResult, 2)
	for i := range perSec {
		perSec[i] = client.NewHistogram()
	}
	for s := range shards {
		shards[s] = client.RateResult{Sent: 100, Recv: 90, Seconds: make([]client.RateSecond, secs)}
		for i := range secs {
			h := hdrhistogram.NewPacked(client.HistMin, client.HistMax, client.HistSigFigs)
			for v := int64(1); v <= 3000; v++ {
				x := (v*v*int64(s+1) + int64(i)*7919) % 50_000_000
				h.RecordValue(x)
				perSec[i].RecordValue(x)
				all.RecordValue(x)
			}
			shards[s].Seconds[i] = client.RateSecond{Sent: int64(10 * (i + 1)), Recv: 3000, Late: int64(s), Latency: h}
		}
	}
	var merged []client.RateSecond
	for _, r := range shards {
		w, err := wireRate(r)
		if err != nil {
			t.Fatal(err)
		}
		line, err := json.Marshal(Reply{Op: "rate", Rate: w})
		if err != nil {
			t.Fatal(err)
		}
		var back Reply
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatal(err)
		}
		if back.Rate.Sent != 100 || back.Rate.Recv != 90 {
			t.Errorf("counts after the wire: %+v", back.Rate.RateResult)
		}
		secs, err := back.Rate.seconds()
		if err != nil {
			t.Fatal(err)
		}
		merged = mergeSeconds(merged, secs)
	}
	total := client.NewHistogram()
	for i, s := range merged {
		if s.Sent != int64(20*(i+1)) || s.Recv != 6000 || s.Late != 1 {
			t.Errorf("second %d: %+v", i, s)
		}
		for _, q := range []float64{50, 99, 99.9, 100} {
			if g, w := s.Latency.ValueAtPercentile(q), perSec[i].ValueAtQuantile(q); g != w {
				t.Errorf("second %d: p%v = %d, want %d", i, q, g, w)
			}
		}
		s.Latency.MergeInto(total)
	}
	for _, q := range []float64{50, 99, 99.9} {
		if g, w := total.ValueAtQuantile(q), all.ValueAtQuantile(q); g != w {
			t.Errorf("overall p%v = %d, want %d", q, g, w)
		}
	}
}

// TestServeRateAndHold runs the shard side in this process over pipes: a
// connect, a rate and a hold with pings, as the orchestrator sends them.
func TestServeRateAndHold(t *testing.T) {
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			op, msg, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if err := ws.WriteMessage(op, msg); err != nil {
				return
			}
		}
	}))
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
	if r := reply(Request{Op: "connect", Connect: &client.ConnectParams{Connections: 20, Concurrency: 20, Timeout: 5 * time.Second}}); r.Err != "" || r.Conns != 20 {
		t.Fatalf("connect: %+v", r)
	}
	r := reply(Request{Op: "rate", Rate: &client.RateParams{Duration: time.Second, Rate: 10, Payload: 64, Verify: true, PhaseFirst: 20, PhaseTotal: 40}})
	if r.Err != "" || r.Rate == nil {
		t.Fatalf("rate: %+v", r)
	}
	// Phases 20/40…39/40: the second half of each 100 ms period, 10 each.
	if r.Rate.Sent != 200 || r.Rate.Recv != 200 || r.Rate.Lost() != 0 || len(r.Rate.Timeline) == 0 || r.Rate.Timeline[0].Latency == "" {
		t.Fatalf("rate result %+v", r.Rate)
	}
	r = reply(Request{Op: "hold", Hold: &client.HoldParams{Duration: 500 * time.Millisecond, Ping: 100 * time.Millisecond}})
	if r.Err != "" || r.Hold == nil || r.Hold.Pings != 100 || r.Hold.Pongs != 100 || r.Hold.Alive != 20 {
		t.Fatalf("hold: %+v %+v", r, r.Hold)
	}
	if err := enc.Encode(Request{Op: "close"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	inW.Close()
}

func TestMergeStopped(t *testing.T) {
	no := client.StopNoConnections
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"", ""}, ""},
		{[]string{no, ""}, ""}, // one shard lost its connections, the other ran on
		{[]string{no, no}, no},
		{[]string{no, client.StopCanceled}, client.StopCanceled},
		{[]string{"", client.StopClosed}, client.StopClosed},
	} {
		if got := mergeStopped(c.in); got != c.want {
			t.Errorf("mergeStopped(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
