package report

import (
	"strconv"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

// reconnectTable writes, under a phase's table, how the dropped
// connections came back for each result that counts them (a plan with
// client.reconnect, a phase with a restart fault): the drops, the
// downtime the clients saw, the time until 99% and all were back, the
// storm's peak and what the phase's kind lost meanwhile.
func reconnectTable(ew *errWriter, format, phase string, names []string, results []*result.Result) error {
	var rows [][]string
	for _, res := range results {
		m := res.Metrics
		if _, ok := m[metrics.Reconnects]; !ok {
			continue
		}
		if m.Int(metrics.Drops) == 0 && m.Int(metrics.Restarts) == 0 {
			continue // nothing dropped, nothing restarted: no row to read
		}
		row := varCells(names, res)
		row = append(row, res.Server,
			fmtCount(m, metrics.Restarts), fmtDurOr(m, metrics.RestartTime),
			fmtCount(m, metrics.Drops), fmtCount(m, metrics.Reconnects), fmtCount(m, metrics.NotBack),
			fmtDurOr(m, metrics.Downtime), fmtDurOr(m, metrics.ReconnectP99), fmtDurOr(m, metrics.ReconnectMax),
			fmtCount(m, metrics.ReconnectPeak), fmtCount(m, metrics.ReconnectFail),
			fmtCount(m, metrics.Lost), fmtCount(m, metrics.Unsent))
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil
	}
	header := append(append([]string{}, names...), "Framework", "Restarts", "Restart", "Dropped", "Back", "Not back",
		"Downtime", "99% back", "All back", "Peak/s", "Failed tries", "Lost", "Unsent")
	return titledTable(ew, format, "[Reconnects] "+phase+": dropped connections coming back (downtime: first drop → first back; 99%/all: each one's drop → its new upgrade)", header, rows)
}

// titledTable writes a table under its title, and a blank line after it.
func titledTable(ew *errWriter, format, title string, header []string, rows [][]string) error {
	ew.printf("%s\n\n", title)
	if ew.err != nil {
		return ew.err
	}
	if err := renderTable(ew, format, header, rows); err != nil {
		return err
	}
	ew.printf("\n")
	return ew.err
}

// varCells are a result's matrix values in names' order ("-" for none).
func varCells(names []string, res *result.Result) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "-"
		if v, ok := res.Vars[n]; ok {
			out[i] = v
		}
	}
	return out
}

// fmtCount shows a count, "-" when absent.
func fmtCount(m metrics.Values, name string) string {
	if _, ok := m[name]; !ok {
		return "-"
	}
	return strconv.FormatInt(m.Int(name), 10)
}

// fmtDurOr shows a duration, "-" when absent.
func fmtDurOr(m metrics.Values, name string) string {
	if _, ok := m[name]; !ok {
		return "-"
	}
	return Duration(m.Dur(name))
}
