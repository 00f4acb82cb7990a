// Package live exports a run's figures while it runs: Prometheus
// exposition on --metrics-listen, and pushes (Prometheus remote write,
// OTLP over HTTP) on --metrics-push or the plan's metrics: key.
//
// Data flow: the engine begins a phase on the Hub with the phase's
// client.Live (the loops' message counters, bumped in their progress
// batches, their latencies merged once a second, and their connection
// counters, read as they are; a shard group fills it with every shard's
// snapshot from the shards' progress lines) → Hub.Samples reads
// every phase's counts at once (a finished phase keeps its final counts)
// → the Prometheus collector, the remote-write and the OTLP pushers
// render the same samples. Nothing here runs on an event loop: reading is
// a few atomic loads and one histogram conversion per collection.
//
// Labels are bounded: plan, server, phase, kind, shard (a shard's
// address or "shard N") and, on the connect failures, reason (one of
// client.ConnectReason's fixed set), never a connection, an id or a URL.
// Their values are masked (the plan's secrets, in every form) where they
// enter the hub, so no exporter sees a secret.
package live

import (
	"os"
	"sync"
	"sync/atomic"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/secret"
)

// Series names (Prometheus conventions: counters end in _total, units in
// the name). dashboards/wsplan.json queries them; a test checks it.
const (
	MessagesSent     = "wsplan_messages_sent_total"
	MessagesReceived = "wsplan_messages_received_total"
	MessagesFailed   = "wsplan_messages_failed_total"
	MessagesLost     = "wsplan_messages_lost_total"
	MessagesLate     = "wsplan_messages_late_total"
	MessagesUnsent   = "wsplan_messages_unsent_total"
	Connects         = "wsplan_connects_total"
	ConnectFailures  = "wsplan_connect_failures_total"
	Exchanges        = "wsplan_exchanges_total"
	ConnectionsOpen  = "wsplan_connections_open"
	Latency          = "wsplan_latency_seconds"
	ClientCPU        = "wsplan_client_cpu_seconds_total"
	ClientMemory     = "wsplan_client_memory_bytes"
	ServerCPU        = "wsplan_server_cpu_seconds_total"
	ServerMemory     = "wsplan_server_memory_bytes"
	PhaseRunning     = "wsplan_phase_running"
	Dropped          = "wsplan_metrics_dropped_total"
)

// Label names: the only ones any series carries.
const (
	LabelPlan   = "plan"
	LabelServer = "server"
	LabelPhase  = "phase"
	LabelKind   = "kind"
	LabelShard  = "shard"
	// LabelReason is why connections were given up
	// (wsplan_connect_failures_total only): client.ConnectReason's names.
	LabelReason = "reason"
)

// Labels are the only label names a series may carry (bounded: none
// grows with connections, messages or time).
var Labels = []string{LabelPlan, LabelServer, LabelPhase, LabelKind, LabelShard, LabelReason}

// Type is a series' type.
type Type int

// Series types.
const (
	Counter Type = iota
	Gauge
	Histogram
)

// Def is one exported series: its name, type and help.
type Def struct {
	Name string
	Type Type
	Help string
}

// Defs are every series the hub exports, in a fixed order.
var Defs = []Def{
	{MessagesSent, Counter, "messages sent (echo, rate, ping, broadcast publishes)"},
	{MessagesReceived, Counter, "messages received intact (echoes, pongs, deliveries)"},
	{MessagesFailed, Counter, "messages that failed (wrong payload, lost connection, timeout)"},
	{MessagesLost, Counter, "open-loop kinds: messages whose reply or delivery never came (at the phase's end)"},
	{MessagesLate, Counter, "paced kinds: messages sent later than late_after after their scheduled time"},
	{MessagesUnsent, Counter, "paced kinds: messages scheduled but never sent (at the phase's end)"},
	{Connects, Counter, "connections opened (reconnects too)"},
	{ConnectFailures, Counter, "connections given up (each failed reconnect attempt too), by reason"},
	{Exchanges, Counter, "scripts: exchanges completed (a request and its reply)"},
	{ConnectionsOpen, Gauge, "client connections open (at the phase's end once it ended)"},
	{Latency, Histogram, "latency of each message: round trip, or from the scheduled send for paced kinds"},
	{ClientCPU, Counter, "CPU time of the client processes (wsplan and its shards)"},
	{ClientMemory, Gauge, "resident memory of the client processes"},
	{ServerCPU, Counter, "CPU time of the server process, when wsplan can read it"},
	{ServerMemory, Gauge, "resident memory of the server process, when wsplan can read it"},
	{PhaseRunning, Gauge, "1 while the phase runs, 0 after"},
	{Dropped, Counter, "samples a push dropped (the receiver slow, down or refusing)"},
}

