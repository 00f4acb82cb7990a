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
}

// Host is the machine the run was measured on.
type Host struct {
	Kernel     string            `json:"kernel"`
	CPUModel   string            `json:"cpu_model"`
	Cores      int               `json:"cores"`
	MemTotal   int64             `json:"mem_total"`
	Go         string            `json:"go"`
	Sysctl     map[string]string `json:"sysctl,omitempty"`
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
	// StartSkew is the spread of the moments remote client shards started
	// the phase, on the orchestrator's clock (ns); absent for a client on
	// the orchestrator's host.
	StartSkew time.Duration `json:"start_skew,omitempty"`
	// ServerLog is the tail of the server's log when the server failed.
	ServerLog string `json:"server_log,omitempty"`
	// Timeline is the phase second by second, for plotting (rate phases).
	Timeline []Point `json:"timeline,omitempty"`
	// ServerResources is how the server's CPU and memory were read: one of
	// the Resources* constants; "" in files written before it existed
	// (read as ResourcesTree's single-process predecessor). With
	// ResourcesNone the server's metrics (metrics.ServerResource) are
	// absent from Metrics and reports show them as n/a.
	ServerResources string `json:"server_resources,omitempty"`
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

// Assertion is one evaluated assertion.
type Assertion struct {
	Server string         `json:"server"`
	Phase  string         `json:"phase"`
	Name   string         `json:"name,omitempty"`
	Expr   string         `json:"expr"`
	Pass   bool           `json:"pass"`
	Error  string         `json:"error,omitempty"`
	Values map[string]any `json:"values,omitempty"`
}

// Find returns the result for a server and phase, or nil.
func (r *Run) Find(server, phase string) *Result {
	for i := range r.Results {
		if r.Results[i].Server == server && r.Results[i].Phase == phase {
			return &r.Results[i]
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

// ReadFile reads a run written by WriteFile. defs gives each phase kind's
// metric definitions so values get their Go types back (durations, counts).
func ReadFile(path string, defs func(kind string) []metrics.Def) (*Run, error) {
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
		r.Results[i].Metrics.Normalize(defs(r.Results[i].Kind))
	}
	return &r, nil
}
