// Package scenarios holds the phase kinds a plan can run (connect, echo,
// rate, hold), one file per kind, each registering itself with Register.
//
// Data flow: the plan loader reads a phase's key, looks the kind up here,
// strictly decodes the phase body into the struct New returns, and calls
// Validate. The run engine then calls Run once per server with a Driver (the
// load-generating client, in this process or spread over shard processes) and
// gets back the phase's metrics.
package scenarios

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

// Kind is one phase kind.
type Kind struct {
	Name    string        // the phase's key in a plan, e.g. "echo"
	Doc     string        // one line
	New     func() Phase  // returns a pointer to a zero config, ready for YAML decoding
	Metrics []metrics.Def // what Run reports (metrics.Common is added by the engine)
	// Efficiency, when set, names the metrics the engine turns into CPU
	// efficiency figures once it knows the CPU both sides spent.
	Efficiency *Efficiency
}

// Efficiency names a kind's throughput metrics: EER = Rate / server
// cpu_avg (the published tables' efficiency), and Count messages divide
// the CPU seconds into client_cpu_per_1m and server_cpu_per_1m.
type Efficiency struct {
	Rate  string // messages per second, e.g. "tps"
	EER   string // where Rate / cpu_avg goes, e.g. "eer"
	Count string // messages measured, e.g. "success"
}

// Phase is one configured phase of a plan.
type Phase interface {
	// Defaults fills zero fields with their documented defaults.
	Defaults(c Context)
	// Validate returns every problem with the configuration at once.
	Validate(c Context) []FieldError
	// Run executes the phase against the open connections.
	Run(ctx context.Context, env *Env) (Outcome, error)
}

// Context is what validation and defaults know about the rest of the plan.
type Context struct {
	Conns   int // connections open when this phase starts (sum of earlier connect phases)
	Payload int // payload of the plan's first echo phase, 0 if none
}

// FieldError is a problem with one field of a phase; the loader adds the
// file and line of that field.
type FieldError struct {
	Field string // YAML key inside the phase body, e.g. "payload"; "" = the whole phase
	Msg   string // e.g. "must be > 0, got -5"
}

func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// Driver is the load-generating client as phases see it: one in-process
// client, or a group of shard processes whose results are merged.
type Driver interface {
	Connect(ctx context.Context, p client.ConnectParams, pr *client.Progress) (client.ConnectResult, error)
	Echo(ctx context.Context, p client.EchoParams, pr *client.Progress) (client.EchoResult, error)
	Rate(ctx context.Context, p client.RateParams, pr *client.Progress) (client.RateResult, error)
	Hold(ctx context.Context, p client.HoldParams, pr *client.Progress) (client.HoldResult, error)
	// Conns returns the number of open connections.
	Conns() int
}

// Env is what a phase runs with.
type Env struct {
	Driver   Driver
	Progress *client.Progress // the live progress line reads it
	// Mem reads the resident memory of the server and of the client (every
	// client process) now; nil when unknown.
	Mem func() Mem
	// Base is Mem read after the server was ready, before the first phase.
	Base Mem
}

// Mem is a reading of resident memory, in bytes.
type Mem struct {
	Server, Client int64
}

// Outcome is what a phase returns: its metrics and any warnings that must be
// printed with the result.
type Outcome struct {
	Metrics  metrics.Values
	Warnings []string
	// Failed is set when the phase did run but its result is a failure
	// (e.g. connections that could not be opened); the reason is Error.
	Failed bool
	Error  string
	// Timeline is the phase second by second (rate phases); the engine
	// copies it into the result.
	Timeline []result.Point
}

var (
	mu    sync.RWMutex
	kinds = map[string]Kind{}
)

// Register adds a phase kind; kind files call it from init.
func Register(k Kind) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := kinds[k.Name]; dup {
		panic("scenarios: duplicate kind " + k.Name)
	}
	kinds[k.Name] = k
}

// Lookup returns the kind with that name.
func Lookup(name string) (Kind, bool) {
	mu.RLock()
	defer mu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// Kinds returns every kind, sorted by name.
func Kinds() []Kind {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Kind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names returns every kind's name, sorted.
func Names() []string {
	var out []string
	for _, k := range Kinds() {
		out = append(out, k.Name)
	}
	return out
}

// MetricDefs returns every metric a kind reports, the common ones included.
func MetricDefs(kind string) []metrics.Def {
	k, ok := Lookup(kind)
	if !ok {
		return metrics.Common
	}
	return metrics.Join(k.Metrics, metrics.Common)
}

// latencyValues fills the latency metrics from a histogram of nanoseconds.
func latencyValues(v metrics.Values, h *hdrhistogram.Histogram) {
	if h == nil || h.TotalCount() == 0 {
		for _, d := range metrics.Latency {
			v[d.Name] = time.Duration(0)
		}
		return
	}
	v["min"] = time.Duration(h.Min())
	v["avg"] = time.Duration(h.Mean())
	v["max"] = time.Duration(h.Max())
	for _, q := range []struct {
		name string
		p    float64
	}{{"p50", 50}, {"p75", 75}, {"p90", 90}, {"p95", 95}, {"p99", 99}, {"p999", 99.9}} {
		v[q.name] = time.Duration(h.ValueAtQuantile(q.p))
	}
}

func positive(field string, n int64, errs *[]FieldError) {
	if n <= 0 {
		*errs = append(*errs, FieldError{field, fmt.Sprintf("must be > 0, got %d", n)})
	}
}

func errorSummary(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	s := ""
	for i, k := range keys {
		if i == 3 {
			s += fmt.Sprintf("; and %d more reasons", len(keys)-3)
			break
		}
		if s != "" {
			s += "; "
		}
		s += fmt.Sprintf("%s ×%d", k, m[k])
	}
	return s
}
