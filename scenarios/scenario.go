// Package scenarios holds the phase kinds' registry and what they share;
// each kind (echo, rate, hold, ...) is a package of its own (scenarios/K)
// or, not moved there yet, its own files here (K.go, K_*.go), each
// registering itself with Register. A kind is one contract: its parameters (struct
// tags declare defaults, bounds and docs; see params.go), its names (its
// key and the metrics only it reports are constants of its file; names
// several kinds share are internal/metrics'), its metrics, its report
// table (Title, Columns), its headline Throughput, its charts, its
// efficiency figures, and its Run, which hands the client its
// internal/client Params through the Driver. A kind's files use what the
// files of no kind hold (shared.go, behind.go, paced.go, payload.go,
// params.go), never another kind's: deleting a kind's files removes only
// its registration (TestKindFilesApart).
//
// Data flow: the plan loader reads a phase's key, looks the kind up here,
// strictly decodes the phase body into the struct New returns, and calls
// Defaults and Check. The run engine then calls Run once per server with a
// Driver (the load-generating client, in this process or spread over shard
// processes) and gets back the phase's metrics. Engine, shard transport and
// report name no kind.
package scenarios

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

// Kind is one phase kind.
type Kind struct {
	Name    string        // the phase's key in a plan, e.g. "echo"
	Doc     string        // one line
	New     func() Phase  // returns a pointer to a zero config, ready for YAML decoding
	Metrics []metrics.Def // what Run reports (metrics.Common is added by the engine)
	// Faults are the kind's counts of units that went wrong (faults.go):
	// any of them above what the plan allows fails the phase (Judge).
	Faults []Fault
	// Paced is true for a kind whose client sends on a timetable and sleeps
	// between sends (rate, search, broadcast): wake-ups are much of its
	// cost, so preflight points at host.idle_poll where they are dear.
	Paced bool
	// Efficiency, when set, names the metrics the engine turns into CPU
	// efficiency figures once it knows the CPU both sides spent.
	Efficiency *Efficiency
	// Title is the report table's title, e.g. "[BenchEcho] Report";
	// "" = "[<Name>] Report".
	Title string
	// Columns are the report table's columns, in order; nil = the kind's
	// own metrics in definition order, then the common CPU and memory
	// columns.
	Columns []Column
	// Throughput names the metric that says how fast the phase went, for
	// the charts, benchfmt, the one-line notice of a finished phase and
	// the choice of a repeat's timeline; the engine records it in each
	// result. Zero = the kind times nothing per second (hold, conformance).
	Throughput Throughput
	// Summary adds the kind's own figures to the one-line notice of a
	// finished phase (after the throughput, before p99); nil = none.
	Summary func(metrics.Values) string
	// Family, when set, recognises metrics whose names depend on a
	// phase's configuration (a script's exchanges: login_p99), for
	// results read back from JSON; nil = none.
	Family func(name string) (metrics.Def, bool)
	// Soak, when set, marks a kind whose load stays constant while it runs
	// (hold, rate, churn, script): the engine samples the server's RSS,
	// open fds and threads and the client's RSS and goroutines over the
	// phase (result.Soak), fits their slopes and decides leak?
	// (metrics.Soak).
	Soak *Soak
	// Tables, when set, returns the extra tables the report prints under
	// the phase's table for one server's result, from its Detail (e.g.
	// conformance: the cases that did not pass); nil = none.
	Tables func(r *result.Result) []Table
	// Spectra, when set, returns latency histograms of one result beyond
	// its own (a script's named exchanges), each drawn in the HTML report
	// as a spectrum of its own; nil = none.
	Spectra func(r *result.Result) []Spectrum
	// Charts are the kind's own charts in the HTML report, drawn after
	// the ones every phase gets (throughput, CPU, memory, latency,
	// timelines, steps); nil = none.
	Charts []Chart
}

