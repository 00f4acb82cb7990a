package script

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// ScriptDetail is the script phase's Detail in the result: one entry per
// named exchange (with its latency histogram, for the HTML report) and
// the steps that failed.
type ScriptDetail struct {
	Exchanges []ScriptExchange `json:"exchanges"`
	Failures  []ScriptFailure  `json:"failures,omitempty"`
}

// ScriptExchange is one named exchange's figures.
type ScriptExchange struct {
	Name       string         `json:"name"`
	Metrics    metrics.Values `json:"metrics"`   // its metrics without the name prefix: count, p99, …
	Histogram  string         `json:"histogram"` // HistString of its latency
	Timeouts   int64          `json:"timeouts"`
	Mismatched int64          `json:"mismatched"`
}

// ScriptFailure is how often one step failed for one reason.
type ScriptFailure struct {
	Step   string `json:"step"`
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// Run implements Phase.
func (p *Phase) Run(ctx context.Context, env *scenarios.Env) (scenarios.Outcome, error) {
	q, err := p.params()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	mem := watchClientMem(env.Mem)
	r, err := scenarios.Drive[Result](ctx, env, q)
	grew := mem.stop()
	if r == nil {
		return scenarios.Outcome{}, err // nothing was measured
	}
	names := p.exchanges()
	v, all, detail := scriptValues(r, names)
	if env.Mem != nil && r.Peak > 0 {
		v[scriptMemPerUser] = max(grew, 0) / r.Peak
	}
	out := scenarios.Outcome{Metrics: v, Histogram: scenarios.HistString(all)}
	if b, jerr := json.Marshal(detail); jerr == nil {
		out.Detail = b
	}
	out.Warnings = scriptWarnings(r)
	// Every failure is a count (scriptFaults, ExtraFaults): the engine
	// judges them against the plan's allow: and assertions.
	out.Reasons = scriptReasons(r, names)
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}

// scriptValues turns a result into the phase's metrics (the engine adds
// eer and the CPU figures), the latency of every exchange merged, and
// the detail.
func scriptValues(r *Result, names []string) (metrics.Values, client.Hist, ScriptDetail) {
	v := metrics.Values{
		scriptUsers: r.Users, scriptArrivals: r.Arrivals, scriptLate: r.Late, scriptDropped: r.Dropped,
		scriptOpenFailed: r.OpenFailed, scriptFinished: r.Finished, scriptAborted: r.Aborted, scriptCut: r.Cut, scriptPeak: r.Peak,
		scriptIterations: r.Iterations, scriptSent: r.Sent, scriptReceived: r.Received,
		scriptUnexpected: r.Unexpected, scriptUnexpUsers: r.UnexpectedUsers, scriptIgnored: r.Ignored,
		scriptBytesSent: r.BytesSent, scriptBytesRecv: r.BytesRecv, scriptUsed: r.Used,
		scriptUsersFailed: r.UsersFailed, scriptAnswers: r.Answers,
		scriptErrors: reasonsTotal(r.ErrorAnswers), scriptDowngraded: reasonsTotal(r.Downgrades),
	}
	if r.ReceiveMax > 0 {
		v[scriptReceiveMax] = r.ReceiveMax
	}
	v[scriptConnectP50], v[scriptConnectP99] = time.Duration(0), time.Duration(0)
	if scenarios.HistCount(r.Connect) > 0 {
		v[scriptConnectP50] = time.Duration(r.Connect.ValueAtQuantile(50))
		v[scriptConnectP99] = time.Duration(r.Connect.ValueAtQuantile(99))
	}
	all := client.NewHist()
	var detail ScriptDetail
	var done int64
	for _, name := range names {
		e := r.Exchanges[name]
		if e == nil {
			e = &Exchange{Latency: client.NewHist()}
		}
		if e.Latency.Histogram == nil {
			e.Latency = client.NewHist()
		}
		all.Merge(e.Latency.Histogram)
		ev := exchangeValues(e, r.Used)
		for suffix, x := range ev {
			v[ExchangeMetric(name, suffix)] = x
		}
		detail.Exchanges = append(detail.Exchanges, ScriptExchange{Name: name, Metrics: ev, Histogram: scenarios.HistString(e.Latency), Timeouts: e.Timeouts, Mismatched: e.Mismatched})
		done += e.Count
	}
	// Every expect's, named exchange or not.
	v[scriptExchanges], v[scriptTimeouts], v[scriptMismatched], v[scriptExchFailed] = done, r.Timeouts, r.Mismatched, r.Unanswered
	v[scriptExchRate] = scenarios.PerSecond(done, r.Used)
	scenarios.LatencyValues(v, all)
	detail.Failures = scriptFailures(r)
	return v, all, detail
}

// exchangeValues are one exchange's metrics, by suffix.
func exchangeValues(e *Exchange, used time.Duration) metrics.Values {
	v := metrics.Values{
		exCount: e.Count, exRate: scenarios.PerSecond(e.Count, used),
		exTimeouts: e.Timeouts, exMismatched: e.Mismatched, exFailed: e.Failed,
		exErrors: e.Errors, exDowngraded: e.Downgraded,
	}
	h := e.Latency.Histogram
	for _, q := range []struct {
		suffix string
		p      float64
	}{{exP50, 50}, {exP90, 90}, {exP99, 99}, {exP999, 99.9}} {
		v[q.suffix] = time.Duration(0)
		if h.TotalCount() > 0 {
			v[q.suffix] = time.Duration(h.ValueAtQuantile(q.p))
		}
	}
	v[exMax] = time.Duration(h.Max())
	return v
}

// scriptFailures lists the failed steps, most frequent first.
func scriptFailures(r *Result) []ScriptFailure {
	var out []ScriptFailure
	for step, rs := range r.Failures {
		for reason, n := range rs {
			out = append(out, ScriptFailure{Step: step, Reason: string(reason), Count: n})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		if out[i].Step != out[j].Step {
			return out[i].Step < out[j].Step
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

// scriptReasons say why each fault's units went wrong: the users' failed
// connections by reason, the expects by step, the error answers and
// downgrades by the protocol's code ("mqtt 0x87 not authorized ×1200"),
// phase-wide and by exchange.
func scriptReasons(r *Result, names []string) map[string]string {
	out := map[string]string{
		scriptOpenFailed:  scenarios.ErrorSummary(r.OpenErrors),
		scriptUsersFailed: scenarios.ErrorSummary(r.Errors),
		scriptTimeouts:    scenarios.ErrorSummary(stepsFailing(r, client.ReasonTimeout)),
		scriptMismatched:  scenarios.ErrorSummary(stepsFailing(r, ReasonMismatch)),
		scriptExchFailed:  scenarios.ErrorSummary(failedBy(r, ReasonUserEnded, ReasonPhaseEnd)),
		scriptErrors:      scenarios.ErrorSummary(r.ErrorAnswers),
		scriptDowngraded:  scenarios.ErrorSummary(r.Downgrades),
	}
	for _, name := range names {
		if e := r.Exchanges[name]; e != nil {
			out[ExchangeMetric(name, exErrors)] = scenarios.ErrorSummary(e.ErrorCodes)
			out[ExchangeMetric(name, exDowngraded)] = scenarios.ErrorSummary(e.DowngradeCodes)
		}
	}
	for k, why := range out {
		if why == "" {
			delete(out, k)
		}
	}
	return out
}

// stepsFailing counts the steps that failed for reason, by step
// ("steps[2].expect ×3").
func stepsFailing(r *Result, reason client.Reason) client.Reasons {
	out := client.Reasons{}
	for step, rs := range r.Failures {
		if n := rs[reason]; n > 0 {
			out[client.Reason(step)] = n
		}
	}
	return out
}

// failedBy counts the steps' failures for each of reasons, every step.
func failedBy(r *Result, reasons ...client.Reason) client.Reasons {
	out := client.Reasons{}
	for _, rs := range r.Failures {
		for _, why := range reasons {
			if n := rs[why]; n > 0 {
				out[why] += n
			}
		}
	}
	return out
}

// reasonsTotal adds a Reasons' counts.
func reasonsTotal(m client.Reasons) int64 {
	var n int64
	for _, c := range m {
		n += c
	}
	return n
}

// scriptWarnings are what the table notes under the row.
func scriptWarnings(r *Result) []string {
	var w []string
	if r.Unexpected > 0 {
		w = append(w, fmt.Sprintf("%d messages on %d users matched no expect: expect them, or add ignore: patterns for pushes (keepalives, presence)", r.Unexpected, r.UnexpectedUsers))
	}
	if r.Arrivals > 0 && r.Late*100 > r.Arrivals {
		w = append(w, fmt.Sprintf("%d of %d arrivals were dialled late: the client fell behind its timetable", r.Late, r.Arrivals))
	}
	if r.Cut > 0 {
		w = append(w, fmt.Sprintf("%d users were still running when the phase ended (drain)", r.Cut))
	}
	if r.Throttled > 0 {
		w = append(w, fmt.Sprintf("the broker's Receive Maximum (%d) held loop inflight %d to %d on %d users' connections: they waited for answers rather than send past it",
			r.ReceiveMax, r.Inflight, r.ReceiveMax, r.Throttled))
	}
	return w
}

// scriptTables is one row per named exchange, and the failed steps.
func scriptTables(r *result.Result) []scenarios.Table {
	if len(r.Detail) == 0 {
		return nil
	}
	var d ScriptDetail
	if err := json.Unmarshal(r.Detail, &d); err != nil {
		return []scenarios.Table{{Title: r.Server + ": script detail unreadable", Header: []string{"Error"}, Rows: [][]string{{err.Error()}}}}
	}
	ex := scenarios.Table{Title: r.Server + ": exchanges", Header: []string{"Exchange", "Count", "Rate/s", "P50", "P90", "P99", "P999", "Max", "Timeouts", "Mismatched", "Failed", "Errors", "Downgraded"}}
	for _, e := range d.Exchanges {
		e.Metrics.Normalize(exchangeDefs())
		row := []string{e.Name, fmt.Sprint(e.Metrics.Int(exCount)), fmt.Sprintf("%.0f", e.Metrics.Float(exRate))}
		for _, s := range []string{exP50, exP90, exP99, exP999, exMax} {
			row = append(row, shortDur(e.Metrics.Dur(s)))
		}
		for _, s := range []string{exTimeouts, exMismatched, exFailed, exErrors, exDowngraded} {
			row = append(row, fmt.Sprint(e.Metrics.Int(s)))
		}
		ex.Rows = append(ex.Rows, row)
	}
	out := []scenarios.Table{ex}
	if len(d.Failures) > 0 {
		f := scenarios.Table{Title: r.Server + ": failed steps", Header: []string{"Step", "Reason", "Count"}}
		for _, x := range d.Failures {
			f.Rows = append(f.Rows, []string{x.Step, x.Reason, fmt.Sprint(x.Count)})
		}
		out = append(out, f)
	}
	return out
}

// scriptSpectra are the named exchanges' latency histograms.
func scriptSpectra(r *result.Result) []scenarios.Spectrum {
	var d ScriptDetail
	if len(r.Detail) == 0 || json.Unmarshal(r.Detail, &d) != nil {
		return nil
	}
	out := make([]scenarios.Spectrum, 0, len(d.Exchanges))
	for _, e := range d.Exchanges {
		out = append(out, scenarios.Spectrum{Name: e.Name, Histogram: e.Histogram})
	}
	return out
}

// exchangeDefs are the per-exchange metrics by suffix (for Normalize).
func exchangeDefs() []metrics.Def {
	out := make([]metrics.Def, 0, len(exchangeSuffixes))
	for _, s := range exchangeSuffixes {
		out = append(out, metrics.Def{Name: s.suffix, Kind: s.kind})
	}
	return out
}

// shortDur writes a latency as the tables do (1.23ms).
func shortDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	case d >= time.Microsecond:
		return fmt.Sprintf("%.2fµs", float64(d)/1e3)
	}
	return fmt.Sprintf("%dns", int64(d))
}

// memWatchEvery is how often a script phase reads the client's memory.
const memWatchEvery = 200 * time.Millisecond

// memWatch follows the client's resident memory over a phase: its
// highest reading above the one at the start.
type memWatch struct {
	done chan struct{}
	grew chan int64
}

// watchClientMem starts reading the client's RSS (every client process)
// every memWatchEvery; read nil = nothing to watch.
func watchClientMem(read func() scenarios.Mem) *memWatch {
	if read == nil {
		return nil
	}
	w := &memWatch{done: make(chan struct{}), grew: make(chan int64, 1)}
	start := read().Client
	go func() {
		peak := start
		t := time.NewTicker(memWatchEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				peak = max(peak, read().Client)
			case <-w.done:
				w.grew <- max(peak, read().Client) - start
				return
			}
		}
	}()
	return w
}

// stop ends the watch and returns how far the client's RSS rose above
// its start (0 without a watch).
func (w *memWatch) stop() int64 {
	if w == nil {
		return 0
	}
	close(w.done)
	return <-w.grew
}
