package engine

import (
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		name        string
		done, total int64
		rate        float64
		elapsed     time.Duration
		want        string
	}{
		{"half way", 500, 1000, 250, 2 * time.Second, "echo gws: 500/1000  250/s  2s  ETA 2s"},
		{"quarter", 250, 1000, 100, 2500 * time.Millisecond, "echo gws: 250/1000  100/s  2.5s  ETA 8s"},
		{"nothing yet: no ETA", 0, 1000, 0, time.Second, "echo gws: 0/1000  0/s  1s"},
		{"no known end: no ETA", 70, 0, 10, 7 * time.Second, "echo gws: 70/0  10/s  7s"},
		{"done: no ETA", 1000, 1000, 0, 4 * time.Second, "echo gws: 1000/1000  0/s  4s"},
	} {
		if got := progressLine("echo", "gws", tc.done, tc.total, tc.rate, tc.elapsed); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
