package report

import (
	"fmt"
	"strconv"

	"github.com/wsplan/wsplan/internal/result"
)

// stepTables writes, under a phase's table, one table per result that
// measured steps (a search): every step in the order it ran — its target,
// what was achieved, latency, late and lost messages, server and client
// CPU and its verdict ("pass", "FAIL: <figures>", "client-bound";
// bisection steps marked) — then why the search stopped.
func stepTables(ew *errWriter, format string, results []*result.Result) error {
	for _, res := range results {
		if len(res.Steps) == 0 {
			continue
		}
		ew.printf("Steps: %s\n\n", res.Server)
		header := []string{"#", "Target msg/s", "Conns", "Achieved", "TP50", "TP99", "TP999", "Late", "Lost", "Srv CPU", "Cli CPU", "Verdict"}
		rows := make([][]string, len(res.Steps))
		for i, s := range res.Steps {
			n := strconv.Itoa(i + 1)
			if s.Bisect {
				n += " (bisect)"
			}
			srv := Percent(s.ServerCPU)
			if res.ServerResources == result.ResourcesNone {
				srv = NotAvailable // not measured (a url: server without pid:), not idle
			}
			cli := Percent(s.ClientCPU)
			if s.ClientBound {
				cli += " (bound)"
			}
			rows[i] = []string{n, fmt.Sprintf("%.0f", s.Target), strconv.Itoa(s.Conns), fmt.Sprintf("%.0f", s.Achieved),
				Duration(s.P50), Duration(s.P99), Duration(s.P999), strconv.FormatInt(s.Late, 10), strconv.FormatInt(s.Lost, 10),
				srv, cli, stepVerdict(s)}
		}
		if ew.err != nil {
			return ew.err
		}
		if err := renderTable(ew, format, header, rows); err != nil {
			return err
		}
		ew.printf("\n")
		if res.Stop != "" {
			ew.printf("- %s: %s\n\n", res.Server, oneLine(res.Stop))
		}
	}
	return ew.err
}

// stepVerdict is a step's verdict cell.
func stepVerdict(s result.Step) string {
	switch s.Verdict {
	case "pass":
		return "pass"
	case "fail":
		if s.Why != "" {
			return "FAIL: " + s.Why
		}
		return "FAIL"
	case "":
		return "-"
	}
	if s.Why != "" {
		return s.Verdict + ": " + s.Why
	}
	return s.Verdict
}