// Phase labels one phase of one server.
type Phase struct{ Server, Phase, Kind string }

// Hub holds every phase begun, for the collector and pushers.
type Hub struct {
	plan    string
	secrets *secret.Set
	proc    procstat.FS
	mu      sync.Mutex
	phases  []*phase
	dropped atomic.Int64
}

type phase struct {
	Phase
	live      *client.Live
	serverPID int // 0: not read
	open0     int64
	running   bool
	final     *client.LiveSnapshot // set when the phase ended
	shards    []client.LiveShard   // final per-shard snapshots
	open      int64                // at the end
	srvCPU    float64
	srvRSS    int64
}

// NewHub returns a hub for the runs of plan, whose secrets (nil: none)
// are masked in every label value.
func NewHub(plan string, secrets *secret.Set) *Hub {
	return &Hub{plan: secrets.Redact(plan), secrets: secrets}
}

// Begin starts exporting a phase: l is its live counts, serverPID the
// server process to read CPU and memory of (0: none), open the
// connections open at its start (exported until l follows the phase's
// client or its shards report). The returned end freezes the phase's
// final counts with the connections open at its end; a phase of the same
// labels begun again (a repeat) replaces it.
func (h *Hub) Begin(ph Phase, l *client.Live, serverPID, open int) (end func(open int)) {
	ph = Phase{Server: h.secrets.Redact(ph.Server), Phase: h.secrets.Redact(ph.Phase), Kind: h.secrets.Redact(ph.Kind)}
	p := &phase{Phase: ph, live: l, serverPID: serverPID, open0: int64(open), running: true}
	h.mu.Lock()
	replaced := false
	for i, q := range h.phases {
		if q.Phase == ph {
			h.phases[i], replaced = p, true
		}
	}
	if !replaced {
		h.phases = append(h.phases, p)
	}
	h.mu.Unlock()
	return func(open int) {
		s := h.clientNow(l.Snapshot())
		shards := l.Shards()
		cpu, rss := h.server(p)
		h.mu.Lock()
		defer h.mu.Unlock()
		p.final, p.shards, p.open, p.running = &s, shards, int64(open), false
		p.srvCPU, p.srvRSS = cpu, rss
	}
}

// AddDropped counts samples a pusher dropped.
func (h *Hub) AddDropped(n int) { h.dropped.Add(int64(n)) }

// DroppedTotal is the samples dropped so far.
func (h *Hub) DroppedTotal() int64 { return h.dropped.Load() }

// server reads the server process's CPU time and memory (0, 0 when it is
// not measured or gone).
func (h *Hub) server(p *phase) (float64, int64) {
	if p.serverPID <= 0 {
		return 0, 0
	}
	cpu, err := procstat.ProcessCPUTime(p.serverPID)
	if err != nil {
		return 0, 0
	}
	rss, _ := h.proc.RSS(p.serverPID) // 0 when it cannot be read
	return cpu.Seconds(), rss
}

// Sample is one series' value at one moment: Value, or Hist for a
// histogram. Labels are name/value pairs in Labels' order, empty values
// left out.
type Sample struct {
	Def    Def
	Labels [][2]string
	Value  float64
	Hist   client.NativeHist
}

