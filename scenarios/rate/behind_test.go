package rate

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
)

// TestBehindSpans: the seconds of a timeline in which sending was behind
// its timetable, merged where they touch, within the sending time; the
// sending time alone when none was. The sad half are seconds that kept up
// (a few late messages, the rounding of a sparse timetable, the drain).
func TestBehindSpans(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	s := time.Second
	perSec := func(n float64) func(from, to time.Duration) float64 {
		return func(from, to time.Duration) float64 { return n * (to - from).Seconds() }
	}
	type span struct{ from, to time.Duration }
	cases := []struct {
		name   string
		secs   []client.PacedSecond
		due    func(from, to time.Duration) float64
		used   time.Duration
		want   []span
		behind time.Duration
	}{
		{"late messages", []client.PacedSecond{{Sent: 1000}, {Sent: 1000, Late: 200}, {Sent: 1000}}, perSec(1000), 3 * s,
			[]span{{s, 2 * s}}, s},
		{"sent too few", []client.PacedSecond{{Sent: 1000}, {Sent: 1000}, {Sent: 500}}, perSec(1000), 3 * s,
			[]span{{2 * s, 3 * s}}, s},
		{"touching seconds merge", []client.PacedSecond{{Sent: 1000}, {Sent: 300}, {Sent: 1700, Late: 700}, {Sent: 1000}, {Sent: 0}}, perSec(1000), 5 * s,
			[]span{{s, 3 * s}, {4 * s, 5 * s}}, 3 * s},
		{"a partial last second", []client.PacedSecond{{Sent: 1000}, {Sent: 100}}, perSec(1000), 1500 * time.Millisecond,
			[]span{{s, 1500 * time.Millisecond}}, 500 * time.Millisecond},

		{"kept up: the sending time", []client.PacedSecond{{Sent: 1000}, {Sent: 999, Late: 5}, {Sent: 1001}}, perSec(1000), 3 * s,
			[]span{{0, 3 * s}}, 0},
		{"the drain is not sending", []client.PacedSecond{{Sent: 1000}, {Sent: 1000}, {Sent: 0}, {Sent: 0}}, perSec(1000), 2 * s,
			[]span{{0, 2 * s}}, 0},
		{"a sparse timetable's rounding", []client.PacedSecond{{Sent: 1}, {Sent: 0}, {Sent: 1}, {Sent: 0}}, perSec(0.5), 4 * s,
			[]span{{0, 4 * s}}, 0},
		{"no time sent", nil, perSec(1000), 0, nil, 0},
	}
	for _, c := range cases {
		spans, behind := behindSpans(t0, c.secs, c.due, c.used)
		var got []span
		for _, sp := range spans {
			got = append(got, span{sp.From.Sub(t0), sp.To.Sub(t0)})
		}
		if len(got) != len(c.want) || behind != c.behind {
			t.Errorf("%s: spans %v behind %v, want %v %v", c.name, got, behind, c.want, c.behind)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: spans %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}
