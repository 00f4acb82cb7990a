// Package client is wsplan's load-generating WebSocket client: an event-driven
// engine (epoll loops on locked OS threads, no goroutine per connection) that
// opens connections, drives closed-loop echoes and open-loop rates, and records
// latencies into HDR histograms. It is designed for 1M connections across
// several processes: per connection it keeps only a small struct while idle.
//
// Phases in scenarios/ call it through the methods below; shards (separate
// processes) run the same methods and send their results back, which merge
// exactly (histograms merged, counts summed).
package client

import (
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Options configure a Client. Zero values are defaults.
type Options struct {
	// Targets are the server addresses, host:port. Connection i goes to
	// Targets[i % len(Targets)].
	Targets []string
	// Path is the request path of the upgrade; default "/ws".
	Path string
	// SourceAddrs are local IPs to bind, used round-robin; empty = the
	// kernel picks. The k-th connection to a target binds the k-th
	// address (modulo their number) of the target's family; every
	// target's family needs at least one.
	SourceAddrs []string
	// Loops is the number of event loops, each on its own locked OS thread;
	// default 1. Run the process with GOMAXPROCS >= Loops+1: with no idle
	// P, the runtime hands a loop's P to another thread whenever its
	// epoll_wait blocks for more than ~20 µs, and wakes it again after
	// (measured over 500,000 echoes on 5,000 connections: 68k context
	// switches at GOMAXPROCS=1, 26k at GOMAXPROCS=2).
	Loops int
	// NoDelay sets TCP_NODELAY on client sockets; default false here, the
	// plan's defaults.nodelay (true) is passed in by the engine.
	NoDelay bool
}

// Progress is read by the live progress line while a phase runs.
type Progress struct {
	Done  atomic.Int64 // units finished (connections, echoes, messages)
	Total atomic.Int64 // units planned
}

// ConnectParams configure a connect phase.
type ConnectParams struct {
	Connections int           // to open, > 0
	Concurrency int           // handshakes in progress at once, > 0
	Timeout     time.Duration // per attempt (TCP connect + upgrade), > 0
	Retries     int           // extra attempts per connection after a failure
}

// ConnectResult is what a connect phase measured.
type ConnectResult struct {
	Total   int64                   // connections asked for
	Success int64                   // open at the end
	Failed  int64                   // gave up after all retries
	Retried int64                   // attempts that failed and were retried
	Used    time.Duration           // wall time of the phase
	Latency *hdrhistogram.Histogram // successful handshakes: TCP connect start to 101 response, ns
	Errors  map[string]int64        // failure reason -> count, over every failed attempt (retried or not)
	Stopped string                  // why the phase ended early: StopCanceled, StopClosed; "" = it ran to its end
}

// EchoParams configure a closed-loop echo phase.
type EchoParams struct {
	Total       int64         // echoes to measure, > 0
	Concurrency int           // messages in flight, each on its own connection; <= open connections
	Payload     int           // bytes per message, >= 0
	Warmup      int64         // echoes before measuring starts (not counted)
	Text        bool          // send text frames (default binary)
	Verify      bool          // compare every echoed payload byte for byte
	Timeout     time.Duration // max wait for one echo; a late echo counts as failed and its connection is dropped; 0 = 10s
	Deadline    time.Duration // max wall time for the phase; 0 = none
}

// EchoResult is what an echo phase measured.
type EchoResult struct {
	Total   int64 // echoes asked for
	Success int64
	Failed  int64 // wrong payload, closed connection, timeout
	Used    time.Duration
	Latency *hdrhistogram.Histogram // ns, successful echoes
	Errors  map[string]int64        // failure reason -> count
	Stopped string                  // why the phase ended early: StopCanceled, StopDeadline, StopClosed, StopNoConnections; "" = it ran to its end
}

// Histogram bounds shared by every latency histogram, so histograms of
// different processes merge exactly.
const (
	HistMin     = 1                        // 1 ns
	HistMax     = int64(120 * time.Second) // longest recordable latency
	HistSigFigs = 3
)

// NewHistogram returns an empty latency histogram with the shared bounds.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(HistMin, HistMax, HistSigFigs)
}

