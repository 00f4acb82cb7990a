// Package metrics defines how a phase's results are described and stored.
//
// Every phase kind declares its metrics as a list of Defs (name, kind, unit,
// doc). The same names are the JSON keys of a result, the columns the reports
// read, and the variables an assertion expression can use. Values travel as a
// Values map whose dynamic types follow the Def's Kind: int64 for Count and
// Bytes, float64 for Float and Percent, time.Duration for Duration, bool for
// Bool.
package metrics

import (
	"fmt"
	"math"
	"time"
)

// Kind is the type of one metric.
type Kind int

// The metric kinds.
const (
	Count    Kind = iota // int64: a number of things (messages, connections)
	Float                // float64: a rate or ratio
	Duration             // time.Duration; integer nanoseconds in JSON
	Bytes                // int64: a size in bytes
	Percent              // float64: percent of one CPU core
	Bool                 // bool
)

func (k Kind) String() string {
	switch k {
	case Count:
		return "count"
	case Float:
		return "float"
	case Duration:
		return "duration"
	case Bytes:
		return "bytes"
	case Percent:
		return "percent"
	case Bool:
		return "bool"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Zero returns the zero value of the kind's Go type.
func (k Kind) Zero() any {
	switch k {
	case Count, Bytes:
		return int64(0)
	case Float, Percent:
		return float64(0)
	case Duration:
		return time.Duration(0)
	case Bool:
		return false
	}
	return nil
}

// Def describes one metric.
type Def struct {
	Name string // JSON key and expression variable, e.g. "p99"
	Kind Kind
	Doc  string // one line, for docs/metrics.md and `wsplan validate`
}

// Values holds one result's metrics by name.
type Values map[string]any

// Int returns an integer metric (Count or Bytes), or 0.
func (v Values) Int(name string) int64 {
	switch x := v[name].(type) {
	case int64:
		return x
	case int:
		return int64(x)
	case float64:
		return int64(x)
	case time.Duration:
		return int64(x)
	}
	return 0
}

// Float returns a metric as float64, whatever its kind, or 0.
func (v Values) Float(name string) float64 {
	switch x := v[name].(type) {
	case int64:
		return float64(x)
	case int:
		return float64(x)
	case float64:
		return x
	case time.Duration:
		return float64(x)
	case bool:
		if x {
			return 1
		}
	}
	return 0
}

// Dur returns a Duration metric, or 0.
func (v Values) Dur(name string) time.Duration {
	switch x := v[name].(type) {
	case time.Duration:
		return x
	case int64:
		return time.Duration(x)
	case float64:
		return time.Duration(x)
	}
	return 0
}

// Bool returns a Bool metric, or false.
func (v Values) Bool(name string) bool {
	b, _ := v[name].(bool) // absent means false
	return b
}

// Normalize converts values decoded from JSON (float64, bool) back to the Go
// types their Defs name, so a result read from a file behaves like a fresh one.
// Names without a Def are kept as they are.
func (v Values) Normalize(defs []Def) {
	for _, d := range defs {
		x, ok := v[d.Name]
		if !ok {
			continue
		}
		f, isFloat := x.(float64)
		if !isFloat {
			continue
		}
		switch d.Kind {
		case Count, Bytes:
			v[d.Name] = int64(math.Round(f))
		case Duration:
			v[d.Name] = time.Duration(math.Round(f))
		}
	}
}

// Names of the metrics the engine writes for every phase (Common) and for
// kinds that declare efficiency figures (ClientCPUPer1M, ServerCPUPer1M).
// Code that writes or reads them uses these names, never a literal.
const (
	CPUMin         = "cpu_min"
	CPUAvg         = "cpu_avg"
	CPUMax         = "cpu_max"
	MemMin         = "mem_min"
	MemAvg         = "mem_avg"
	MemMax         = "mem_max"
	ClientCPUAvg   = "client_cpu_avg"
	ClientCPUSecs  = "client_cpu_s"
	ServerCPUSecs  = "server_cpu_s"
	ClientMemMax   = "client_mem_max"
	ClientCPUs     = "client_cpus"
	ClientBound    = "client_bound"
	ServerBound    = "server_bound"
	ServerCPUs     = "server_cpus"
	ClientCPUPer1M = "client_cpu_per_1m"
	ServerCPUPer1M = "server_cpu_per_1m"
	// The per-1M figures with loopback delivery moved to its receiver
	// (engine: softirqs); only where the sides run on disjoint pinned CPUs.
	ClientCPUPer1MNet = "client_cpu_per_1m_net"
	ServerCPUPer1MNet = "server_cpu_per_1m_net"
	ServerProcs       = "server_procs"
	// MemPerConn and ServerRSS are the server's memory per connection and
	// at one moment, for a kind that measures them (hold); the charts and
	// benchfmt show the first, and both are server resources.
	MemPerConn = "mem_per_conn"
	ServerRSS  = "server_rss"
)

// Names several kinds declare, each with its own doc: the words of the
// closed loops (connect, echo, ping), of the open loops (rate, search's
// steps, broadcast) and of the phases that send messages. A name only one
// kind declares is a constant of that kind's file in scenarios/ instead
// (internal/layering keeps it there).
const (
	TPS         = "tps" // per second: connections, echoes, pongs
	EER         = "eer" // the rate per percent of the server's core
	Used        = "used"
	Total       = "total"
	Success     = "success"
	Failed      = "failed"
	Conns       = "conns"
	Concurrency = "concurrency"
	Payload     = "payload"
	// DurationName is "duration" (Duration is the metric kind).
	DurationName = "duration"
	Drain        = "drain"
	Late         = "late"
	Lost         = "lost"
	Dropped      = "dropped"
)

// The open loop's figures: the rate phase's metrics, which a search's
// steps measure too (its SLO reads them).
const (
	Sent         = "sent"
	Recv         = "recv"
	BytesSent    = "bytes_sent"
	BytesRecv    = "bytes_recv"
	Scheduled    = "scheduled"
	SendRate     = "send_rate"
	AchievedRate = "achieved_rate"
	RecvRate     = "recv_rate"
	EchoEER      = "echo_eer"
	Unsent       = "unsent"
	Rate         = "rate" // messages per connection per second asked for
)

// The pacing figures of the kinds that send on a timetable (rate, search's
// steps, broadcast), and the wire bytes of those that send messages
// (echo, rate).
const (
	Slack         = "slack"
	SendLateP50   = "send_late_p50"
	SendLateP99   = "send_late_p99"
	SendLateMax   = "send_late_max"
	Wakeups       = "wakeups"
	WakeupsPerMsg = "wakeups_per_msg"
	BytesPayload  = "bytes_payload"
	BytesWire     = "bytes_wire"
	WireRatio     = "wire_ratio"
)

// Who could not keep up with a timetable (rate, search's steps,
// broadcast): each side's CPU over only the seconds sending was behind
// its schedule (BehindDefs, which the engine writes), and how long it was
// behind (Behind, which an open loop writes from its timeline).
const (
	Behind              = "behind"
	CPUBehind           = "cpu_behind"
	CPUWaitBehind       = "cpu_wait_behind"
	ClientCPUBehind     = "client_cpu_behind"
	ClientCPUWaitBehind = "client_cpu_wait_behind"
	ClientCores         = "client_cores"
)

// BehindDefs are the figures the engine writes for a kind that sends on a
// timetable, from which it says who could not keep up with it.
var BehindDefs = []Def{
	{CPUBehind, Percent, "server CPU over the seconds sending was behind its schedule (else over the sending time), the drain left out, percent of one core"},
	{CPUWaitBehind, Percent, "server time runnable but waiting for a CPU (its threads' run-queue wait) over the same seconds, percent of one core: with cpu_behind, the CPU it wanted; absent where not read (no schedstat, metrics_url:, more than 512 threads)"},
	{ClientCPUBehind, Percent, "client CPU over the seconds sending was behind its schedule (else over the sending time), the drain left out, percent of one core; shards count with their whole-phase average"},
	{ClientCPUWaitBehind, Percent, "client time runnable but waiting for a CPU over the same seconds, percent of one core; absent where not read"},
	{ClientCores, Count, "cores the client can keep busy (its event loops, bounded by client_cpus): what client_cpu_behind is measured against"},
}

// ServerResource reports whether a metric is read from the server's
// process (CPU, memory, and the figures made from them: efficiency,
// memory per connection). A server wsplan can not see (a url: target
// without pid:, pid_file: or metrics_url:) has none of them: they are
// absent from its results, shown as n/a, and an assertion using one is a
// load error. eer names the kind's own such metrics (its EER and CPU
// figures: scenarios.Efficiency.ServerMetrics).
func ServerResource(name string, eer ...string) bool {
	switch name {
	case CPUMin, CPUAvg, CPUMax, MemMin, MemAvg, MemMax, ServerCPUSecs, ServerCPUPer1M, ServerCPUPer1MNet, ClientCPUPer1MNet, ServerProcs,
		ServerRSS, MemPerConn, CPUBehind, CPUWaitBehind:
		return true
	}
	if soakServer(name) {
		return true
	}
	for _, e := range eer {
		if name == e {
			return true
		}
	}
	return false
}

// Common are the metrics every phase reports: the server's and the client's
// CPU and memory over exactly the phase window, and which side set the
// pace: the client (client_bound) or the server (server_bound). The
// server's (ServerResource) are absent when its resources cannot be read.
var Common = []Def{
	{CPUMin, Percent, "server CPU, lowest sample, percent of one core"},
	{CPUAvg, Percent, "server CPU over the phase window, percent of one core"},
	{CPUMax, Percent, "server CPU, highest sample, percent of one core"},
	{MemMin, Bytes, "server RSS, lowest sample"},
	{MemAvg, Bytes, "server RSS, mean of the samples"},
	{MemMax, Bytes, "server RSS, highest sample"},
	{ClientCPUAvg, Percent, "load-generating client CPU over the phase window, percent of one core"},
	{ClientCPUSecs, Float, "client CPU seconds (user+sys) spent in the phase window"},
	{ServerCPUSecs, Float, "server CPU seconds (user+sys) spent in the phase window"},
	{ClientMemMax, Bytes, "client RSS, highest sample"},
	{ClientCPUs, Count, "CPUs the client may run on"},
	{ServerProcs, Count, "server processes measured at once, most of the window: the started process (or pid:) and its descendants; 1 with metrics_url:"},
	{ClientBound, Bool, "true when the client's CPU was saturated (≥ 90% of its usable cores, and not below the server's share by more than 5 points), over the phase or, for a phase behind its timetable, while behind: the result measures the client"},
	{ServerCPUs, Count, "CPUs wsplan pinned the server to; 0 when it did not start the server (url:), whose cores it does not know"},
	{ServerBound, Bool, "true when the server's processes used ≥ 90% of the CPUs wsplan pinned them to (over the phase or, for a phase behind its timetable, while behind, waiting for a CPU included) and the client was not bound: the server set the pace, the result measures it at its limit; false when its cores are not known (server_cpus 0)"},
}

// Names of the Latency metrics.
const (
	Min  = "min"
	Avg  = "avg"
	Max  = "max"
	P50  = "p50"
	P75  = "p75"
	P90  = "p90"
	P95  = "p95"
	P99  = "p99"
	P999 = "p999"
)

// Latency are the latency distribution metrics shared by phases that time
// something (handshakes, echoes).
var Latency = []Def{
	{Min, Duration, "fastest"},
	{Avg, Duration, "mean"},
	{Max, Duration, "slowest"},
	{P50, Duration, "50th percentile"},
	{P75, Duration, "75th percentile"},
	{P90, Duration, "90th percentile"},
	{P95, Duration, "95th percentile"},
	{P99, Duration, "99th percentile"},
	{P999, Duration, "99.9th percentile"},
}

// Join concatenates definition lists, later names replacing earlier ones.
func Join(lists ...[]Def) []Def {
	var out []Def
	index := map[string]int{}
	for _, l := range lists {
		for _, d := range l {
			if i, ok := index[d.Name]; ok {
				out[i] = d
				continue
			}
			index[d.Name] = len(out)
			out = append(out, d)
		}
	}
	return out
}