// Soak is how a kind's phases soak (Kind.Soak). The zero Soak fits the
// series against time only: slopes per hour, and leak? when the server's
// RSS grows more than the plan's soak.leak_threshold per hour.
type Soak struct {
	// Per, when > 0, also fits the server's RSS and fds against the
	// phase's units of work (its Progress.Done: cycles, messages), per Per
	// units, into the kind's own metrics RSSPer and FDsPer. Unit names
	// them in messages ("cycles").
	Per            int64
	Unit           string
	RSSPer, FDsPer string
	// LeakPer, when > 0, decides leak? by the RSS growth per Per units of
	// work instead of per hour: a kind whose work makes garbage at a rate
	// of its own (churn: connections opened and closed) is judged by what
	// each unit leaves behind.
	LeakPer int64
}

// Throughput is a kind's headline rate: a metric and what it counts.
type Throughput struct {
	Metric string // e.g. metrics.TPS
	Unit   string // e.g. "echoes/s"
	// Messages is true when the rate counts data messages (echoes, pongs,
	// deliveries), false for connections: message rates are charted in
	// the Markdown summary.
	Messages bool
	// Count names the metric Metric is a rate of (benchfmt's iteration
	// count), e.g. "success"; "" = none (benchfmt writes 1).
	Count string
	// Bench is the unit benchfmt writes Metric in, one word (benchstat
	// prints a table per unit), e.g. "msgs/s"; "" = not written.
	Bench string
}

// Spectrum is a named latency histogram of a result (Kind.Spectra).
type Spectrum struct {
	Name      string // e.g. the exchange "login"
	Histogram string // as HistString writes it
}

// Chart is one of a kind's own charts (Kind.Charts): a group of bars per
// server, with a bar for each series in each run.
type Chart struct {
	ID    string // unique among the phase's charts, e.g. "fanout-lat"
	Title string
	Unit  string // of the values: a Duration metric is shown in ms
	Note  string // what the bars measure, under the chart
	// Series are the bars. One series is named after its run ("this
	// run", or the run's label when runs are compared); several are named
	// by their Name.
	Series []ChartSeries
	// Needs, when set, is a metric a result must have to be drawn at all
	// (broadcast's fanout_p99: no room, no fan-out).
	Needs string
}

// ChartSeries is one bar of a Chart: a metric, and its legend name when
// the chart has several.
type ChartSeries struct {
	Name   string // e.g. "fan-out p99"
	Metric string
}

// Table is an extra table of one result (Kind.Tables).
type Table struct {
	Title  string // e.g. "gws: 3 cases not OK"
	Header []string
	Rows   [][]string
}

// Column is one column of a kind's report table: a metric, or one of the
// column groups every table shares (Col* names).
type Column struct {
	Header string // e.g. "TPS"; ignored for a group
	Metric string // a metric name, or a Col* group
	// Delta shows the change against a baseline run after the value:
	// for measured figures, not for the counts the plan fixed.
	Delta bool
	// Format overrides how the metric's kind is shown.
	Format Format
	// Optional columns appear only when a result of the table has the
	// metric (e.g. TLS figures, in a table of TLS and plain servers).
	Optional bool
}

// Column groups every table shares.
const (
	ColFramework = "@framework"  // the server's name
	ColLatency   = "@latency"    // Min, Avg, Max, TP50 … TP99
	ColServer    = "@server"     // CPU Min/Avg/Max, MEM Min/Avg/Max of the server
	ColClientCPU = "@client_cpu" // the client's CPU, "(bound)" when saturated
	ColVerdict   = "@verdict"    // ok, server-bound, client-bound, FAIL: …
)

// Format is how a column shows its metric.
type Format int

// Formats; FormatAuto follows the metric's kind.
const (
	FormatAuto     Format = iota
	FormatInt             // an integer
	FormatRate            // a float without decimals (e.g. 123456)
	FormatFloat2          // a float with two decimals
	FormatDuration        // a latency (1.23ms)
	FormatPercent         // percent of a core
	FormatMiB             // bytes as MiB
)

// Opener is implemented by phase kinds that open connections.
type Opener interface {
	// Opens returns how many connections the phase opens, and how many
	// handshakes it has in progress at once at most.
	Opens() (conns, concurrency int)
}

