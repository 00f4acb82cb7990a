package scenarios

import (
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
)

// The pacing figures every paced kind (rate, and through it search;
// broadcast) reports, from the client's one pacing code
// (internal/client/paced.go): the timer slack, how late messages left,
// and the client loop's wake-ups.

// PacedDefs are the pacing metrics; perMsg says what wakeups_per_msg
// divides by, in the kind's words.
func PacedDefs(perMsg string) []metrics.Def {
	return []metrics.Def{
		{Name: metrics.Slack, Kind: metrics.Duration, Doc: "the timer slack the phase ran with"},
		{Name: metrics.SendLateP50, Kind: metrics.Duration, Doc: "median of how late messages left (write − scheduled time)"},
		{Name: metrics.SendLateP99, Kind: metrics.Duration, Doc: "99th percentile of how late messages left"},
		{Name: metrics.SendLateMax, Kind: metrics.Duration, Doc: "the latest a message left after its scheduled time"},
		{Name: metrics.Wakeups, Kind: metrics.Count, Doc: "client loop wake-ups during the phase"},
		{Name: metrics.WakeupsPerMsg, Kind: metrics.Float, Doc: perMsg},
	}
}

// PacedValues records the pacing metrics: msgs is what wakeups_per_msg
// divides by.
func PacedValues(v metrics.Values, slack time.Duration, late client.Hist, wakeups, msgs int64) {
	v[metrics.Slack] = slack
	v[metrics.Wakeups] = wakeups
	v[metrics.WakeupsPerMsg] = 0.0
	if msgs > 0 {
		v[metrics.WakeupsPerMsg] = float64(wakeups) / float64(msgs)
	}
	var p50, p99, mx time.Duration
	if h := late.Histogram; h != nil && h.TotalCount() > 0 {
		p50, p99, mx = time.Duration(h.ValueAtQuantile(50)), time.Duration(h.ValueAtQuantile(99)), time.Duration(h.Max())
	}
	v[metrics.SendLateP50], v[metrics.SendLateP99], v[metrics.SendLateMax] = p50, p99, mx
}

// CheckReads validates a plan's `reads` key.
func CheckReads(reads string) []FieldError {
	if err := client.CheckReads(reads); err != nil {
		return []FieldError{{Field: "reads", Msg: err.Error()}}
	}
	return nil
}

// ReadsWarning is the warning of a phase that asked for batched reads and
// ran with prompt ones ("" if none).
func ReadsWarning(asked, got string) string {
	if asked != client.ReadsPrompt && got == client.ReadsPrompt {
		return "reads: prompt, not batched: the kernel refused receive timestamps (SO_TIMESTAMPNS), so the client woke for every arrival"
	}
	return ""
}
