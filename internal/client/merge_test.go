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

// TestSplitParams: connect's Split keeps the phase's totals, follows
// the weights, and never gives a part more connections than it has.
func TestSplitParams(t *testing.T) {
	w := []int{6, 0, 4}
	conn := (&ConnectParams{Connections: 101, Concurrency: 2, Timeout: units.Duration(time.Second)}).Split(w)
	if conn[2] != nil || conn[0].(*ConnectParams).Connections != 51 || conn[1].(*ConnectParams).Connections != 50 || conn[1].(*ConnectParams).Concurrency != 1 {
		t.Errorf("connect split %+v %+v %+v", conn[0], conn[1], conn[2])
	}
	for _, p := range conn {
		if p != nil {
			if err := Ready(p); err != nil {
				t.Errorf("%s part invalid: %v", KindName(p), err)
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

// TestMergeResults: connect's one Merge, on parts straight from loops
// and on parts after the shard wire, sums counts, merges histograms
// exactly, adds failure reasons and merges stop reasons.
func TestMergeResults(t *testing.T) {
	for _, viaWire := range []bool{false, true} {
		all := NewHist()
		c := &ConnectResult{Total: 10, Success: 9, Failed: 1, Retried: 2, Used: time.Second, Latency: hist(all, 100, 200), Errors: Reasons{"connect: connection refused": 3}, Ended: Ended{Stopped: StopCanceled}}
		d := &ConnectResult{Total: 10, Success: 10, Used: 3 * time.Second, Latency: hist(all, 300_000)}
		if viaWire {
			c, d = wire(t, c), wire(t, d)
		}
		c.Merge(d)
		if c.Total != 20 || c.Success != 19 || c.Failed != 1 || c.Retried != 2 || c.Used != 3*time.Second || c.Errors["connect: connection refused"] != 3 || c.Stopped != StopCanceled {
			t.Errorf("connect merge (wire %v): %+v", viaWire, c)
		}
		sameHist(t, "connect", c.Latency, all)
	}
}

// TestKindsRegistered: every kind's params and result decode by name.
func TestKindsRegistered(t *testing.T) {
	for _, name := range KindNames() {
		k, _ := LookupKind(name)
		p := k.newParams()
		if KindName(p) != name {
			t.Errorf("kind %s: params say %s", name, KindName(p))
		}
		b, _ := json.Marshal(p)
		if _, err := DecodeParams(name, b); err != nil {
			t.Errorf("kind %s: %v", name, err)
		}
		b, _ = json.Marshal(k.newResult())
		if _, err := DecodeResult(name, b); err != nil {
			t.Errorf("kind %s: %v", name, err)
		}
	}
	if _, err := DecodeParams("nope", nil); err == nil {
		t.Error("unknown kind decoded")
	}
}
