package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// ClientBoundNote is printed under a table with a client-bound row.
const ClientBoundNote = "client-bound: the client's CPU was saturated; these rows measure the client, not the server"

// Tables writes one table per phase, in the order the phases first appear in
// run.Results, one row per server in run order. A kind declares its table
// (scenarios.Kind Title and Columns: connect's "[Connections] Report",
// echo's "[BenchEcho] Report", rate's "[BenchRate] Report" follow the
// published layouts); a kind without Columns gets "[<Kind>] Report" with
// its own metrics in definition order (scenarios.MetricDefs), then the
// common CPU and memory columns.
//
// Every table ends with Client CPU (" (bound)" when the client was
// saturated) and a Verdict: "ok", "server-bound" (the server's CPU set the
// pace), "client-bound", "FAIL: <short error>" for a failed result, "FAIL
// (n asserts)" when assertions on the row failed.
// Under each table come the rows' warnings and full errors, and a note when a
// row is client-bound. A metric a result lacks shows as "-"; the server's
// CPU and memory of a server whose resources were not measured show as
// "n/a".
//
// baseline may be nil. Otherwise each measured figure (rates, latencies,
// CPU, memory; not the counts the plan fixed) of a row whose server and
// phase succeeded in baseline too is followed by its change, " (+3.2%)".
func Tables(w io.Writer, run *result.Run, baseline *result.Run, format string) error {
	format, err := checkFormat(format)
	if err != nil {
		return err
	}
	ew := &errWriter{w: w}
	if baseline != nil {
		if d := HostDiff(baseline.Host, run.Host); len(d) > 0 {
			ew.printf("The baseline was measured on a different host or setup; its deltas include that:\n")
			for _, s := range d {
				ew.printf("- %s\n", s)
			}
			ew.printf("\n")
		}
	}
	run, baseline = result.Collapse(run), result.Collapse(baseline)
	phases := run.Phases()
	if len(phases) == 0 {
		ew.printf("(no results)\n\n")
		return ew.err
	}
	for _, ph := range phases {
		if err := phaseTable(ew, run, baseline, format, ph); err != nil {
			return err
		}
	}
	return ew.err
}

// row is what a cell function sees.
type row struct {
	res     *result.Result
	base    metrics.Values // nil without a baseline result
	baseRes *result.Result // the baseline result, nil without one
	asserts int            // failed assertions on this (server, phase)
}

// column is one table column.
type column struct {
	header string
	cell   func(r row) string
}

// NotAvailable is shown for a server metric of a server whose resources
// were not measured (a url: server without pid:, pid_file: or
// metrics_url:): not measured, as opposed to "-", not produced.
const NotAvailable = "n/a"

// metricCol shows one metric, "-" when absent (NotAvailable for a server
// resource that was not measured); with deltas when withDelta.
func metricCol(header, name string, withDelta bool, f func(v metrics.Values, name string) string) column {
	return column{header, func(r row) string {
		v := r.res.Metrics
		if _, ok := v[name]; !ok {
			if r.res.NoServerResources() && metrics.ServerResource(name, scenarios.ServerMetricsOf(r.res.Kind)...) {
				return NotAvailable
			}
			return "-"
		}
		s := f(v, name)
		if withDelta {
			s += spread(r.res, name)
		}
		if withDelta && r.base != nil {
			if _, ok := r.base[name]; ok {
				s += change(r.res, r.baseRes, name)
			}
		}
		return s
	}}
}

func fmtTPS(v metrics.Values, n string) string { return fmt.Sprintf("%.0f", v.Float(n)) }
func fmtEER(v metrics.Values, n string) string { return fmt.Sprintf("%.2f", v.Float(n)) }
func fmtDur(v metrics.Values, n string) string { return Duration(v.Dur(n)) }
func fmtInt(v metrics.Values, n string) string { return strconv.FormatInt(v.Int(n), 10) }
func fmtPct(v metrics.Values, n string) string { return Percent(v.Float(n)) }
func fmtMem(v metrics.Values, n string) string { return MiB(v.Int(n)) }

