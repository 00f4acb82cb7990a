package rate

import (
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/scenarios"
)

// When an open loop's sending was behind its timetable, from its
// per-second timeline (scenarios/behind.go says who could not keep up, the
// same way for every paced kind).

// behindSpans are the seconds of an open loop's timeline (secs; second i
// starting at start + i s) in which its sending was behind its
// timetable, within the sending time used, merged where they touch, and
// how long they last. A second is behind when more than
// scenarios.RateLateShare of the messages it had due (due(from, to), over
// every connection) left late, or fewer than scenarios.RateShortfall of
// them left at all, by more than one message (the rounding of a sparse
// timetable to whole seconds). When no second was, the spans are the
// sending time alone (the drain left out) and behind 0.
func behindSpans(start time.Time, secs []client.PacedSecond, due func(from, to time.Duration) float64, used time.Duration) (spans []scenarios.Span, behind time.Duration) {
	for i, s := range secs {
		from := time.Duration(i) * time.Second
		if from >= used {
			break
		}
		to := min(from+time.Second, used)
		d := due(from, to)
		if !(float64(s.Late) > scenarios.RateLateShare*d || float64(s.Sent)+1 < scenarios.RateShortfall*d) {
			continue
		}
		behind += to - from
		if n := len(spans); n > 0 && spans[n-1].To.Equal(start.Add(from)) {
			spans[n-1].To = start.Add(to)
			continue
		}
		spans = append(spans, scenarios.Span{From: start.Add(from), To: start.Add(to)})
	}
	if len(spans) == 0 {
		return scenarios.SendingSpan(start, used), 0
	}
	return spans, behind
}

// Behind is behindSpans of a rate phase (or a search's step) that started
// at start and ran q, measured as r: its Outcome.Behind and behind metric.
func Behind(start time.Time, r Result, q *Params) ([]scenarios.Span, time.Duration) {
	pacer := q.Pacer()
	due := func(from, to time.Duration) float64 { return float64(r.Conns) * pacer.Expected(from, to) }
	return behindSpans(start, r.Seconds, due, r.Used)
}

// corrupt returns the reasons of m that are corrupt echoes (want true) or
// lost connections (want false).
func corrupt(m client.Reasons, want bool) client.Reasons {
	out := client.Reasons{}
	for k, n := range m {
		if k.Corrupt() == want {
			out[k] = n
		}
	}
	return out
}
