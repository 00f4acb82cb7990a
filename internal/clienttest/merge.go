package clienttest

import (
	"encoding/json"
	"testing"

	"github.com/wsplan/wsplan/internal/client"
)

// What the kinds' Merge tests share: a result's parts from loops and
// shards merge exactly, straight or after the shard wire.

// Hist returns a histogram holding vals (ns) and records them in all.
func Hist(all client.Hist, vals ...int64) client.Hist {
	h := client.NewHist()
	for _, v := range vals {
		client.Record(h.Histogram, v)
		client.Record(all.Histogram, v)
	}
	return h
}

// PartsReady fails the test for each part of a Split (nil parts have
// nothing to do) that is not valid on its own, as a loop or shard gets it.
func PartsReady(t *testing.T, parts []client.Params) {
	t.Helper()
	for i, p := range parts {
		if p != nil {
			if err := client.Ready(p); err != nil {
				t.Errorf("part %d invalid: %v", i, err)
			}
		}
	}
}

// Wire sends r through JSON, as a shard's reply does.
func Wire[R any](t *testing.T, r *R) *R {
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

// SameHist checks a merged histogram against one holding every value.
func SameHist(t *testing.T, what string, got, want client.Hist) {
	t.Helper()
	if got.TotalCount() != want.TotalCount() || got.Min() != want.Min() || got.Max() != want.Max() {
		t.Errorf("%s: merged histogram count %d [%d, %d], want %d [%d, %d]", what, got.TotalCount(), got.Min(), got.Max(), want.TotalCount(), want.Min(), want.Max())
	}
	for _, q := range []float64{50, 90, 99, 99.9} {
		if g, w := got.ValueAtQuantile(q), want.ValueAtQuantile(q); g != w {
			t.Errorf("%s: p%v = %d, want %d", what, q, g, w)
		}
	}
}
