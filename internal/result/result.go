// Package result is the data a run produces: one Result per (server, phase),
// the host facts, and the assertion outcomes. It is what `--json` writes and
// what `--baseline`/`wsplan compare` read back; reports are pure functions of
// it.
package result

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
)

// Schema is the version of the JSON document; bump it on incompatible change.
const Schema = 1

// Run is the whole document.
type Run struct {
	Schema     int         `json:"schema"`
	Plan       PlanInfo    `json:"plan"`
	Host       Host        `json:"host"`
	Started    time.Time   `json:"started"`
	Finished   time.Time   `json:"finished"`
	Results    []Result    `json:"results"`
	Assertions []Assertion `json:"assertions"`
	// Interrupted is true when the run was stopped (Ctrl-C) before the end;
	// Results then hold what was measured until then.
	Interrupted bool `json:"interrupted,omitempty"`
	// Aborted names the assertion (`abort: true`) that stopped the run early.
	Aborted string `json:"aborted,omitempty"`
	// Wsplan is the build that measured the run and the versions of the
	// framework libraries it measured; nil in files written before it existed.
	Wsplan *Provenance `json:"wsplan,omitempty"`
}

// PlanInfo identifies the plan that ran.
type PlanInfo struct {
	Name        string            `json:"name"`
	File        string            `json:"file"`
	Description string            `json:"description,omitempty"`
	Vars        map[string]string `json:"vars,omitempty"`
	// Count is how many times each server's phases ran (--count,
	// `repeat:`); 0 or 1 = once.
	Count int `json:"count,omitempty"`
	// Matrix is the plan's `matrix:` after --set and --only-matrix: each
	// var with the values the run went through, in plan order.
	Matrix []MatrixVar `json:"matrix,omitempty"`
}

// MatrixVar is one var of a matrix and its values, as text.
type MatrixVar struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// Host is the machine the run was measured on.
type Host struct {
	Kernel     string            `json:"kernel"`
	CPUModel   string            `json:"cpu_model"`
	Cores      int               `json:"cores"`
	MemTotal   int64             `json:"mem_total"`
	Go         string            `json:"go"`
	Sysctl     map[string]string `json:"sysctl,omitempty"`
	CPUIdle    string            `json:"cpuidle,omitempty"` // how idle CPUs wait (sysctl.CPUIdle), e.g. "haltpoll, polls up to 200µs before halting"
	NoFileSoft uint64            `json:"nofile_soft"`
	NoFileHard uint64            `json:"nofile_hard"`
	ServerCPUs string            `json:"server_cpus"`
	ClientCPUs string            `json:"client_cpus"`
}

