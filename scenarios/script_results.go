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
func (p *Script) Run(ctx context.Context, env *Env) (Outcome, error) {
	q, err := p.params()
	if err != nil {
		return Outcome{}, err
	}
	mem := watchClientMem(env.Mem)
	r, err := run[client.ScriptResult](ctx, env, q)
	grew := mem.stop()
	if r == nil {
		return Outcome{}, err // nothing was measured
	}
	names := p.exchanges()
	v, all, detail := scriptValues(r, names)
	if env.Mem != nil && r.Peak > 0 {
		v[scriptMemPerUser] = max(grew, 0) / r.Peak
	}
	out := Outcome{Metrics: v, Histogram: HistString(all)}
	if b, jerr := json.Marshal(detail); jerr == nil {
		out.Detail = b
	}
	out.Warnings = scriptWarnings(r)
	if msg := scriptFailure(r, v); msg != "" {
		out.Failed, out.Error = true, msg
	}
	// Interrupted: what was measured so far is kept, with the error.
	return out, err
}

// scriptValues turns a result into the phase's metrics (the engine adds
// eer and the CPU figures), the latency of every exchange merged, and
// the detail.
func scriptValues(r *client.ScriptResult, names []string) (metrics.Values, client.Hist, ScriptDetail) {
	v := metrics.Values{
		scriptUsers: r.Users, scriptArrivals: r.Arrivals, scriptLate: r.Late, scriptDropped: r.Dropped,
		scriptOpenFailed: r.OpenFailed, scriptFinished: r.Finished, scriptAborted: r.Aborted, scriptCut: r.Cut, scriptPeak: r.Peak,
		scriptIterations: r.Iterations, scriptSent: r.Sent, scriptReceived: r.Received,
		scriptUnexpected: r.Unexpected, scriptUnexpUsers: r.UnexpectedUsers, scriptIgnored: r.Ignored,
		scriptBytesSent: r.BytesSent, scriptBytesRecv: r.BytesRecv, scriptUsed: r.Used,
	}
	v[scriptConnectP50], v[scriptConnectP99] = time.Duration(0), time.Duration(0)
	if histCount(r.Connect) > 0 {
		v[scriptConnectP50] = time.Duration(r.Connect.ValueAtQuantile(50))
		v[scriptConnectP99] = time.Duration(r.Connect.ValueAtQuantile(99))
	}
	all := client.NewHist()
	var detail ScriptDetail
	var done, timeouts, mismatched, failed int64
	for _, name := range names {
		e := r.Exchanges[name]
		if e == nil {
			e = &client.Exchange{Latency: client.NewHist()}
		}
		if e.Latency.Histogram == nil {
			e.Latency = client.NewHist()
		}
		all.Merge(e.Latency.Histogram)
		ev := exchangeValues(e, r.Used)
		for suffix, x := range ev {
			v[ExchangeMetric(name, suffix)] = x
		}
		detail.Exchanges = append(detail.Exchanges, ScriptExchange{Name: name, Metrics: ev, Histogram: HistString(e.Latency), Timeouts: e.Timeouts, Mismatched: e.Mismatched})
		done += e.Count
		timeouts += e.Timeouts
		mismatched += e.Mismatched
		failed += e.Failed
	}
	v[scriptExchanges], v[scriptTimeouts], v[scriptMismatched], v[scriptExchFailed] = done, timeouts, mismatched, failed
	v[scriptExchRate] = rate(done, r.Used)
	latencyValues(v, all)
	detail.Failures = scriptFailures(r)
	return v, all, detail
}

