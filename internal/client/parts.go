package client

import "fmt"

// What every kind's Split and Start repeat, stated once: a part is a
// copy of the phase's params with its share set (Parts), each loop starts
// its part (StartParts), a phase cannot ask for more connections than are
// open (PhaseEnv.Need), and a merged result's histograms exist even where
// no part recorded (EnsureHists). They run once per phase, never per
// message.

// Parts returns p's parts over n event loops or shards (Params.Split):
// part i is a copy of p that set adjusts, kept when set returns true and
// nil otherwise (that part has nothing to do). set runs for i = 0, 1, …
// in turn, so a part may begin where the one before it ended.
func Parts[P any, PP interface {
	*P
	Params
}](p PP, n int, set func(i int, q PP) bool) []Params {
	out := make([]Params, n)
	for i := range out {
		q := PP(new(P))
		*q = *p
		if set(i, q) {
			out[i] = q
		}
	}
	return out
}

// StartParts returns a phase's start funcs (PhasePlan.Starts): loop i
// runs start with its part of p (p.Split(ph.Open), the loops weighted by
// their open connections), on its own goroutine; a loop whose part is nil
// has nothing to do.
func StartParts[PP Params](ph *PhaseEnv, p PP, start func(l *Loop, q PP)) []func(*Loop) {
	starts := make([]func(*Loop), len(ph.Open))
	for i, part := range p.Split(ph.Open) {
		if part == nil {
			continue
		}
		q := part.(PP)
		starts[i] = func(l *Loop) { start(l, q) }
	}
	return starts
}

// Need returns an error when the phase asks for n connections by its key
// (concurrency, connections) and fewer are open over its loops.
func (ph *PhaseEnv) Need(key string, n int) error {
	if total := ph.OpenTotal(); n > total {
		return fmt.Errorf("client: %s: %s %d exceeds the %d open connections: open more in a connect phase or lower %s", ph.kind, key, n, total, key)
	}
	return nil
}

// EnsureHists gives each of hs that holds no histogram an empty one: what
// a PhasePlan.Done does for the histograms no part recorded into, so that
// every histogram of a result reads (and marshals) as one.
func EnsureHists(hs ...*Hist) {
	for _, h := range hs {
		if h.Histogram == nil {
			*h = NewHist()
		}
	}
}