// Result is one (server, phase) outcome.
type Result struct {
	Server    string         `json:"server"`
	Framework string         `json:"framework"`
	Phase     string         `json:"phase"` // phase name (the kind unless renamed)
	Kind      string         `json:"kind"`  // phase kind
	OK        bool           `json:"ok"`
	Error     string         `json:"error,omitempty"`
	Warnings  []string       `json:"warnings,omitempty"`
	Metrics   metrics.Values `json:"metrics"`
	// Throughput names the metric that says how fast the phase went (its
	// kind's headline, e.g. echo's tps), which picks a repeat's timeline and
	// the charts' throughput; "" when the kind declares none and in files
	// written before it existed.
	Throughput string `json:"throughput,omitempty"`
	// StartSkew is the spread of the moments remote client shards started
	// the phase, on the orchestrator's clock (ns); absent for a client on
	// the orchestrator's host.
	StartSkew time.Duration `json:"start_skew,omitempty"`
	// ServerLog is the tail of the server's log when the server failed.
	ServerLog string `json:"server_log,omitempty"`
	// Timeline is the phase second by second, for plotting (rate and echo phases).
	Timeline []Point `json:"timeline,omitempty"`
	// Histogram is the phase's latency histogram (ns, merged over every
	// client loop and shard: exact) as the base64 of its HdrHistogram V2
	// compressed encoding, for the latency spectrum up to 99.999%; phases
	// that measure latency (connect, echo, rate, ping, broadcast) store it, "" in
	// others and in files written before it existed.
	Histogram string `json:"histogram,omitempty"`
	// Steps are the measured steps of a phase that runs several (a
	// search), in the order they ran.
	Steps []Step `json:"steps,omitempty"`
	// Stop says why such a phase ended, e.g. "slo failed at 40000 msg/s;
	// bisected to within 5%", "client-bound at 60000 msg/s: capacity ≥
	// 60000"; "" for other phases.
	Stop string `json:"stop,omitempty"`
	// ServerResources is how the server's CPU and memory were read: one of
	// the Resources* constants; "" in files written before it existed
	// (read as ResourcesTree's single-process predecessor). With
	// ResourcesNone the server's metrics (metrics.ServerResource) are
	// absent from Metrics and reports show them as n/a.
	ServerResources string `json:"server_resources,omitempty"`
	// Repeat is which of the run's repeats (--count, `repeat:`) measured
	// this result, from 1; 0 when the run measured each server once.
	Repeat int `json:"repeat,omitempty"`
	// Vars is the matrix combination (`matrix:`) this result was measured
	// with, var name → value as text; nil without a matrix.
	Vars map[string]string `json:"vars,omitempty"`
	// N is the number of repeats a median result (Collapse) was taken
	// over; 0 in a measured result.
	N int `json:"n,omitempty"`
	// Spread is, in a median result of several repeats, each numeric
	// metric's relative spread: the farthest repeat from the median, over
	// the median (0.03 = ±3%). Nil in a measured result.
	Spread map[string]float64 `json:"spread,omitempty"`
	// Repeats holds, in a median result, the measured repeats' metrics in
	// repeat order; assertions see them as repeats.<metric>. Not written.
	Repeats []metrics.Values `json:"-"`
	// Info holds what the phase learned that is not a number: a connect
	// phase's negotiated "subprotocol", "extensions" (permessage-deflate
	// parameters) and "tls_version".
	Info map[string]string `json:"info,omitempty"`
	// Detail is the phase kind's own record (conformance: every case with
	// its verdict), as the kind wrote it.
	Detail json.RawMessage `json:"detail,omitempty"`
	// Soak is the phase's resource series (server RSS, fds, threads; the
	// client's RSS and goroutines), for a kind whose load is constant
	// (scenarios.Kind.Soak); nil for others.
	Soak *Soak `json:"soak,omitempty"`
	// ClientShards are the client shards' own figures over the phase (each
	// shard measures its process itself); the client_* metrics are their
	// sum with this process's. Absent without shards.
	ClientShards []ClientShard `json:"client_shards,omitempty"`
}

// ClientShard is one client shard's own CPU and memory over a phase.
type ClientShard struct {
	Name       string  `json:"name"`        // a remote shard's address, or "shard N"
	CPUAvg     float64 `json:"cpu_avg"`     // percent of one core
	WaitAvg    float64 `json:"wait_avg"`    // percent of one core runnable but waiting for a CPU
	CPUSeconds float64 `json:"cpu_seconds"` // user + system
	MemMax     int64   `json:"mem_max"`     // peak resident set, bytes
	Usable     int     `json:"usable_cpus"` // cores its client can keep busy
	// Bound is true when this shard saturated its usable cores (and the
	// server was not busier still): the row is client-bound because of it.
	Bound bool `json:"bound,omitempty"`
}

// How a server's resources were read (Result.ServerResources).
const (
	ResourcesTree    = "tree"        // a process wsplan started, with its descendants
	ResourcesPID     = "pid"         // a url: server's pid: or pid_file:, with its descendants
	ResourcesMetrics = "metrics_url" // a url: server's Prometheus endpoint
	ResourcesNone    = "none"        // a url: server without them: n/a
)

// NoServerResources reports whether the server's resources were not
// measured, so its resource metrics are n/a rather than missing.
func (r *Result) NoServerResources() bool { return r.ServerResources == ResourcesNone }

