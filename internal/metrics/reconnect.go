package metrics

// Names of the reconnect metrics: the engine writes them for every phase
// of a plan whose client.reconnect has a policy, from what the client's
// reconnectors did over the phase (client.ReconnectStats), and, for a
// phase with a restart fault, the restart's own figures.
const (
	Drops         = "drops"            // connections the server dropped
	Reconnects    = "reconnects"       // dropped connections open again
	ReconnectFail = "reconnect_failed" // attempts that failed
	NotBack       = "not_back"         // dropped, not back at the phase's end
	ReconnectP50  = "reconnect_p50"    // drop → the new upgrade, median
	ReconnectP99  = "reconnect_p99"    // … 99th percentile: 99% of the dropped ones back
	ReconnectMax  = "reconnect_max"    // … the last one back
	ReconnectPeak = "reconnect_peak"   // most reconnects in 100 ms, per second
	Downtime      = "downtime"         // the first drop → the first reconnect
	AllBack       = "all_back"         // the first drop → the last reconnect
	Restarts      = "restarts"         // restart faults run
	RestartTime   = "restart_time"     // a restart's stop + start + first upgrade (the longest)
)

// Reconnect are the reconnect and restart metrics (absent when the plan
// has no reconnect policy and the phase no restart).
var Reconnect = []Def{
	{Drops, Count, "connections the server dropped during the phase (not ones the client closed)"},
	{Reconnects, Count, "dropped connections open again, by client.reconnect's policy"},
	{ReconnectFail, Count, "reconnect attempts that failed (each followed by the policy's next wait)"},
	{NotBack, Count, "dropped connections not back when the phase ended"},
	{ReconnectP50, Duration, "a dropped connection's drop → its new connection's 101, median"},
	{ReconnectP99, Duration, "drop → 101, 99th percentile: the time until 99% of the dropped connections were back"},
	{ReconnectMax, Duration, "drop → 101 of the last one back: the time until all were back"},
	{ReconnectPeak, Count, "the storm's peak: most reconnects (handshakes that succeeded) in 100 ms, per second"},
	{Downtime, Duration, "the first drop → the first reconnect: how long the server was gone as the clients saw it"},
	{AllBack, Duration, "the first drop → the last reconnect"},
	{Restarts, Count, "restart faults run in the phase"},
	{RestartTime, Duration, "a restart's stop, start and first upgrade (the longest when several)"},
}
