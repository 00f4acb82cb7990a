package shard

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
)

func TestSplit(t *testing.T) {
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
		got := split(c.n, c.weights)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("split(%d, %v) = %v, want %v", c.n, c.weights, got, c.want)
		}
		var sum int64
		for _, g := range got {
			sum += g
		}
		if sum != c.n {
			t.Errorf("split(%d, %v) sums to %d", c.n, c.weights, sum)
		}
	}
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
	merged := client.NewHistogram()
	for _, h := range []*client.EchoResult{{Latency: a}, {Latency: b}} {
		w, err := wireEcho(*h)
		if err != nil {
			t.Fatal(err)
		}
		line, err := json.Marshal(Reply{Op: "echo", Echo: w})
		if err != nil {
			t.Fatal(err)
		}
		var back Reply
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatal(err)
		}
		h2, err := back.Echo.Latency.decode()
		if err != nil {
			t.Fatal(err)
		}
		merged.Merge(h2)
	}
	if merged.TotalCount() != all.TotalCount() {
		t.Fatalf("count %d, want %d", merged.TotalCount(), all.TotalCount())
	}
	for _, q := range []float64{50, 75, 90, 95, 99, 99.9, 100} {
		if g, w := merged.ValueAtQuantile(q), all.ValueAtQuantile(q); g != w {
			t.Errorf("p%v = %d, want %d", q, g, w)
		}
	}
	if merged.Min() != all.Min() || merged.Max() != all.Max() {
		t.Errorf("min/max %d/%d, want %d/%d", merged.Min(), merged.Max(), all.Min(), all.Max())
	}
}

func TestWireKeepsCounts(t *testing.T) {
	r := client.ConnectResult{Total: 10, Success: 8, Failed: 2, Retried: 3, Used: 1500 * time.Millisecond,
		Errors: map[string]int64{"timeout": 2}, Latency: client.NewHistogram()}
	w, err := wireConnect(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(w)
	var back ConnectResult
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Total != 10 || back.Success != 8 || back.Failed != 2 || back.Retried != 3 || back.Used != 1500*time.Millisecond || back.Errors["timeout"] != 2 {
		t.Errorf("round trip = %+v", back.ConnectResult)
	}
}
