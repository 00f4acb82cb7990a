package procstat

import (
	"sort"
	"time"
)

// CPUPoint is one reading of a process's CPU: its cumulative CPU time
// (user + system) and run-queue wait (RunQueueWait: runnable, waiting for
// a CPU; 0 when not read) at At.
type CPUPoint struct {
	At        time.Time
	CPU, Wait time.Duration
}

// Series is a window's CPU readings in time order (Start, every tick,
// Stop), kept so that the CPU of any part of the window can be read after
// it ended (Over): a paced phase's side that could not keep up is judged
// from the seconds its sending was behind, not from the whole window.
type Series []CPUPoint

// Over returns the CPU time spent and the run-queue wait between from
// and to, and the wall time of [from, to] the readings cover. Cumulative
// times are taken as linear between two readings; before the first and
// after the last one nothing is known, so that part of [from, to] is left
// out of all three. A cumulative time that went down (a descendant that
// left a process tree, a thread that exited) counts as none.
func (s Series) Over(from, to time.Time) (cpu, wait, wall time.Duration) {
	if len(s) < 2 {
		return 0, 0, 0
	}
	first, last := s[0].At, s[len(s)-1].At
	if from.Before(first) {
		from = first
	}
	if to.After(last) {
		to = last
	}
	if !to.After(from) {
		return 0, 0, 0
	}
	a, b := s.at(from), s.at(to)
	return max(0, b.CPU-a.CPU), max(0, b.Wait-a.Wait), to.Sub(from)
}

// at is the reading at t, within the series' span: linear between the
// readings around it.
func (s Series) at(t time.Time) CPUPoint {
	// i is the first reading after t: t lies in [s[i-1].At, s[i].At].
	i := sort.Search(len(s), func(i int) bool { return s[i].At.After(t) })
	switch {
	case i == 0:
		return s[0]
	case i == len(s):
		return s[len(s)-1]
	}
	a, b := s[i-1], s[i]
	span := b.At.Sub(a.At)
	if span <= 0 {
		return b
	}
	frac := float64(t.Sub(a.At)) / float64(span)
	lerp := func(x, y time.Duration) time.Duration { return x + time.Duration(frac*float64(y-x)) }
	return CPUPoint{At: t, CPU: lerp(a.CPU, b.CPU), Wait: lerp(a.Wait, b.Wait)}
}
