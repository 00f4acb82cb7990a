package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// Assertions writes the "[Assertions] Report" table: Server, Phase,
// Assertion (its name, or its expression), Values (the variables the
// expression read, "k=v" sorted by name, durations human), and Result
// ("PASS", "FAIL", or "FAIL: <why it could not be evaluated>"); then a count
// of passed and failed. A run without assertions writes nothing.
func Assertions(w io.Writer, run *result.Run, format string) error {
	format, err := checkFormat(format)
	if err != nil {
		return err
	}
	if len(run.Assertions) == 0 {
		return nil
	}
	ew := &errWriter{w: w}
	ew.printf("[Assertions] Report\n\n")
	rows := make([][]string, len(run.Assertions))
	failed := 0
	for i, a := range run.Assertions {
		name := a.Name
		if name == "" {
			name = a.Expr
		}
		verdict := "PASS"
		if !a.Pass {
			failed++
			verdict = "FAIL"
			if a.Error != "" {
				verdict += ": " + a.Error
			}
		}
		server := a.Server
		if len(a.Vars) > 0 {
			server += " [" + result.VarsString(a.Vars, run.MatrixNames()) + "]"
		}
		rows[i] = []string{server, a.Phase, name, assertionValues(run, a), verdict}
	}
	if err := renderTable(ew, format, []string{"Server", "Phase", "Assertion", "Values", "Result"}, rows); err != nil {
		return err
	}
	ew.printf("\n%s: %d passed, %d failed\n\n", plural(len(run.Assertions), "assertion"), len(run.Assertions)-failed, failed)
	return ew.err
}

// assertionValues formats an assertion's values. Values read back from JSON
// lost their Go types (a duration is a float64 of nanoseconds); the metric
// definitions give them back, so a file renders as the fresh run did.
func assertionValues(run *result.Run, a result.Assertion) string {
	keys := make([]string, 0, len(a.Values))
	for k := range a.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kind := ""
	if r := run.Find(a.Server, a.Phase); r != nil {
		kind = r.Kind
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		mk, known := metricKind(kind, k)
		parts[i] = k + "=" + formatValue(a.Values[k], mk, known)
	}
	return strings.Join(parts, ", ")
}

// metricKind returns the kind of the metric a variable path ends in
// ("p99", "baseline.p99", "results.gws.echo.p99"): from the result's phase
// kind, else from any registered kind; ok is false for other variables.
func metricKind(kind, path string) (k metrics.Kind, ok bool) {
	name := path[strings.LastIndexByte(path, '.')+1:]
	if kind != "" {
		for _, d := range scenarios.MetricDefs(kind) {
			if d.Name == name {
				return d.Kind, true
			}
		}
	}
	for _, kd := range scenarios.Kinds() {
		for _, d := range scenarios.MetricDefs(kd.Name) {
			if d.Name == name {
				return d.Kind, true
			}
		}
	}
	return 0, false
}

// formatValue prints one assertion value; k, when known, is its metric kind.
func formatValue(x any, k metrics.Kind, known bool) string {
	switch v := x.(type) {
	case time.Duration:
		return Duration(v)
	case bool:
		return strconv.FormatBool(v)
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case int64:
		if known && k == metrics.Duration {
			return Duration(time.Duration(v))
		}
		return strconv.FormatInt(v, 10)
	case float64:
		if known {
			switch k {
			case metrics.Duration:
				return Duration(time.Duration(math.Round(v)))
			case metrics.Count, metrics.Bytes:
				return strconv.FormatInt(int64(math.Round(v)), 10)
			}
		}
		return Number(v)
	case nil:
		return "nil"
	}
	return fmt.Sprint(x)
}