// Samples reads every phase's series now: the merged ones (no shard
// label) and, with shards, each shard's.
func (h *Hub) Samples() []Sample {
	h.mu.Lock()
	phases := append([]*phase(nil), h.phases...)
	h.mu.Unlock()
	var out []Sample
	for _, p := range phases {
		out = append(out, h.phaseSamples(p)...)
	}
	out = append(out, Sample{Def: defOf(Dropped), Labels: [][2]string{{LabelPlan, h.plan}}, Value: float64(h.dropped.Load())})
	return out
}

// phaseSamples are one phase's series.
func (h *Hub) phaseSamples(p *phase) []Sample {
	h.mu.Lock()
	final, shards, running, open := p.final, p.shards, p.running, p.open
	srvCPU, srvRSS := p.srvCPU, p.srvRSS
	h.mu.Unlock()
	var s client.LiveSnapshot
	if final != nil {
		s = *final
	} else {
		s = h.clientNow(p.live.Snapshot())
		shards = p.live.Shards()
		open = p.open0 // until the phase's client is followed
		if s.HasOpen {
			open = s.Open
		}
		srvCPU, srvRSS = h.server(p)
	}
	base := [][2]string{{LabelPlan, h.plan}, {LabelServer, p.Server}, {LabelPhase, p.Phase.Phase}, {LabelKind, p.Kind}}
	out := counts(base, s)
	run := 0.0
	if running {
		run = 1
	}
	out = append(out,
		Sample{Def: defOf(ConnectionsOpen), Labels: base, Value: float64(open)},
		Sample{Def: defOf(PhaseRunning), Labels: base, Value: run})
	if p.serverPID > 0 {
		out = append(out,
			Sample{Def: defOf(ServerCPU), Labels: base, Value: srvCPU},
			Sample{Def: defOf(ServerMemory), Labels: base, Value: float64(srvRSS)})
	}
	for _, sh := range shards {
		if sh.Name == "" {
			continue // a shard that sent no snapshot yet
		}
		out = append(out, counts(append(base[:len(base):len(base)], [2]string{LabelShard, h.secrets.Redact(sh.Name)}), sh.LiveSnapshot)...)
	}
	return out
}

// clientNow adds this process's CPU time and memory to s (the shards'
// own, when there are shards): the client's cost so far.
func (h *Hub) clientNow(s client.LiveSnapshot) client.LiveSnapshot {
	if cpu, err := procstat.ProcessCPUTime(0); err == nil {
		s.CPUSeconds += cpu.Seconds()
	}
	rss, _ := h.proc.RSS(os.Getpid()) // 0 when it cannot be read
	s.RSS += rss
	return s
}

// counts are the series of one snapshot: the connect failures one per
// reason, every reason (a counter that appears at 0 gets its first
// increase counted by rate()).
func counts(labels [][2]string, s client.LiveSnapshot) []Sample {
	v := func(name string, x float64) Sample { return Sample{Def: defOf(name), Labels: labels, Value: x} }
	out := []Sample{
		v(MessagesSent, float64(s.Sent)),
		v(MessagesReceived, float64(s.Recv)),
		v(MessagesFailed, float64(s.Failed)),
		v(MessagesLost, float64(s.Lost)),
		v(MessagesLate, float64(s.Late)),
		v(MessagesUnsent, float64(s.Unsent)),
		v(Connects, float64(s.Connects)),
		v(Exchanges, float64(s.Exchanges)),
		v(ClientCPU, s.CPUSeconds),
		v(ClientMemory, float64(s.RSS)),
		{Def: defOf(Latency), Labels: labels, Hist: s.Latency},
	}
	for r := range client.NumConnectReasons {
		l := append(labels[:len(labels):len(labels)], [2]string{LabelReason, r.String()})
		out = append(out, Sample{Def: defOf(ConnectFailures), Labels: l, Value: float64(s.ConnectFailed[r])})
	}
	return out
}

func defOf(name string) Def {
	for _, d := range Defs {
		if d.Name == name {
			return d
		}
	}
	panic("live: no series " + name)
}