// Point is one second of a phase's timeline: entry T covers [T s, T+1 s)
// from the start of the phase (its drain included). Messages count in the
// second they were written, echoes and their latencies in the second they
// completed. The latencies of a second are exact (merged histograms, over
// every client loop and shard), not averages.
type Point struct {
	T    int           `json:"t"`    // seconds since the start of the phase
	Sent int64         `json:"sent"` // messages written in this second
	Recv int64         `json:"recv"` // echoes completed intact in this second
	Late int64         `json:"late"` // messages written late in this second
	P50  time.Duration `json:"p50"`  // latency of this second's echoes, ns; 0 when none
	P99  time.Duration `json:"p99"`  // ns
	Max  time.Duration `json:"max"`  // ns
}

// Step is one measured step of a search: an open loop at one target rate
// over one number of connections, and its verdict against the SLO.
type Step struct {
	Target    float64       `json:"target"`     // messages per second asked for, over every connection
	Conns     int           `json:"conns"`      // connections that sent
	Achieved  float64       `json:"achieved"`   // messages written per second (sent / duration)
	Scheduled int64         `json:"scheduled"`  // messages the timetable had due
	Sent      int64         `json:"sent"`       // messages written
	Recv      int64         `json:"recv"`       // echoes received intact
	Late      int64         `json:"late"`       // written later than late_after after their schedule, or never
	Lost      int64         `json:"lost"`       // written, never echoed
	Failed    int64         `json:"failed"`     // echoes received corrupt
	P50       time.Duration `json:"p50"`        // ns, from the scheduled send time
	P99       time.Duration `json:"p99"`        // ns
	P999      time.Duration `json:"p999"`       // ns
	ServerCPU float64       `json:"server_cpu"` // server CPU over the step, percent of one core
	ClientCPU float64       `json:"client_cpu"` // client CPU over the step, percent of one core
	// ClientBound is set when the client's CPU was saturated during the
	// step: the step measured the client, and the search stopped there.
	ClientBound bool `json:"client_bound"`
	// Bisect is set for the steps between the last passing and the first
	// failing rate.
	Bisect bool `json:"bisect,omitempty"`
	// Verdict is "pass", "fail" (the SLO did not hold; Why says which
	// figures) or "client-bound".
	Verdict string `json:"verdict"`
	Why     string `json:"why,omitempty"`
}

// Assertion is one evaluated assertion.
type Assertion struct {
	Server string         `json:"server"`
	Phase  string         `json:"phase"`
	Name   string         `json:"name,omitempty"`
	Expr   string         `json:"expr"`
	Pass   bool           `json:"pass"`
	Error  string         `json:"error,omitempty"`
	Values map[string]any `json:"values,omitempty"`
	// Vars is the matrix combination of the result it was checked on.
	Vars map[string]string `json:"vars,omitempty"`
}

// Phases returns the run's phase names in order of first appearance (the
// order of its tables and charts).
func (r *Run) Phases() []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range r.Results {
		if !seen[x.Phase] {
			seen[x.Phase] = true
			out = append(out, x.Phase)
		}
	}
	return out
}

// Find returns the result for a server and phase, or nil; the first one
// when the run has repeats or a matrix (see FindVars).
func (r *Run) Find(server, phase string) *Result {
	for i := range r.Results {
		if r.Results[i].Server == server && r.Results[i].Phase == phase {
			return &r.Results[i]
		}
	}
	return nil
}

// FindVars returns the first result for a server and phase measured with
// the matrix combination vars (nil = none), or nil.
func (r *Run) FindVars(vars map[string]string, server, phase string) *Result {
	for i := range r.Results {
		x := &r.Results[i]
		if x.Server == server && x.Phase == phase && SameVars(x.Vars, vars) {
			return x
		}
	}
	return nil
}

// WriteFile writes the run as indented JSON.
func (r *Run) WriteFile(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Write writes the run as WriteFile does, to w, in one Write call.
func (r *Run) Write(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadFile reads a run written by WriteFile. defs gives the definitions of each
// result's metrics (by kind and names) so values get their Go types back.
func ReadFile(path string, defs func(kind string, v metrics.Values) []metrics.Def) (*Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%s: schema %d, this wsplan reads schema %d", path, r.Schema, Schema)
	}
	for i := range r.Results {
		if r.Results[i].Metrics == nil {
			r.Results[i].Metrics = metrics.Values{}
		}
		r.Results[i].Metrics.Normalize(defs(r.Results[i].Kind, r.Results[i].Metrics))
	}
	return &r, nil
}
