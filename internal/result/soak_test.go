package result

import (
	"math"
	"testing"
)

func TestFit(t *testing.T) {
	all := func(int) bool { return true }
	for _, c := range []struct {
		name  string
		x, y  []float64
		keep  func(int) bool
		slope float64
		used  int
		ok    bool
	}{
		{"line", []float64{0, 1, 2, 3}, []float64{5, 7, 9, 11}, all, 2, 4, true},
		{"flat", []float64{0, 1, 2}, []float64{3, 3, 3}, all, 0, 3, true},
		{"falling", []float64{0, 2, 4}, []float64{10, 6, 2}, all, -2, 3, true},
		{"noise around 1", []float64{0, 1, 2, 3}, []float64{0, 2, 1, 3}, all, 0.8, 4, true},
		{"kept only", []float64{0, 1, 2, 3}, []float64{100, 1, 2, 3}, func(i int) bool { return i > 0 }, 1, 3, true},
		{"one point", []float64{1}, []float64{1}, all, 0, 1, false},
		{"x constant", []float64{2, 2, 2}, []float64{1, 2, 3}, all, 0, 3, false},
	} {
		slope, used, ok := Fit(len(c.x), c.keep, func(i int) float64 { return c.x[i] }, func(i int) float64 { return c.y[i] })
		if math.Abs(slope-c.slope) > 1e-9 || used != c.used || ok != c.ok {
			t.Errorf("%s: slope %v used %d ok %v, want %v %d %v", c.name, slope, used, ok, c.slope, c.used, c.ok)
		}
	}
}
