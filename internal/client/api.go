// Package client is wsplan's load-generating WebSocket client: an event-driven
// engine (epoll loops on locked OS threads, no goroutine per connection) that
// opens connections, drives closed-loop echoes and open-loop rates, and records
// latencies into HDR histograms. It is designed for 1M connections across
// several processes: per connection it keeps only a small struct while idle.
//
// Phases in scenarios/ call it through Client.Run with a kind's Params
// (kind.go describes the contract a phase kind fulfils); shards (separate
// processes) run the same kinds and send their results back as JSON, which
// merge exactly through the kind's Result.Merge (histograms merged, counts
// summed).
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
