package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

// What several kinds use: running a client kind, the latency and rate
// figures, error summaries, opening connections. A kind's own file uses
// these and nothing of another kind's file, so that deleting a kind's files
// removes only its registration (TestKindFilesApart).

// DefaultConnectConcurrency bounds the handshakes in progress at once
// when a phase that opens connections of its own (connect, broadcast,
// search with vary: connections) does not say: min(1000, connections).
// Their timeout and retries are client.ConnectParams' tag defaults.
const DefaultConnectConcurrency = 1000

// OpenConcurrency is the handshakes in progress at once for n connections
// when the phase does not say.
func OpenConcurrency(n int) int { return min(DefaultConnectConcurrency, max(n, 1)) }

// NeedsOpen checks a phase that uses the connections opened before it:
// there must be some, and field (when not "") asks for at most as many
// (n of them).
func NeedsOpen(c Context, field string, n int) []FieldError {
	switch {
	case c.Conns == 0:
		return []FieldError{{Field: "", Msg: "needs open connections: put a connect phase before it"}}
	case field != "" && n > c.Conns:
		return []FieldError{{Field: field, Msg: fmt.Sprintf("must be <= the connections opened before it (%d), got %d", c.Conns, n)}}
	}
	return nil
}

// Lowered is the warning of a phase that asked for more connections
// (what: "concurrency") than are open.
func Lowered(what string, asked, open int) string {
	return fmt.Sprintf("%s lowered from %d to %d: only %d connections are open", what, asked, open, open)
}

// Drive runs p on env's driver and returns its typed result: nil when
// nothing was measured.
func Drive[R any](ctx context.Context, env *Env, p client.Params) (*R, error) {
	res, err := env.Driver.Run(ctx, p, env.Progress)
	r, _ := any(res).(*R)
	if r == nil && err == nil {
		err = fmt.Errorf("%s: the client returned no result", client.KindName(p))
	}
	return r, err
}

// PerSecond is n per second of d; 0 for no time.
func PerSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// HistCount is the number of values in h (0 for none).
func HistCount(h client.Hist) int64 {
	if h.Histogram == nil {
		return 0
	}
	return h.TotalCount()
}

// latencyQuantiles are the percentiles of metrics.Latency.
var latencyQuantiles = []struct {
	name string
	p    float64
}{{metrics.P50, 50}, {metrics.P75, 75}, {metrics.P90, 90}, {metrics.P95, 95}, {metrics.P99, 99}, {metrics.P999, 99.9}}

// LatencyValues fills the latency metrics from a histogram of nanoseconds.
func LatencyValues(v metrics.Values, hist client.Hist) {
	h := hist.Histogram
	if h == nil || h.TotalCount() == 0 {
		for _, d := range metrics.Latency {
			v[d.Name] = time.Duration(0)
		}
		return
	}
	v[metrics.Min] = time.Duration(h.Min())
	v[metrics.Avg] = time.Duration(h.Mean())
	v[metrics.Max] = time.Duration(h.Max())
	for _, q := range latencyQuantiles {
		v[q.name] = time.Duration(h.ValueAtQuantile(q.p))
	}
}

// ErrorSummary lists the commonest reasons of m with their counts, at
// most three ("eof ×3; timeout ×1"), as the kinds' rows say them.
func ErrorSummary(m client.Reasons) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]client.Reason, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
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

// HistString is a latency histogram as a result stores it: the base64 of
// its HdrHistogram V2 compressed encoding (as client.Hist marshals it);
// "" when it is empty.
func HistString(h client.Hist) string {
	if h.Histogram == nil || h.TotalCount() == 0 {
		return ""
	}
	b, err := h.MarshalJSON()
	if err != nil {
		return ""
	}
	var s string
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	return s
}

// Timeline turns a rate or echo result's seconds into the result's timeline.
func Timeline(secs []client.PacedSecond) []result.Point {
	out := make([]result.Point, len(secs))
	for i, s := range secs {
		out[i] = result.Point{T: i, Sent: s.Sent, Recv: s.Recv, Late: s.Late, P50: s.P50, P99: s.P99, Max: s.Max}
	}
	return out
}

// SumReasons adds a Reasons' counts.
func SumReasons(m client.Reasons) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
