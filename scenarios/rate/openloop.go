package rate

import (
	"fmt"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/scenarios"
)

// The open loop: a timetable of messages per connection, latency from
// each message's scheduled send. The rate phase runs it once; a search
// (scenarios/search) runs it at every step and judges each by its SLO
// over these metrics.

// Defs are an open loop's metrics: the rate phase's, and what a
// search's SLO reads of each step (with metrics.Common over the step).
var Defs = metrics.Join([]metrics.Def{
	{Name: metrics.DurationName, Kind: metrics.Duration, Doc: "sending time (the drain excluded)"},
	{Name: metrics.Drain, Kind: metrics.Duration, Doc: "time after duration spent waiting for echoes"},
	{Name: metrics.Sent, Kind: metrics.Count, Doc: "messages written"},
	{Name: metrics.Recv, Kind: metrics.Count, Doc: "echoes received intact"},
	{Name: metrics.BytesSent, Kind: metrics.Bytes, Doc: "payload bytes written"},
	{Name: metrics.BytesRecv, Kind: metrics.Bytes, Doc: "payload bytes received"},
	{Name: metrics.Scheduled, Kind: metrics.Count, Doc: "messages the timetable had due within duration"},
	{Name: metrics.SendRate, Kind: metrics.Float, Doc: "target: messages per second over all connections at the full rate (conns × rate)"},
	{Name: metrics.AchievedRate, Kind: metrics.Float, Doc: "sent / duration"},
	{Name: metrics.RecvRate, Kind: metrics.Float, Doc: "recv / (duration + drain)"},
	{Name: metrics.EchoEER, Kind: metrics.Float, Doc: "recv_rate / server cpu_avg: echoes per second per percent of a core"},
	{Name: metrics.Late, Kind: metrics.Count, Doc: "messages that did not leave on time: written more than late_after after their schedule, or never (unsent)"},
	{Name: metrics.Unsent, Kind: metrics.Count, Doc: "scheduled − sent: due within duration but never written (backpressure)"},
	{Name: metrics.Lost, Kind: metrics.Count, Doc: "sent − recv − failed: no echo by the end of the drain"},
	{Name: metrics.Behind, Kind: metrics.Duration, Doc: "time sending was behind its timetable: the seconds in which more than 1% of the messages due left late, or fewer than 98% left at all; 0 when none was (the *_behind CPU figures then cover the whole sending time)"},
	{Name: metrics.Failed, Kind: metrics.Count, Doc: "echoes received corrupt (marker, length, opcode or payload)"},
	{Name: metrics.Dropped, Kind: metrics.Count, Doc: "connections lost while sending (closed or reset, not by the plan)"},
	{Name: metrics.Conns, Kind: metrics.Count, Doc: "connections that sent"},
	{Name: metrics.Rate, Kind: metrics.Float, Doc: "messages per connection per second asked for"},
	{Name: metrics.Payload, Kind: metrics.Bytes, Doc: "bytes per message"},
}, scenarios.PacedDefs("wakeups / (sent + recv): client wake-ups per message sent or echoed"), metrics.BehindDefs, metrics.Latency, scenarios.CPUPer1MDefs("messages sent and echoed", "echoes"), scenarios.WireDefs)

// Efficiency is the published rate table's EchoEER: echoes
// received per second per percent of the server's core.
var Efficiency = &scenarios.Efficiency{Rate: metrics.RecvRate, EER: metrics.EchoEER, Count: metrics.Recv}

// Values turns a rate result into the open loop's metrics (without
// echo_eer and the CPU figures, which the engine adds).
func Values(r Result, perConn float64, payload int64) metrics.Values {
	v := metrics.Values{
		metrics.DurationName: r.Used,
		metrics.Drain:        r.Drain,
		metrics.Sent:         r.Sent,
		metrics.Recv:         r.Recv,
		metrics.BytesSent:    r.BytesSent,
		metrics.BytesRecv:    r.BytesRecv,
		metrics.Scheduled:    r.Scheduled,
		metrics.SendRate:     float64(r.Conns) * perConn,
		metrics.AchievedRate: scenarios.PerSecond(r.Sent, r.Used),
		metrics.RecvRate:     scenarios.PerSecond(r.Recv, r.Used+r.Drain),
		metrics.Late:         r.Late + r.Unsent,
		metrics.Unsent:       r.Unsent,
		metrics.Lost:         r.Lost(),
		metrics.Failed:       r.Failed,
		metrics.Dropped:      scenarios.SumReasons(corrupt(r.Errors, false)),
		metrics.Conns:        int64(r.Conns),
		metrics.Rate:         perConn,
		metrics.Payload:      payload,
	}
	scenarios.PacedValues(v, r.Slack, r.SendLate, r.Wakeups, r.Sent+r.Recv)
	scenarios.WireValues(v, r.BytesPayload, r.BytesWire)
	scenarios.LatencyValues(v, r.Latency)
	return v
}

// Shortfall reports whether an open loop sent less than
// scenarios.RateShortfall of its timetable.
func Shortfall(r Result) bool {
	return r.Scheduled > 0 && float64(r.Sent) < scenarios.RateShortfall*float64(r.Scheduled)
}

// warnings are what a reader of a rate result must not miss: a
// shortfall against the timetable, more than 1% late messages (the first
// of them naming the side that could not keep up, from the engine's
// figures in m: KeptUp). Lost echoes, lost connections and a phase cut
// short are the rate kind's faults and failure.
func warnings(r Result, m metrics.Values) []string {
	var w []string
	short := Shortfall(r)
	if short {
		w = append(w, fmt.Sprintf("rate shortfall: %d of %d scheduled messages sent (%.1f%%): %s", r.Sent, r.Scheduled, 100*float64(r.Sent)/float64(r.Scheduled), scenarios.KeptUp(m)))
	}
	if late := r.Late + r.Unsent; r.Scheduled > 0 && float64(late) > scenarios.RateLateShare*float64(r.Scheduled) {
		who := ""
		if !short {
			who = "; " + scenarios.KeptUp(m)
		}
		w = append(w, fmt.Sprintf("%d of %d messages late (%.1f%%; %d never sent): their latency counts from their schedule%s", late, r.Scheduled, 100*float64(late)/float64(r.Scheduled), r.Unsent, who))
	}
	return w
}
