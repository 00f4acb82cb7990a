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
