package client

import (
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/wsplan/wsplan/internal/units"
)

// NoSlack is a slack that turns coalescing off: every due message gets a
// wake-up of its own at its scheduled time (the behaviour before slack
// existed); a `slack: 0` key means it.
const NoSlack = time.Duration(-1)

// Defaults shared by the paced kinds (rate, broadcast, script), for code
// that has no key of its own to read them from. They are the defaults of
// the rate phase's keys (scenarios/rate's Send tags; a test there ties
// them).
const (
	// DefaultSlack is the timer slack of a paced sender when its params
	// give none: see PacedWake. Chosen by measurement (docs/results.md,
	// "Client cost"): at 1,000 connections × 10 msg/s it halves the
	// loop's wake-ups per message while keeping the added send lateness
	// (at most the slack) well inside the latency figures it is measured
	// against.
	DefaultSlack = 200 * time.Microsecond
	// DefaultPacedBatch is the most bytes one write carries when several
	// messages are due on a connection at once, as the predecessor's
	// 16 KiB.
	DefaultPacedBatch = 16 << 10
	// DefaultLateAfter is how late after its scheduled time a paced
	// message counts as late when a phase's late_after is 0.
	DefaultLateAfter = time.Millisecond
)

// PumpBytes bounds what one pump writes before the loop reads again: an
// overdriven phase must not starve the reads of its own echoes.
const PumpBytes = 1 << 20

// PacedWake is the part of an open-loop sender that decides when its loop
// wakes up, shared by every paced kind (rate, and through it capacity
// search; broadcast): the timetable itself is a Pacer and a cursor, the
// sending is the kind's.
//
// A sender that wakes for every due message pays a timer expiry, a context
// switch and an epoll_pwait2 per message; at sparse rates that is most of
// the client's cost. pacedWake bounds the wake-ups instead: after a pump at
// time t the loop sleeps until the next due message, but not before
// t+slack, and the pump then writes every message due by then together.
// A message thus leaves at most slack after its scheduled time (plus the
// host's own wake-up latency); its latency still counts from its own
// scheduled time, and lateness records exactly how late each one left.
// Sparse timetables (gaps longer than the slack) are not delayed at all.
type PacedWake struct {
	Slack int64 // ns; 0 = none
	last  int64 // loop clock of the last pump; math.MinInt64/2 before the first
	// Late is how late each message left: actual write − scheduled time,
	// ns (0 for one written early, which never happens).
	Late *hdrhistogram.Histogram
	// Batched: the phase's reads are batched (begin), until end.
	Batched bool
}

// SlackOf is the slack of a paced sender for a declared `slack` key: 0 is
// NoSlack, nil (no default applied) DefaultSlack.
func SlackOf(d *units.Duration) time.Duration {
	switch {
	case d == nil:
		return DefaultSlack
	case *d == 0:
		return NoSlack
	}
	return d.D()
}

// NewPacedWake returns the wake gate of a sender with slack (NoSlack or
// > 0; 0 is DefaultSlack).
func NewPacedWake(slack time.Duration) PacedWake {
	switch {
	case slack == 0:
		slack = DefaultSlack
	case slack < 0:
		slack = 0
	}
	return PacedWake{Slack: int64(slack), last: -1 << 62, Late: NewHistogram()}
}

// Read modes of a paced phase (its `reads` key).
const (
	// ReadsBatched: the loop sleeps through echo arrivals until its next
	// send window (at most rawWaitMax away) and reads them with the sends,
	// one wake-up for both; each read's latency ends at the kernel's
	// receive timestamp of its data (rxstamp.go), not at the read.
	ReadsBatched = "batched"
	// ReadsPrompt: the loop wakes for every arrival and a read's latency
	// ends at the read (the behaviour before batched reads).
	ReadsPrompt = "prompt"
)

// CheckReads validates a read mode ("" is the default, ReadsBatched); its
// error reads "must be batched or prompt, got …".
func CheckReads(mode string) error {
	switch mode {
	case "", ReadsBatched, ReadsPrompt:
		return nil
	}
	return fmt.Errorf("must be %s or %s, got %q", ReadsBatched, ReadsPrompt, mode)
}

// MergeReads merges the read modes of two parts of a phase: prompt where
// any part read promptly (a kernel refused timestamps), which is what the
// phase's figures then partly rest on.
func MergeReads(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || a == b:
		return a
	}
	return ReadsPrompt
}

// Begin starts the gate's phase on l over its connections conns with the
// read mode asked for, and returns the mode it runs with: batched reads
// fall back to prompt ones where the kernel refuses receive timestamps.
func (w *PacedWake) Begin(l *Loop, conns []*Conn, mode string) string {
	if mode == ReadsPrompt || !l.batchReads(conns) {
		return ReadsPrompt
	}
	w.Batched = true
	return ReadsBatched
}

// End ends the gate's phase on l: prompt reads again.
func (w *PacedWake) End(l *Loop) {
	if w.Batched {
		l.promptReads()
		w.Batched = false
	}
}

// Pumped notes a pump at now.
func (w *PacedWake) Pumped(now int64) { w.last = now }

// Wake returns when to wake for a message due at `due` (loop clock).
func (w *PacedWake) Wake(due int64) int64 { return max(due, w.last+w.Slack) }

// Sent records a message scheduled at `at` and written at now.
func (w *PacedWake) Sent(now, at int64) { Record(w.Late, max(0, now-at)) }
