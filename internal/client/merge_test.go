package client

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/units"
)

func TestMergeStop(t *testing.T) {
	no := StopNoConnections
	for _, c := range []struct {
		in   []StopReason
		want StopReason
	}{
		{[]StopReason{""}, ""},
		{[]StopReason{"", ""}, ""},
		{[]StopReason{no, ""}, ""}, // one part lost its connections, the other ran on
		{[]StopReason{"", no}, ""},
		{[]StopReason{no, no}, no},
		{[]StopReason{no, no, ""}, ""},
		{[]StopReason{no, StopCanceled}, StopCanceled},
		{[]StopReason{"", StopClosed}, StopClosed},
		{[]StopReason{StopDeadline, StopCanceled}, StopDeadline},
	} {
		got := c.in[0]
		for _, s := range c.in[1:] {
			got = MergeStop(got, s)
		}
		if got != c.want {
			t.Errorf("MergeStop(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSplitInt64(t *testing.T) {
	cases := []struct {
		n       int64
		weights []int
		want    []int64
	}{
		{10, []int{1, 1, 1}, []int64{4, 3, 3}},
		{10, []int{0, 0}, []int64{5, 5}},
		{10, []int{3, 1}, []int64{8, 2}},
		{7, []int{0, 5, 2}, []int64{0, 5, 2}},
		{1, []int{1, 1, 1}, []int64{1, 0, 0}},
		{0, []int{1, 1}, []int64{0, 0}},
		{1000001, []int{9500, 9500}, []int64{500001, 500000}},
	}
	for _, c := range cases {
		got := SplitInt64(c.n, c.weights)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitInt64(%d, %v) = %v, want %v", c.n, c.weights, got, c.want)
		}
	}
}

// TestSplitParams: every kind's Split keeps the phase's totals, follows
// the weights, and never gives a part more connections than it has.
func TestSplitParams(t *testing.T) {
	w := []int{6, 0, 4}
	conn := (&ConnectParams{Connections: 101, Concurrency: 2, Timeout: units.Duration(time.Second)}).Split(w)
	if conn[2] != nil || conn[0].(*ConnectParams).Connections != 51 || conn[1].(*ConnectParams).Connections != 50 || conn[1].(*ConnectParams).Concurrency != 1 {
		t.Errorf("connect split %+v %+v %+v", conn[0], conn[1], conn[2])
	}
	rate := (&RateParams{Duration: units.Duration(time.Second), Rate: 1, Connections: 9, RateSend: RateSend{Payload: new(units.Size(64))}}).Split(w)
	r0, r2 := rate[0].(*RateParams), rate[2].(*RateParams)
	if rate[1] != nil || r0.Connections+r2.Connections != 9 || r0.PhaseFirst != 0 || r2.PhaseFirst != r0.Connections || r0.PhaseTotal != 9 || r2.PhaseTotal != 9 ||
		r0.MaxInflightBytes+r2.MaxInflightBytes > 64<<20 || r0.Batch != units.Size(DefaultRateBatch) {
		t.Errorf("rate split %+v %+v", r0, r2)
	}
	for _, parts := range [][]Params{conn, rate} {
		for _, p := range parts {
			if p != nil {
				if err := Ready(p); err != nil {
					t.Errorf("%s part invalid: %v", p.Kind(), err)
				}
			}
		}
	}
}

// hist returns a histogram holding vals (ns) and records them in all.
func hist(all Hist, vals ...int64) Hist {
	h := NewHist()
	for _, v := range vals {
		Record(h.Histogram, v)
		Record(all.Histogram, v)
	}
	return h
}

// wire sends r through JSON, as a shard's reply does.
func wire[R any](t *testing.T, r *R) *R {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	out := new(R)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameHist checks a merged histogram against one holding every value.
func sameHist(t *testing.T, kind string, got, want Hist) {
	t.Helper()
	if got.TotalCount() != want.TotalCount() || got.Min() != want.Min() || got.Max() != want.Max() {
		t.Errorf("%s: merged histogram count %d [%d, %d], want %d [%d, %d]", kind, got.TotalCount(), got.Min(), got.Max(), want.TotalCount(), want.Min(), want.Max())
	}
	for _, q := range []float64{50, 90, 99, 99.9} {
		if g, w := got.ValueAtQuantile(q), want.ValueAtQuantile(q); g != w {
			t.Errorf("%s: p%v = %d, want %d", kind, q, g, w)
		}
	}
}

// TestMergeResults: each kind's one Merge, on parts straight from loops
// and on parts after the shard wire, sums counts, merges histograms
// exactly, adds failure reasons and merges stop reasons.
func TestMergeResults(t *testing.T) {
	for _, viaWire := range []bool{false, true} {
		all := NewHist()
		c := &ConnectResult{Total: 10, Success: 9, Failed: 1, Retried: 2, Used: time.Second, Latency: hist(all, 100, 200), Errors: Reasons{"connect: connection refused": 3}, Stopped: StopCanceled}
		d := &ConnectResult{Total: 10, Success: 10, Used: 3 * time.Second, Latency: hist(all, 300_000)}
		if viaWire {
			c, d = wire(t, c), wire(t, d)
		}
		c.Merge(d)
		if c.Total != 20 || c.Success != 19 || c.Failed != 1 || c.Retried != 2 || c.Used != 3*time.Second || c.Errors["connect: connection refused"] != 3 || c.Stopped != StopCanceled {
			t.Errorf("connect merge (wire %v): %+v", viaWire, c)
		}
		sameHist(t, "connect", c.Latency, all)

		all = NewHist()
		late := NewHist()
		r := &RateResult{Slack: time.Millisecond, Wakeups: 7, SendLate: hist(late, 5, 900_000), Conns: 2, Scheduled: 20, Sent: 19, Recv: 18, Failed: 1, Late: 3, Unsent: 1, BytesSent: 190, BytesRecv: 180,
			Used: time.Second, Drain: 100 * time.Millisecond, Latency: hist(all, 10, 20, 30),
			Seconds: []RateSecond{{Sent: 10, Recv: 9, Late: 1, P50: 10, P99: 20, Max: 20}, {Sent: 9, Recv: 9, Late: 2, P50: 30, P99: 30, Max: 30}},
			Errors:  Reasons{ReasonMarkerMismatch: 1}, Stopped: StopNoConnections}
		s := &RateResult{Slack: time.Millisecond, Wakeups: 4, SendLate: hist(late, 3_000_000), Conns: 1, Scheduled: 10, Sent: 10, Recv: 10, BytesSent: 100, BytesRecv: 100,
			Used: time.Second, Drain: 300 * time.Millisecond, Latency: hist(all, 40),
			Seconds: []RateSecond{{Sent: 10, Recv: 10, P50: 40, P99: 40, Max: 40}}, Stopped: StopNoConnections}
		if viaWire {
			r, s = wire(t, r), wire(t, s)
		}
		r.Merge(s)
		want := []RateSecond{{Sent: 20, Recv: 19, Late: 1, P50: 40, P99: 40, Max: 40}, {Sent: 9, Recv: 9, Late: 2, P50: 30, P99: 30, Max: 30}}
		if r.Conns != 3 || r.Scheduled != 30 || r.Sent != 29 || r.Recv != 28 || r.Failed != 1 || r.Late != 3 || r.Unsent != 1 || r.BytesSent != 290 || r.BytesRecv != 280 ||
			r.Used != time.Second || r.Drain != 300*time.Millisecond || !reflect.DeepEqual(r.Seconds, want) || r.Errors[ReasonMarkerMismatch] != 1 || r.Stopped != StopNoConnections {
			t.Errorf("rate merge (wire %v): %+v", viaWire, r)
		}
		sameHist(t, "rate", r.Latency, all)
		sameHist(t, "rate send_late", r.SendLate, late)
		if r.Slack != time.Millisecond || r.Wakeups != 11 {
			t.Errorf("rate merge (wire %v): slack %v wakeups %d, want 1ms, 11", viaWire, r.Slack, r.Wakeups)
		}
	}
}

// TestKindsRegistered: every kind's params and result decode by name.
func TestKindsRegistered(t *testing.T) {
	for _, name := range KindNames() {
		k, _ := LookupKind(name)
		p := k.NewParams()
		if p.Kind() != name {
			t.Errorf("kind %s: params say %s", name, p.Kind())
		}
		b, _ := json.Marshal(p)
		if _, err := DecodeParams(name, b); err != nil {
			t.Errorf("kind %s: %v", name, err)
		}
		b, _ = json.Marshal(k.NewResult())
		if _, err := DecodeResult(name, b); err != nil {
			t.Errorf("kind %s: %v", name, err)
		}
	}
	if _, err := DecodeParams("nope", nil); err == nil {
		t.Error("unknown kind decoded")
	}
}
