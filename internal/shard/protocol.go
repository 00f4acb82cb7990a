// Package shard spreads the load-generating client over several processes.
//
// A shard is a `wsplan shard` child: one client.Client with its own fd limit
// and its own source addresses. The orchestrator's Group speaks to each shard
// in JSON lines over its stdin/stdout: a request per phase, progress lines
// while it runs, then a reply with the phase's result. Results merge exactly:
// counts are summed, HDR histograms merged (never percentiles averaged), and
// the phase's wall time is the longest shard's, since all shards start
// together.
//
// Data flow: engine → Group.Run(params) → the kind's Split over the shards'
// open connections → every shard at once (`{"op":"run","kind":...,
// "params":{...}}`) → each shard's client.Run → the kind's encoded result →
// the kind's Merge → scenarios. Neither side names a kind. A shard that
// dies fails the phase with its exit reason and log tail; the others are
// stopped cleanly; every shard's error reaches the phase's result.
package shard

import (
	"encoding/json"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/sysctl"
)

// Request is one line from the orchestrator to a shard.
type Request struct {
	Op     string          `json:"op"`               // "options", "run", "cancel", "close"
	Kind   string          `json:"kind,omitempty"`   // run: the phase kind, e.g. "echo"
	Params json.RawMessage `json:"params,omitempty"` // run: the kind's parameters (client.<Kind>Params as JSON)
	// Options (op "options", before the first run) carries the client
	// options the command line does not: the handshake's Hosts,
	// RequestURIs, Headers, Subprotocols and Origin, TLS, Compression and
	// the Protocol with its settings. Header values and a protocol's
	// password may be secrets, which is why they travel here and never in
	// the shard's argv (visible in ps). A remote shard's first
	// request (op "open") carries all of them, over its TLS link.
	Options  *client.Options `json:"options,omitempty"`
	IdleExit time.Duration   `json:"idle_exit,omitempty"` // open, probe: a remote shard exits this long after the orchestrator leaves (ns)
	// Live (run) asks for live counts on the progress lines (Reply.Live).
	Live bool `json:"live,omitempty"`

	recv time.Time // when the shard read the line, for Reply.Delay
}

// applyOptions copies the fields an "options" request carries into opts.
func applyOptions(opts *client.Options, o *client.Options) {
	opts.Hosts, opts.RequestURIs = o.Hosts, o.RequestURIs
	opts.Headers, opts.Subprotocols, opts.Origin = o.Headers, o.Subprotocols, o.Origin
	opts.TLS, opts.Compression = o.TLS, o.Compression
	opts.Protocol, opts.Reconnect = o.Protocol, o.Reconnect
}

// wireOptions is what Group sends in its "options" request: opts without
// what the command line carries.
func wireOptions(opts client.Options) *client.Options {
	o := &client.Options{}
	applyOptions(o, &opts)
	return o
}

// Reply is one line from a shard to the orchestrator: progress while a
// phase runs (Op "progress"), then the phase's result (Op "run").
type Reply struct {
	Op       string          `json:"op"`
	Done     int64           `json:"done,omitempty"`   // progress: units finished so far
	Total    int64           `json:"total,omitempty"`  // progress: units planned
	Conns    int             `json:"conns"`            // open connections after the phase
	Kind     string          `json:"kind,omitempty"`   // run: the phase kind
	Result   json.RawMessage `json:"result,omitempty"` // run: the kind's result (client.<Kind>Result as JSON), also when cut short
	Err      string          `json:"err,omitempty"`
	Ready    bool            `json:"ready,omitempty"` // first line: the shard is up
	Pid      int             `json:"pid,omitempty"`
	Warnings []string        `json:"warnings,omitempty"`

	// Delay is the time between reading the request and acting on it
	// (starting the phase, answering a probe), ns: with the link's round
	// trip, the orchestrator places each shard's phase start on its own
	// clock to measure the start skew.
	Delay time.Duration     `json:"delay,omitempty"`
	Host  *sysctl.HostFacts `json:"host,omitempty"` // hello: what a remote shard's host offers, for preflight
	// Cost is the shard's own CPU and memory over the request (run).
	Cost *Cost `json:"cost,omitempty"`
	// Live is the running phase's counts so far (progress, every
	// LiveInterval, when the request asked for them), with the shard
	// process's CPU time and memory.
	Live *client.LiveSnapshot `json:"live,omitempty"`
	// Reconnect is what the shard's reconnectors did over the phase
	// (run; client.Options.Reconnect), nil when nothing.
	Reconnect *client.ReconnectStats `json:"reconnect,omitempty"`
	// PeerCloses is every connection the server closed or reset since
	// the shard started (run; client.Client.PeerCloses), nil when none.
	PeerCloses *client.PeerCloses `json:"peer_closes,omitempty"`
}
