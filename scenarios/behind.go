package scenarios

import (
	"fmt"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
)

// Who could not keep up with a timetable. A kind that sends on one (rate,
// search's steps, broadcast) says when its sending was behind
// (Outcome.Behind, from its per-second timeline); the engine reads both
// sides' CPU over those seconds alone (metrics.BehindDefs: the drain and
// the seconds that kept up left out, which a whole window's average
// includes); KeptUp names the side from those figures, the same way for
// every such kind.

// Open-loop thresholds, shared by the paced kinds (rate and a search's
// steps, broadcast).
const (
	// RateShortfall: an achieved rate below this share of the timetable's
	// is worth a warning (and fails a search's step).
	RateShortfall = 0.98
	// RateLateShare: late messages above this share of the timetable are
	// worth a warning (a few late sends on a loaded host are not).
	RateLateShare = 0.01
)

// BoundShare is the share of a side's capacity (the server's pinned cores,
// the client's usable ones) at which it could not keep up: the engine's
// client_bound and server_bound mark (a test ties them).
const BoundShare = 0.9

// boundMargin is how far the client's share may sit below the server's and
// still be the one that could not keep up, both near saturation (as
// client_bound decides).
const boundMargin = 0.05

// Span is a stretch of wall-clock time in a phase.
type Span struct{ From, To time.Time }

// side is who could not keep up with a timetable (whoBehind).
type side int

const (
	sideUnknown   side = iota // no CPU figures: no engine sampled the phase
	sideClient                // the client's CPU was saturated
	sideServer                // the server's CPU was saturated
	sideNeither               // neither side's CPU was: the network, the kernel, another limit
	sideNotClient             // the client's CPU was not saturated; the server's is not known
)

// SendingSpan is a phase's sending time from start, the drain left out;
// nil when it sent for no time.
func SendingSpan(start time.Time, used time.Duration) []Span {
	if used <= 0 {
		return nil
	}
	return []Span{{start, start.Add(used)}}
}

// waitShown is the run-queue wait (percent of one core) worth saying.
const waitShown = 5

// KeptUp names the side that could not keep up with a timetable, from the
// CPU each side wanted while sending was behind (metrics.BehindDefs, which
// the engine writes: the CPU it used and the time it waited for one)
// against its capacity: the client when its share of its usable cores
// (client_cores) reached BoundShare and was not clearly below the
// server's share of its pinned cores (server_cpus); else the server when
// its share did; else neither, naming what is left (the network, the
// kernel, a limit of the server's other than CPU). A side that reached
// the mark by waiting for CPUs others held is said so. A server whose
// cores or CPU are not known is never named, nor is it cleared: then only
// the client's figure speaks. It never says "the client or the server".
func KeptUp(m metrics.Values) string {
	_, why := whoBehind(m)
	return why
}

// BoundBehind reports the side KeptUp names: the client or the server
// could not keep up (at most one is true; neither when neither side's CPU
// reached the mark or it is not known).
func BoundBehind(m metrics.Values) (client, server bool) {
	s, _ := whoBehind(m)
	return s == sideClient, s == sideServer
}

// load is one side's CPU while behind: used and waited for, percent of
// one core, against its cores (0: not known).
type load struct {
	cpu, wait float64
	cores     int64
}

// share is the part of its cores the side wanted; -1 when they are not
// known.
func (l load) share() float64 {
	if l.cores <= 0 {
		return -1
	}
	return (l.cpu + l.wait) / (100 * float64(l.cores))
}

// starved reports whether the side reached the mark only by waiting.
func (l load) starved() bool { return l.cpu/(100*float64(max(1, l.cores))) < BoundShare }

func (l load) String() string {
	s := fmt.Sprintf("%.0f%%", l.cpu)
	if l.wait >= waitShown {
		s += fmt.Sprintf(" (+%.0f%% waiting for a CPU)", l.wait)
	}
	if l.cores > 0 {
		s += " of " + cores(l.cores)
	}
	return s
}

// whoBehind is KeptUp with the side it names.
func whoBehind(m metrics.Values) (side, string) {
	ccpu, ok := m[metrics.ClientCPUBehind].(float64)
	if !ok {
		return sideUnknown, "who could not keep up is not known: no CPU was sampled while sending"
	}
	when := "while behind"
	if m.Dur(metrics.Behind) == 0 {
		when = "while sending" // it never was behind by a whole second's measure
	}
	cl := load{cpu: ccpu, wait: m.Float(metrics.ClientCPUWaitBehind), cores: max(1, m.Int(metrics.ClientCores))}
	scpu, measured := m[metrics.CPUBehind].(float64)
	sv := load{cpu: scpu, wait: m.Float(metrics.CPUWaitBehind), cores: m.Int(metrics.ServerCPUs)}
	if !measured {
		sv.cores = 0
	}
	server := "server " + sv.String()
	switch {
	case !measured:
		server = "the server's CPU is not measured"
	case sv.cores == 0:
		server += ", its cores not known"
	}
	held := func(l load) string {
		if l.starved() {
			return ": other work held its CPUs"
		}
		return ""
	}
	switch {
	case cl.share() >= BoundShare && cl.share() >= sv.share()-boundMargin:
		return sideClient, fmt.Sprintf("the client could not keep up (CPU %s %s; %s)%s", cl, when, server, held(cl))
	case sv.share() >= BoundShare:
		return sideServer, fmt.Sprintf("the server could not keep up (CPU %s %s; client %s)%s", sv, when, cl, held(sv))
	case sv.share() >= 0:
		why := fmt.Sprintf("neither side was CPU-bound %s (%s, client %s): the network, the kernel, or a limit of the server's other than CPU", when, server, cl)
		if sv.cores > 1 && scpu >= 100*BoundShare && scpu < 100*(2-BoundShare) {
			why += fmt.Sprintf(" (it kept about one of its %d cores busy: one thread?)", sv.cores)
		}
		return sideNeither, why
	}
	return sideNotClient, fmt.Sprintf("the client was not CPU-bound %s (CPU %s; %s): the server, the network or the kernel could not keep up", when, cl, server)
}

// cores says n cores.
func cores(n int64) string {
	if n == 1 {
		return "1 core"
	}
	return fmt.Sprintf("%d cores", n)
}