var (
	frameworkCol = column{"Framework", func(r row) string { return r.res.Server }}

	latencyCols = []column{
		metricCol("Min", metrics.Min, true, fmtDur),
		metricCol("Avg", metrics.Avg, true, fmtDur),
		metricCol("Max", metrics.Max, true, fmtDur),
		metricCol("TP50", metrics.P50, true, fmtDur),
		metricCol("TP75", metrics.P75, true, fmtDur),
		metricCol("TP90", metrics.P90, true, fmtDur),
		metricCol("TP95", metrics.P95, true, fmtDur),
		metricCol("TP99", metrics.P99, true, fmtDur),
	}

	resourceCols = []column{
		metricCol("CPU Min", metrics.CPUMin, true, fmtPct),
		metricCol("CPU Avg", metrics.CPUAvg, true, fmtPct),
		metricCol("CPU Max", metrics.CPUMax, true, fmtPct),
		metricCol("MEM Min", metrics.MemMin, true, fmtMem),
		metricCol("MEM Avg", metrics.MemAvg, true, fmtMem),
		metricCol("MEM Max", metrics.MemMax, true, fmtMem),
		{"Client CPU", clientCPU},
		{"Verdict", verdict},
	}
)

// anyHas reports whether a result has the metric.
func anyHas(results []*result.Result, metric string) bool {
	for _, r := range results {
		if _, ok := r.Metrics[metric]; ok {
			return true
		}
	}
	return false
}

// declaredCols renders a kind's declared columns (optional ones only when
// a result has their metric).
func declaredCols(k scenarios.Kind, results []*result.Result) []column {
	var cols []column
	for _, d := range k.Columns {
		if d.Optional && !anyHas(results, d.Metric) {
			continue
		}
		switch d.Metric {
		case scenarios.ColFramework:
			cols = append(cols, frameworkCol)
		case scenarios.ColLatency:
			cols = append(cols, latencyCols...)
		case scenarios.ColServer:
			cols = append(cols, resourceCols[:len(resourceCols)-2]...)
		case scenarios.ColClientCPU:
			cols = append(cols, resourceCols[len(resourceCols)-2])
		case scenarios.ColVerdict:
			cols = append(cols, resourceCols[len(resourceCols)-1])
		default:
			cols = append(cols, metricCol(d.Header, d.Metric, d.Delta, formatter(k, d)))
		}
	}
	return cols
}

// formatter is how a declared column shows its metric.
func formatter(k scenarios.Kind, d scenarios.Column) func(v metrics.Values, name string) string {
	switch d.Format {
	case scenarios.FormatInt:
		return fmtInt
	case scenarios.FormatRate:
		return fmtTPS
	case scenarios.FormatFloat2:
		return fmtEER
	case scenarios.FormatDuration:
		return fmtDur
	case scenarios.FormatPercent:
		return fmtPct
	case scenarios.FormatMiB:
		return fmtMem
	}
	kind := metrics.Float
	for _, m := range scenarios.MetricDefs(k.Name) {
		if m.Name == d.Metric {
			kind = m.Kind
			break
		}
	}
	return func(v metrics.Values, n string) string { return value(kind, v, n) }
}

// genericCols are the columns of a kind without a published layout: its own
// metrics (those not common to every phase, nor the soak figures, which
// have a table of their own) in definition order. A kind this build does
// not know (a file from a newer wsplan) shows the metrics its results
// carry, sorted, typed by their Go values.
func genericCols(kind string, results []*result.Result) []column {
	common := map[string]bool{}
	for _, d := range metrics.Join(metrics.Common, metrics.Soak, metrics.Reconnect) {
		common[d.Name] = true
	}
	var defs []metrics.Def
	if _, known := scenarios.Lookup(kind); known {
		for _, d := range scenarios.MetricDefs(kind) {
			if !common[d.Name] {
				defs = append(defs, d)
			}
		}
	} else {
		defs = guessDefs(results, common)
	}
	cols := []column{frameworkCol}
	for _, d := range defs {
		k := d.Kind
		cols = append(cols, metricCol(d.Name, d.Name, k != metrics.Count && k != metrics.Bool,
			func(v metrics.Values, n string) string { return value(k, v, n) }))
	}
	return append(cols, resourceCols...)
}

func guessDefs(results []*result.Result, skip map[string]bool) []metrics.Def {
	kinds := map[string]metrics.Kind{}
	for _, r := range results {
		for n, x := range r.Metrics {
			if skip[n] {
				continue
			}
			switch x.(type) {
			case bool:
				kinds[n] = metrics.Bool
			case int, int64:
				kinds[n] = metrics.Count
			case time.Duration:
				kinds[n] = metrics.Duration
			default:
				kinds[n] = metrics.Float
			}
		}
	}
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	defs := make([]metrics.Def, len(names))
	for i, n := range names {
		defs[i] = metrics.Def{Name: n, Kind: kinds[n]}
	}
	return defs
}

