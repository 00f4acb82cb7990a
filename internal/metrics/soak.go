package metrics

import "time"

// The shortest fits a soak's slopes are read over. The engine writes
// every slope fitted through five readings or more (the JSON keeps them
// all); the leak verdict and the [Soak] table go by these spans.
const (
	// SoakMinHourSpan is the shortest fit a per-hour slope is judged
	// over (leak, the client's own growth warning) and shown over in the
	// [Soak] table: seconds of a warming server's RSS, multiplied up to
	// an hour, read as a leak of gigabytes (a 10 s rate phase, fitted
	// over 7.5 s). The table shows no slope per hour the verdict would
	// not judge, since a reader judges it the same way.
	SoakMinHourSpan = 5 * time.Minute
	// SoakMinUnitSpan is the shortest fit a slope per unit of work
	// (scenarios.Kind.Soak.Per: churn's RSS per 100,000 cycles) is judged
	// and shown over. Its leak threshold is large (churn: 512 MiB per
	// 100,000 cycles) and the units accrue fast, so it needs less time
	// than a slope per hour.
	SoakMinUnitSpan = 30 * time.Second
)

// Names of the soak metrics: the engine writes them for a phase whose kind
// has a constant load (scenarios.Kind.Soak), fitted over the phase's
// resource series (result.Soak) after its settle time.
const (
	RSSSlope        = "rss_slope"        // server RSS, bytes per hour
	FDsSlope        = "fds_slope"        // server open fds per hour
	ThreadsSlope    = "threads_slope"    // server threads per hour
	Leak            = "leak"             // the verdict: RSS grew past the threshold
	RSSAfterDrain   = "rss_after_drain"  // server RSS soak.drain after the load stopped
	ClientRSSSlope  = "client_rss_slope" // every client process's RSS, bytes per hour
	GoroutinesSlope = "goroutines_slope" // wsplan's own goroutines per hour
	SoakSpan        = "soak_span"        // the time the slopes were fitted over
)

// Soak are the metrics of a phase whose kind soaks (scenarios.Kind.Soak).
// The slopes are least-squares fits over the points after soak.settle;
// they and leak are absent when fewer than five points were fitted.
var Soak = []Def{
	{RSSSlope, Float, "server RSS growth over the phase (after soak.settle), fitted: bytes per hour"},
	{FDsSlope, Float, "server open file descriptors, fitted: per hour"},
	{ThreadsSlope, Float, "server threads (all its processes, from /proc), fitted: per hour"},
	{Leak, Bool, "leak?: the server's RSS grew more than soak.leak_threshold per hour over at least 5 min (or, for churn, more than its own threshold per 100,000 cycles over at least 30 s) while the load was constant; absent when the fit was shorter"},
	{RSSAfterDrain, Bytes, "server RSS soak.drain after the phase's load stopped (absent when soak.drain is 0)"},
	{ClientRSSSlope, Float, "RSS of every client process (wsplan and its shards), fitted: bytes per hour"},
	{GoroutinesSlope, Float, "wsplan's own goroutines, fitted: per hour"},
	{SoakSpan, Duration, "time the slopes were fitted over (the phase after soak.settle)"},
}

// soakServer reports whether a soak metric is read from the server.
func soakServer(name string) bool {
	switch name {
	case RSSSlope, FDsSlope, ThreadsSlope, Leak, RSSAfterDrain:
		return true
	}
	return false
}