// exchangeValues are one exchange's metrics, by suffix.
func exchangeValues(e *client.Exchange, used time.Duration) metrics.Values {
	v := metrics.Values{
		exCount: e.Count, exRate: rate(e.Count, used),
		exTimeouts: e.Timeouts, exMismatched: e.Mismatched, exFailed: e.Failed,
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
func scriptFailures(r *client.ScriptResult) []ScriptFailure {
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

// scriptFailure is the row's failure, "" when it held: connections that
// did not open, users ended by a failure, exchanges timed out or taken
// by another request's reply.
func scriptFailure(r *client.ScriptResult, v metrics.Values) string {
	var parts []string
	if r.OpenFailed > 0 {
		parts = append(parts, fmt.Sprintf("%d users could not connect: %s", r.OpenFailed, errorSummary(r.OpenErrors)))
	}
	if n := v.Int(scriptTimeouts); n > 0 {
		parts = append(parts, fmt.Sprintf("%d expects timed out", n))
	}
	if n := v.Int(scriptMismatched); n > 0 {
		parts = append(parts, fmt.Sprintf("%d replies mismatched", n))
	}
	if r.Aborted > 0 && len(r.Errors) > 0 {
		parts = append(parts, fmt.Sprintf("%d users lost their connection: %s", r.Aborted, errorSummary(r.Errors)))
	}
	if len(parts) == 0 {
		return ""
	}
	msg := parts[0]
	for _, s := range parts[1:] {
		msg += "; " + s
	}
	if f := scriptFailures(r); len(f) > 0 {
		msg += fmt.Sprintf(" (first: %s %s ×%d)", f[0].Step, f[0].Reason, f[0].Count)
	}
	return msg
}

// scriptWarnings are what the table notes under the row.
func scriptWarnings(r *client.ScriptResult) []string {
	var w []string
	if r.Unexpected > 0 {
		w = append(w, fmt.Sprintf("%d messages on %d users matched no expect: expect them, or add ignore: patterns for pushes (keepalives, presence)", r.Unexpected, r.UnexpectedUsers))
	}
	if r.Arrivals > 0 && r.Late*100 > r.Arrivals {
		w = append(w, fmt.Sprintf("%d of %d arrivals were dialled late: the client fell behind its timetable", r.Late, r.Arrivals))
	}
	if r.Dropped > 0 {
		w = append(w, fmt.Sprintf("%d arrivals dropped: max_users were running (raise max_users, or the server answers too slowly)", r.Dropped))
	}
	if r.Cut > 0 {
		w = append(w, fmt.Sprintf("%d users were still running when the phase ended (drain)", r.Cut))
	}
	return w
}

// scriptTables is one row per named exchange, and the failed steps.
func scriptTables(r *result.Result) []Table {
	if len(r.Detail) == 0 {
		return nil
	}
	var d ScriptDetail
	if err := json.Unmarshal(r.Detail, &d); err != nil {
		return []Table{{Title: r.Server + ": script detail unreadable", Header: []string{"Error"}, Rows: [][]string{{err.Error()}}}}
	}
	ex := Table{Title: r.Server + ": exchanges", Header: []string{"Exchange", "Count", "Rate/s", "P50", "P90", "P99", "P999", "Max", "Timeouts", "Mismatched", "Failed"}}
	for _, e := range d.Exchanges {
		e.Metrics.Normalize(exchangeDefs())
		row := []string{e.Name, fmt.Sprint(e.Metrics.Int(exCount)), fmt.Sprintf("%.0f", e.Metrics.Float(exRate))}
		for _, s := range []string{exP50, exP90, exP99, exP999, exMax} {
			row = append(row, shortDur(e.Metrics.Dur(s)))
		}
		row = append(row, fmt.Sprint(e.Metrics.Int(exTimeouts)), fmt.Sprint(e.Metrics.Int(exMismatched)), fmt.Sprint(e.Metrics.Int(exFailed)))
		ex.Rows = append(ex.Rows, row)
	}
	out := []Table{ex}
	if len(d.Failures) > 0 {
		f := Table{Title: r.Server + ": failed steps", Header: []string{"Step", "Reason", "Count"}}
		for _, x := range d.Failures {
			f.Rows = append(f.Rows, []string{x.Step, x.Reason, fmt.Sprint(x.Count)})
		}
		out = append(out, f)
	}
	return out
}

// scriptSpectra are the named exchanges' latency histograms.
func scriptSpectra(r *result.Result) []Spectrum {
	var d ScriptDetail
	if len(r.Detail) == 0 || json.Unmarshal(r.Detail, &d) != nil {
		return nil
	}
	out := make([]Spectrum, 0, len(d.Exchanges))
	for _, e := range d.Exchanges {
		out = append(out, Spectrum{Name: e.Name, Histogram: e.Histogram})
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
func watchClientMem(read func() Mem) *memWatch {
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
