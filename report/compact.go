package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

// Width is the widest line of rendered text, in runes (what a terminal
// needs to show it without wrapping).
func Width(text string) int {
	w := 0
	for _, l := range strings.Split(text, "\n") {
		w = max(w, utf8.RuneCountInString(l))
	}
	return w
}

// TablesFit writes the full tables (Tables) when their widest line fits in
// width columns, else the compact view (Compact) followed by where, a line
// saying where the full tables are. It reports whether it wrote the
// compact view. width <= 0 means no limit.
func TablesFit(w io.Writer, run, baseline *result.Run, format string, width int, where string) (bool, error) {
	var full bytes.Buffer
	if err := Tables(&full, run, baseline, format); err != nil {
		return false, err
	}
	if width <= 0 || Width(full.String()) <= width {
		_, err := w.Write(full.Bytes())
		return false, err
	}
	if err := Compact(w, run, format); err != nil {
		return true, err
	}
	_, err := fmt.Fprintf(w, "%s\n\n", where)
	return true, err
}

// Compact writes one narrow table per phase for a terminal: server (and
// matrix vars), the phase's throughput (its kind's headline), p50 and p99,
// server and client CPU-seconds per million messages, and the verdict, then
// the failed rows' reasons. With repeats the figures are medians ± spread.
func Compact(w io.Writer, run *result.Run, format string) error {
	format, err := checkFormat(format)
	if err != nil {
		return err
	}
	ew := &errWriter{w: w}
	run = result.Collapse(run)
	names := run.MatrixNames()
	for _, ph := range run.Phases() {
		var rs []*result.Result
		for i := range run.Results {
			if run.Results[i].Phase == ph {
				rs = append(rs, &run.Results[i])
			}
		}
		rate, _ := headline(rs[0].Kind, rs)
		cols := []column{{"Server", func(r row) string {
			s := r.res.Server
			if len(r.res.Vars) > 0 {
				s += " " + result.VarsString(r.res.Vars, names)
			}
			return s
		}}}
		if rate != "" && hasMetric(rs, rate) {
			cols = append(cols, metricCol("TPS", rate, true, fmtTPS))
		}
		for _, m := range []struct{ header, name string }{{"p50", metrics.P50}, {"p99", metrics.P99}} {
			if hasMetric(rs, m.name) {
				cols = append(cols, metricCol(m.header, m.name, true, fmtDur))
			}
		}
		if hasMetric(rs, metrics.ServerCPUPer1M) {
			// s/c: server/client; short, so that a client-bound row of 16
			// characters' server names fits 80 columns.
			cols = append(cols, column{"CPU-s/1M s/c", func(r row) string {
				v := r.res.Metrics
				return fmt.Sprintf("%.1f/%.1f", v.Float(metrics.ServerCPUPer1M), v.Float(metrics.ClientCPUPer1M))
			}})
		}
		cols = append(cols, column{"Verdict", verdict})
		header := make([]string, len(cols))
		for i, c := range cols {
			header[i] = c.header
		}
		var rows [][]string
		var notes []string
		for _, res := range rs {
			r := row{res: res, asserts: failedAsserts(run, res)}
			cells := make([]string, len(cols))
			for j, c := range cols {
				cells[j] = c.cell(r)
			}
			rows = append(rows, cells)
			if !res.OK {
				notes = append(notes, fmt.Sprintf("- %s%s: %s", varsPrefix(res), res.Server, short(res.Error)))
			}
		}
		ew.printf("%s\n\n", Title(rs[0].Kind, ph))
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
	}
	if n := failedAssertions(run); n > 0 {
		ew.printf("%s failed (see the full report)\n\n", plural(n, "assertion"))
	}
	return ew.err
}

func hasMetric(rs []*result.Result, name string) bool {
	for _, r := range rs {
		if _, ok := r.Metrics[name]; ok {
			return true
		}
	}
	return false
}

func failedAssertions(run *result.Run) int {
	n := 0
	for _, a := range run.Assertions {
		if !a.Pass {
			n++
		}
	}
	return n
}