// Title returns a phase table's title: the kind's declared Title
// ("[BenchEcho] Report" for echo), else "[<Kind>] Report" ("[Hold] Report");
// a phase renamed from its kind adds its name: "[BenchEcho] Report:
// echo_4k".
func Title(kind, phase string) string {
	t := ""
	if k, ok := scenarios.Lookup(kind); ok {
		t = k.Title
	}
	if t == "" {
		r := []rune(kind)
		if len(r) > 0 {
			r[0] = unicode.ToUpper(r[0])
		}
		t = "[" + string(r) + "] Report"
	}
	if phase != "" && phase != kind {
		t += ": " + phase
	}
	return t
}

// phaseColumns are a phase's table columns and their headers: the ones
// its kind declares (or generic ones), after the matrix's variables.
func phaseColumns(run *result.Run, kind string, results []*result.Result) ([]column, []string) {
	var cols []column
	if k, ok := scenarios.Lookup(kind); ok && len(k.Columns) > 0 {
		cols = declaredCols(k, results)
	} else {
		cols = genericCols(kind, results)
	}
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.header
	}
	if names := run.MatrixNames(); len(names) > 0 {
		cols = append(varCols(names), cols...)
		header = append(names, header...)
	}
	return cols, header
}

// phaseTable writes one phase's table over its servers (and matrix
// combinations), the notes under it, and the kind's extra tables.
func phaseTable(ew *errWriter, run, baseline *result.Run, format, phase string) error {
	var results []*result.Result
	for i := range run.Results {
		if run.Results[i].Phase == phase {
			results = append(results, &run.Results[i])
		}
	}
	kind := results[0].Kind
	cols, header := phaseColumns(run, kind, results)
	rows := make([][]string, len(results))
	var notes []string
	var bound, noBase, repeats, tested bool
	for i, res := range results {
		r := row{res: res, asserts: failedAsserts(run, res)}
		repeats = repeats || res.N > 1
		if baseline != nil {
			if b := baseline.FindVars(res.Vars, res.Server, res.Phase); b != nil && b.OK {
				r.base, r.baseRes = b.Metrics, b
				tested = tested || res.N > 1 && b.N > 1
			} else {
				noBase = true
				notes = append(notes, fmt.Sprintf("- %s%s: no baseline result for %s", varsPrefix(res), res.Server, res.Phase))
			}
		}
		rows[i] = make([]string, len(cols))
		for j, c := range cols {
			rows[i][j] = c.cell(r)
		}
		notes = append(notes, resultNotes(res)...)
		bound = bound || res.Metrics.Bool(metrics.ClientBound)
	}

	ew.printf("%s\n\n", Title(kind, phase))
	if ew.err != nil {
		return ew.err
	}
	if err := renderTable(ew, format, header, rows); err != nil {
		return err
	}
	ew.printf("\n")
	if len(notes) > 0 {
		ew.printf("%s\n\n", strings.Join(notes, "\n"))
	}
	if bound {
		ew.printf("%s\n\n", ClientBoundNote)
	}
	if repeats {
		ew.printf("%s\n\n", RepeatsNote)
	}
	if err := stepTables(ew, format, results); err != nil {
		return err
	}
	if err := extraTables(ew, format, kind, results); err != nil {
		return err
	}
	if err := soakTable(ew, format, phase, run.MatrixNames(), results); err != nil {
		return err
	}
	if err := reconnectTable(ew, format, phase, run.MatrixNames(), results); err != nil {
		return err
	}
	if baseline != nil {
		s := "(+x.x%): change against the baseline " + runName(baseline)
		if tested {
			s += "; " + SignificanceNote
		}
		if noBase {
			s += "; rows without a baseline result show none"
		}
		ew.printf("%s\n\n", s)
	}
	return ew.err
}

// extraTables writes the tables a kind declares for each result
// (scenarios.Kind.Tables), each under its title.
func extraTables(ew *errWriter, format, kind string, results []*result.Result) error {
	k, ok := scenarios.Lookup(kind)
	if !ok || k.Tables == nil {
		return nil
	}
	for _, res := range results {
		for _, t := range k.Tables(res) {
			ew.printf("%s\n\n", t.Title)
			if ew.err != nil {
				return ew.err
			}
			if err := renderTable(ew, format, t.Header, t.Rows); err != nil {
				return err
			}
			ew.printf("\n")
		}
	}
	return ew.err
}

// runName identifies a run in a sentence: plan name and start time.
func runName(r *result.Run) string {
	s := r.Plan.Name
	if s == "" {
		s = r.Plan.File
	}
	if s == "" {
		s = "run"
	}
	if !r.Started.IsZero() {
		s += " of " + r.Started.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return s
}