// Messenger is implemented by phase kinds that send data messages.
type Messenger interface {
	// Message returns the payload size of the phase's messages (its
	// default before Defaults ran) and whether they are text frames.
	Message() (payload int, text bool)
}

// DefaultPayload is the plan's payload when no phase sends messages.
const DefaultPayload = 1024

// PlanPayload is the payload of a plan's first phase that sends non-empty
// messages (a buffer-size hint for servers), else DefaultPayload.
func PlanPayload(phases []Phase) int {
	for _, p := range phases {
		if m, ok := p.(Messenger); ok {
			if n, _ := m.Message(); n > 0 {
				return n
			}
		}
	}
	return DefaultPayload
}

// Efficiency names a kind's throughput metrics: EER = Rate / server
// cpu_avg (the published tables' efficiency), and Count units divide the
// CPU seconds each side spent into the CPU figures (CPU; default
// PerMillion: client_cpu_per_1m and server_cpu_per_1m).
type Efficiency struct {
	Rate  string      // units per second, e.g. metrics.TPS
	EER   string      // where Rate / cpu_avg goes, e.g. "eer"; "" = none
	Count string      // units measured, e.g. "success"
	CPU   *CPUFigures // the CPU figures' names and scale; nil = PerMillion
}

// CPUFigures names the CPU figures the engine writes for a kind with
// Efficiency: each side's CPU seconds per unit of Count times Scale, as
// the kernel charged them (Client, Server) and with loopback delivery
// moved to its receiver (ClientNet, ServerNet: the softirq time of each
// side's CPUs charged to the other; only with disjoint pinned CPU sets).
type CPUFigures struct {
	Scale                float64 // 1e6: CPU seconds per million units; 1e3: CPU milliseconds per unit
	Client, Server       string
	ClientNet, ServerNet string
}

// PerMillion are the CPU figures of kinds that count messages: CPU seconds
// per million.
var PerMillion = CPUFigures{Scale: 1e6, Client: metrics.ClientCPUPer1M, Server: metrics.ServerCPUPer1M, ClientNet: metrics.ClientCPUPer1MNet, ServerNet: metrics.ServerCPUPer1MNet}

// Figures returns e's CPU figures.
func (e *Efficiency) Figures() CPUFigures {
	if e.CPU == nil {
		return PerMillion
	}
	return *e.CPU
}