// RateParams configure an open-loop rate phase (Client.Rate).
type RateParams struct {
	Duration time.Duration // sending time, > 0
	Rate     float64       // messages per connection per second, > 0 (fractions allowed)
	Payload  int           // bytes per message, >= MarkerLen
	// Connections is how many open connections send; 0 = all open ones.
	Connections int
	// Ramp is the time to reach Rate linearly from 0; 0 = none; <= Duration.
	Ramp time.Duration
	// Batch is the most bytes one write carries when several messages are
	// due on a connection at once; 0 = DefaultRateBatch. A message larger
	// than Batch is one write of its own.
	Batch int
	// MaxInflight bounds the messages sent and not yet echoed on one
	// connection; 0 = DefaultMaxInflight(Rate). A message due while its
	// connection is at the bound (or its socket is not writable) waits and
	// leaves late, with its original scheduled time.
	MaxInflight int
	// MaxInflightBytes bounds the payload bytes sent and not yet echoed
	// over every connection of the phase (split over loops and shards in
	// proportion to their connections), so an overloaded server cannot
	// make the client fill the kernel's socket memory; messages due beyond
	// it wait like those beyond MaxInflight. 0 = DefaultMaxInflightBytes.
	MaxInflightBytes int64
	// Drain is how long to wait after Duration for echoes still due; 0 =
	// DefaultRateDrain.
	Drain time.Duration
	// LateAfter: a message written more than LateAfter after its scheduled
	// time counts as late; 0 = DefaultLateAfter.
	LateAfter time.Duration
	// Verify compares every echoed payload byte after the marker (the
	// marker itself is always checked).
	Verify bool
	// PhaseFirst and PhaseTotal place this client's connections in the
	// timetable: its connection j gets phase (PhaseFirst+j)/PhaseTotal of
	// a period. Zero values = j/Connections. Shards set them so that the
	// connections of every shard spread over one period together.
	PhaseFirst, PhaseTotal int
}

// RateResult is what a rate phase measured. Every message carries a
// MarkerLen-byte marker (its number on its connection and its scheduled
// send time); latency runs from the scheduled time to the complete echo, so
// a message that left late carries its lateness into its latency.
type RateResult struct {
	Conns     int   // connections that took part
	Scheduled int64 // messages the timetable had due before Duration on them
	Sent      int64 // messages written
	Recv      int64 // echoes received intact (marker, length, opcode, payload)
	Failed    int64 // echoes received but wrong, or messages nobody sent
	Late      int64 // messages written more than LateAfter after their scheduled time
	Unsent    int64 // Scheduled - Sent: due, but never written before Duration ended
	BytesSent int64 // payload bytes written
	BytesRecv int64 // payload bytes received
	Used      time.Duration
	Drain     time.Duration           // time after Duration spent waiting for echoes
	Latency   *hdrhistogram.Histogram // ns, intact echoes, from the scheduled send time
	// Seconds is the timeline: entry i covers [i s, i+1 s) from the start
	// of the phase (drain included). Sends count in the second they were
	// written, echoes and their latencies in the second they completed.
	Seconds []RateSecond
	Errors  map[string]int64 // failure reason -> count (failed echoes, lost connections)
	Stopped string           // StopCanceled, StopClosed, StopNoConnections; "" = it ran to its end
}

// Lost returns the messages sent whose echo never came: Sent - Recv - Failed.
func (r RateResult) Lost() int64 { return r.Sent - r.Recv - r.Failed }

// RateSecond is one second of a rate phase's timeline.
type RateSecond struct {
	Sent, Recv, Late int64
	// Latency holds the latencies of the echoes completed in this second,
	// with the bounds of NewHistogram, so seconds merge exactly over
	// loops and shards; nil when none completed.
	Latency *hdrhistogram.PackedHistogram
}

// HoldParams configure a hold phase (Client.Hold).
type HoldParams struct {
	Duration time.Duration // > 0
	// Ping, when > 0, makes every open connection send a ping every Ping,
	// the connections' pings spread evenly over the interval. A connection
	// that falls behind sends one ping, not the ones it missed. 0 = idle.
	Ping time.Duration
}

// HoldResult is what a hold phase measured.
type HoldResult struct {
	Conns   int64 // open at the start
	Alive   int64 // open at the end
	Pings   int64 // pings sent
	Pongs   int64 // pongs received (during the hold and up to DefaultHoldDrain after it)
	Used    time.Duration
	Errors  map[string]int64 // why connections dropped -> count
	Stopped string           // StopCanceled, StopClosed; "" = it ran to its end
}
