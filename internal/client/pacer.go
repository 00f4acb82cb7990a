package client

import (
	"math"
	"time"
)

// Pacer is the timetable of an open-loop phase: every connection sends Rate
// messages per second until Duration, reaching the full rate linearly over
// Ramp. A connection's timetable is shifted by its phase, a fraction of a
// period in [0, 1), so that connections with phases spread over [0, 1) send
// evenly over time: without a ramp, message k of a connection with phase φ is
// due at (k+φ)/Rate seconds.
//
// Pacer is pure: the same arguments always give the same answer, so the
// scheduled time of a message can be recomputed from its number (the
// receiver checks the echoed marker against it), and it is tested by tables.
type Pacer struct {
	Rate     float64       // messages per second per connection, > 0
	Ramp     time.Duration // time to reach Rate linearly from 0; 0 = full rate at once
	Duration time.Duration // nothing is due at or after Duration
}

// maxPaceSeconds bounds the times a Pacer computes, far beyond any phase,
// so that conversions to time.Duration never overflow.
const maxPaceSeconds = 1e9

// credit is how many messages (a real number) a connection of phase 0 has
// had due by elapsed: the integral of the rate.
func (p Pacer) credit(elapsed time.Duration) float64 {
	t := elapsed.Seconds()
	if t <= 0 {
		return 0
	}
	ramp := p.Ramp.Seconds()
	if t < ramp {
		return p.Rate * t * t / (2 * ramp)
	}
	return p.Rate * (t - ramp/2)
}

// timeOf inverts credit: the time at which credit reaches m >= 0.
func (p Pacer) timeOf(m float64) time.Duration {
	ramp := p.Ramp.Seconds()
	var t float64
	if m < p.Rate*ramp/2 {
		t = math.Sqrt(2 * ramp * m / p.Rate)
	} else {
		t = m/p.Rate + ramp/2
	}
	if !(t < maxPaceSeconds) { // also catches NaN
		return time.Duration(maxPaceSeconds * 1e9)
	}
	return time.Duration(t * 1e9)
}

// At returns the scheduled time of message k (from 0) of a connection with
// phase, relative to the start of the phase. It may be at or after Duration:
// such a message is not due at all.
func (p Pacer) At(k int64, phase float64) time.Duration {
	return p.timeOf(float64(k) + phase)
}

// Due returns how many messages of a connection with phase are due by
// elapsed: the k with At(k) <= elapsed and At(k) < Duration. Due(elapsed)
// and At agree exactly, whatever the floating-point rounding.
func (p Pacer) Due(elapsed time.Duration, phase float64) int64 {
	if elapsed >= p.Duration {
		elapsed = p.Duration - 1
	}
	if elapsed < 0 {
		return 0
	}
	m := p.credit(elapsed) - phase
	var k int64
	if m >= 0 {
		k = int64(m) + 1
	}
	for k > 0 && p.At(k-1, phase) > elapsed {
		k--
	}
	for p.At(k, phase) <= elapsed {
		k++
	}
	return k
}

// Expected returns how many messages a connection has due in [from, to),
// on average over its phase: the rate integrated over that span of the
// timetable (a real number), nothing at or after Duration. Over n
// connections with phases spread over a period, n × Expected is what the
// timetable had due in the span: a second of the timeline that sent much
// less fell behind it.
func (p Pacer) Expected(from, to time.Duration) float64 {
	from, to = max(from, 0), min(to, p.Duration)
	if to <= from {
		return 0
	}
	return p.credit(to) - p.credit(from)
}

// Total returns how many messages a connection with phase sends in the
// whole phase.
func (p Pacer) Total(phase float64) int64 { return p.Due(p.Duration, phase) }

// Pace says when a connection with phase that has sent `sent` messages
// sends its next one: wait 0 means now (it is due, or overdue: a sender that
// fell behind catches up by sending while wait is 0), stop means the phase
// has no more messages for it.
func (p Pacer) Pace(elapsed time.Duration, sent int64, phase float64) (wait time.Duration, stop bool) {
	at := p.At(sent, phase)
	if at >= p.Duration {
		return 0, true
	}
	if at <= elapsed {
		return 0, false
	}
	return at - elapsed, false
}

// Cursor walks one loop's share of a timetable in due order. The loop's n
// connections have phases (first+j)/total for j = 0…n-1, increasing in j,
// so the events (round k, connection j) are due in lexicographic order:
// the loop needs no timer per connection, only the time of the event at
// the cursor.
type Cursor struct {
	Pacer Pacer
	First int // phase index of the loop's connection 0
	Total int // phase denominator: connections over every loop (and shard)
	Conns int // connections in this loop
	k     int64
	Index int
}

// Phase returns connection j's phase.
func (cu *Cursor) Phase(j int) float64 { return float64(cu.First+j) / float64(cu.Total) }

// At returns the scheduled time of the event at the cursor; at or after
// the pacer's Duration means the timetable is exhausted.
func (cu *Cursor) At() time.Duration { return cu.Pacer.At(cu.k, cu.Phase(cu.Index)) }

// Advance moves to the next event.
func (cu *Cursor) Advance() {
	cu.Index++
	if cu.Index == cu.Conns {
		cu.Index = 0
		cu.k++
	}
}

// Seek moves the cursor to the first event due after elapsed.
func (cu *Cursor) Seek(elapsed time.Duration) {
	if cu.Conns == 0 {
		return
	}
	x := cu.Pacer.credit(elapsed)
	k := int64(x)
	frac := x - float64(k)
	// First j with phase(j) > frac.
	j := int(math.Floor(frac*float64(cu.Total)-float64(cu.First))) + 1
	j = min(max(j, 0), cu.Conns)
	cu.k, cu.Index = k, j
	if cu.Index == cu.Conns {
		cu.k, cu.Index = cu.k+1, 0
	}
	// Rounding may put the estimate an event off either way: step back,
	// then forward past every event due by elapsed.
	for range 2 {
		if cu.Index > 0 {
			cu.Index--
		} else if cu.k > 0 {
			cu.k, cu.Index = cu.k-1, cu.Conns-1
		}
	}
	for cu.At() <= elapsed {
		cu.Advance()
	}
}