// ServerMetrics are e's metrics made from the server's resources (see
// metrics.ServerResource): absent for a server that is not measured.
func (e *Efficiency) ServerMetrics() []string {
	f := e.Figures()
	var out []string
	for _, name := range []string{e.EER, f.Server, f.ServerNet, f.ClientNet} {
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// ServerMetricsOf is ServerMetrics of kind's Efficiency; nil for a kind
// without one.
func ServerMetricsOf(kind string) []string {
	if k, ok := Lookup(kind); ok && k.Efficiency != nil {
		return k.Efficiency.ServerMetrics()
	}
	return nil
}

// CPUPer1MDefs declares the CPU figures the engine writes for a kind with
// Efficiency: client and server CPU seconds per million of what each
// side's figure counts (clientPer, serverPer: "echoes", …), as charged and
// with loopback delivery attributed (the _net pair).
func CPUPer1MDefs(clientPer, serverPer string) []metrics.Def {
	return []metrics.Def{
		{Name: metrics.ClientCPUPer1M, Kind: metrics.Float, Doc: "client CPU seconds per million " + clientPer},
		{Name: metrics.ServerCPUPer1M, Kind: metrics.Float, Doc: "server CPU seconds per million " + serverPer},
		{Name: metrics.ClientCPUPer1MNet, Kind: metrics.Float, Doc: "client_cpu_per_1m with loopback delivery moved to its receiver (softirq time of each side's CPUs charged to the other): what the client would cost with a network between them; only with disjoint pinned CPU sets on this host"},
		{Name: metrics.ServerCPUPer1MNet, Kind: metrics.Float, Doc: "server_cpu_per_1m with loopback delivery moved to its receiver, as client_cpu_per_1m_net"},
	}
}

// Phase is one configured phase of a plan. Its tag defaults and bounds are
// applied by Defaults and Check (params.go); a kind with defaults that
// depend on the plan implements ContextDefaults too.
type Phase interface {
	// Validate returns every problem the tags cannot express (cross-field
	// rules, the plan's context) at once.
	Validate(c Context) []FieldError
	// Run executes the phase against the open connections.
	Run(ctx context.Context, env *Env) (Outcome, error)
}

// Context is what validation and defaults know about the rest of the plan.
type Context struct {
	Conns int    // connections open when this phase starts (sum of what earlier Openers open)
	Dir   string // the plan file's directory: a phase's relative paths are relative to it
}

// ProtocolSpeaker is implemented by phases that can run through a
// server's protocol (protocol: socketio, mqtt, …; "" = raw messages):
// Speaks says why the phase cannot with this one, "" when it can. A phase
// without it runs on raw messages only.
type ProtocolSpeaker interface {
	Speaks(protocol string) string
}

// Extras is implemented by phases whose metrics depend on their
// configuration (a script's named exchanges): metrics beyond their
// kind's, which assertions may read.
type Extras interface {
	ExtraMetrics() []metrics.Def
}

// FieldError is a problem with one field of a phase (a YAML key inside
// the phase body; "" = the whole phase); the loader adds the file and
// line of that field.
type FieldError = decl.FieldError

// Driver is the load-generating client as phases see it: one in-process
// client.Client, or a shard.Group of processes whose results are merged
// by the kind's Result.Merge.
type Driver interface {
	// Run runs one phase of any client kind and returns its result (the
	// kind's *client.<Kind>Result; also when cut short, with the error).
	Run(ctx context.Context, p client.Params, pr *client.Progress) (client.Result, error)
	// Conns returns the number of open connections.
	Conns() int
}

// Env is what a phase runs with.
type Env struct {
	Driver Driver
	// Target is the server the Driver's connections go to, for phases
	// that open connections of their own in this process instead
	// (conformance).
	Target   Target
	Progress *client.Progress // the live progress line reads it
	// Mem reads the resident memory of the server and of the client (every
	// client process) now; nil when unknown.
	Mem func() Mem
	// Base is Mem read after the server was ready, before the first phase.
	Base Mem
	// Window, when set, starts a sampling window of the server's and the
	// client's CPU and memory, like the one the engine keeps over every
	// phase; the func it returns ends the window, writes metrics.Common
	// into m (and eff's figures, when eff is set, from the rate and count
	// metrics m already holds; and with behind, as Outcome.Behind, each
	// side's CPU over it) and returns the client-bound warning or "".
	// Kinds that measure several steps in one phase (search) call it per
	// step. nil when nothing samples (tests without an engine).
	Window func() (stop func(m metrics.Values, eff *Efficiency, behind []Span) (warning string))
	// ServerGone, when set, says whether the server's process exited: why
	// ("pid 123 exited"), waiting up to wait for an exit to show (a dying
	// process's sockets reset a moment before its exit can be seen), or
	// "" while it runs. A kind that dials the server itself asks it when
	// its connections fail, so that a dead server's refusals are not
	// counted as the server's answers. For a url: server without pid:,
	// whose process wsplan cannot see, a new connection refused says it
	// ("appears to have died (new connections refused)"). nil when wsplan
	// cannot tell.
	ServerGone func(wait time.Duration) string
}

// Target is the server under test as a phase that dials it itself sees
// it.
type Target struct {
	// URL is the upgrade URL: ws://host:port/path or wss://host:port/path.
	URL string
	// Addr is the host:port to dial; "" = the URL's host and port.
	Addr string
	// Header holds the plan's extra upgrade headers (headers:, origin:,
	// subprotocols: as Sec-WebSocket-Protocol).
	Header http.Header
	// TLS is the client's TLS configuration for wss://; nil = plain ws://
	// (or, for wss://, the system roots and the URL's host name).
	TLS *tls.Config
	// Compression says the server was asked to negotiate
	// permessage-deflate (its compression option).
	Compression bool
}

// Mem is a reading of resident memory, in bytes.
type Mem struct {
	Server, Client int64
	// NoServer is set when the server's memory cannot be read (a url:
	// server without pid:, pid_file: or metrics_url:): Server is 0 and
	// means nothing.
	NoServer bool
}

// Outcome is what a phase returns: its metrics and any warnings that must be
// printed with the result.
type Outcome struct {
	Metrics  metrics.Values
	Warnings []string
	// WindowWarnings, when set, returns the warnings that need the
	// figures of the phase's window, which the engine writes after Run
	// returns (metrics.Common: the CPUs, who was bound); AllWarnings
	// calls it. A rate shortfall names the side that could not keep up
	// with them.
	WindowWarnings func(m metrics.Values) []string
	// Behind, set by a kind that sends on a timetable, is when its
	// sending was behind it (else its sending time, the drain left out):
	// the engine writes each side's CPU over these spans alone
	// (metrics.BehindDefs) before WindowWarnings, and KeptUp names the
	// side from them. nil = none.
	Behind []Span
	// Failed is set when the phase did run but its result is a failure
	// that is not a count of units (the connections it needs were gone,
	// it stopped early); the reason is Error. Counts of units that went
	// wrong are the kind's Faults, which Judge weighs against the plan's
	// allowances.
	Failed bool
	Error  string
	// Reasons say, by fault metric (Kind.Faults), why its units went
	// wrong ("timeout ×3; eof ×1"); a fault without one is said by its
	// count alone.
	Reasons map[string]string
	// Timeline is the phase second by second (rate and echo phases); the engine
	// copies it into the result.
	Timeline []result.Point
	// Histogram is the phase's latency histogram as client.Hist marshals
	// it (HistString); the engine copies it into the result.
	Histogram string
	// Info holds string facts about the phase that metrics cannot carry:
	// the negotiated "subprotocol", "extensions" and "tls_version" of a
	// connect phase. The engine copies it into the result.
	Info map[string]string
	// Steps and Stop are a search's measured steps and why it ended; the
	// engine copies them into the result.
	Steps []result.Step
	Stop  string
	// Detail is the kind's own JSON record of the phase (conformance: every
	// case's verdict); the engine copies it into the result, and the
	// kind's Tables read it back.
	Detail json.RawMessage
}

// AllWarnings are the outcome's warnings, then its WindowWarnings over m:
// the phase's metrics with the engine's window figures (metrics.Common)
// in them; nil m when there is no window (a kind's own tests).
func (o Outcome) AllWarnings(m metrics.Values) []string {
	if o.WindowWarnings == nil {
		return o.Warnings
	}
	return append(slices.Clip(o.Warnings), o.WindowWarnings(m)...)
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
	if k.Soak != nil {
		return metrics.Join(k.Metrics, metrics.Soak, metrics.Reconnect, metrics.Common)
	}
	return metrics.Join(k.Metrics, metrics.Reconnect, metrics.Common)
}

// PhaseMetricDefs returns every metric one phase reports: its kind's,
// its own (Extras), the common ones.
func PhaseMetricDefs(kind string, ph Phase) []metrics.Def {
	defs := MetricDefs(kind)
	if x, ok := ph.(Extras); ok {
		defs = metrics.Join(defs, x.ExtraMetrics())
	}
	return defs
}

// ResultDefs returns the definitions of a result's metrics: its kind's
// and the common ones, and those of v's names its kind's Family knows.
func ResultDefs(kind string, v metrics.Values) []metrics.Def {
	defs := MetricDefs(kind)
	k, ok := Lookup(kind)
	if !ok || k.Family == nil {
		return defs
	}
	known := map[string]bool{}
	for _, d := range defs {
		known[d.Name] = true
	}
	names := make([]string, 0, len(v))
	for n := range v {
		if !known[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if d, ok := k.Family(n); ok {
			defs = append(defs, d)
		}
	}
	return defs
}
