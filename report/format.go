package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wsplan/wsplan/internal/metrics"
)

// Duration formats a duration as the published tables do, with two decimals
// in the largest unit below 1000 of it: "850ns", "850.31us", "1.23ms",
// "2.60s"; from a minute up, Go's style with two decimals of seconds:
// "1m2.50s", "1h0m5.00s". Rounding is half-up on the shown digit, so
// 999.996us prints as "1.00ms", never "1000.00us".
func Duration(d time.Duration) string {
	if d < 0 {
		return "-" + Duration(-d)
	}
	if d < time.Microsecond {
		return strconv.FormatInt(int64(d), 10) + "ns"
	}
	for _, u := range []struct {
		unit   time.Duration
		suffix string
	}{{time.Microsecond, "us"}, {time.Millisecond, "ms"}, {time.Second, "s"}} {
		q := u.unit / 100 // one hundredth of the unit: the last digit shown
		r := roundTo(d, q)
		limit := 1000 * u.unit
		if u.unit == time.Second {
			limit = time.Minute
		}
		if r < limit {
			return fmt.Sprintf("%d.%02d%s", r/u.unit, (r%u.unit)/q, u.suffix)
		}
	}
	r := roundTo(d, 10*time.Millisecond)
	s := fmt.Sprintf("%dm%d.%02ds", (r%time.Hour)/time.Minute, (r%time.Minute)/time.Second, (r%time.Second)/(10*time.Millisecond))
	if r >= time.Hour {
		s = fmt.Sprintf("%dh", r/time.Hour) + s
	}
	return s
}

// roundTo rounds a non-negative d to a multiple of q, halves up.
func roundTo(d, q time.Duration) time.Duration {
	return (d + q/2) / q * q
}

// Percent formats a CPU share as "12.34%".
func Percent(p float64) string { return fmt.Sprintf("%.2f%%", p) }

// MiB formats a byte size in mebibytes as the published tables do: "12.34M".
func MiB(b int64) string { return fmt.Sprintf("%.2fM", float64(b)/(1<<20)) }

// Bytes formats a small size exactly, or in KiB: "512 B", "1.37 KiB".
func Bytes(b int64) string {
	if b < 1<<10 {
		return fmt.Sprintf("%d B", b)
	}
	return fmt.Sprintf("%.2f KiB", float64(b)/(1<<10))
}

// GiB formats a byte size in gibibytes: "23.54 GiB".
func GiB(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

// Number formats a float for reading, with up to six significant digits and
// no exponent for everyday magnitudes: 35012.3, 0.0004, 2e+12.
func Number(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	g := strconv.FormatFloat(f, 'g', 6, 64)
	if strings.ContainsAny(g, "e") && math.Abs(f) >= 1e-6 && math.Abs(f) < 1e15 {
		v, _ := strconv.ParseFloat(g, 64) // g was just formatted: it parses
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return g
}

// value formats a metric by its kind, the way the generic tables show it.
func value(k metrics.Kind, v metrics.Values, name string) string {
	switch k {
	case metrics.Count:
		return strconv.FormatInt(v.Int(name), 10)
	case metrics.Duration:
		return Duration(v.Dur(name))
	case metrics.Bytes:
		if n := v.Int(name); n < 1<<20 {
			return Bytes(n)
		}
		return MiB(v.Int(name))
	case metrics.Percent:
		return Percent(v.Float(name))
	case metrics.Bool:
		if v.Bool(name) {
			return "yes"
		}
		return "no"
	}
	return fmt.Sprintf("%.2f", v.Float(name))
}

// delta formats the change from base to cur as " (+3.2%)"; nothing when the
// base is zero (no ratio exists).
func delta(cur, base float64) string {
	if base == 0 || math.IsNaN(cur) || math.IsNaN(base) {
		return ""
	}
	d := 100 * (cur - base) / math.Abs(base)
	if math.Abs(d) < 0.05 {
		d = 0 // no "-0.0%"
	}
	return fmt.Sprintf(" (%+.1f%%)", d)
}

// short reduces an error to a table cell: its first line, up to the first
// ": " (the rest is the cause, printed under the table), at most 48 runes.
func short(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if i := causeColon(s); i > 0 {
		s = s[:i]
	}
	const max = 48
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:max-1])) + "…"
	}
	return s
}

// causeColon returns the index of the first ": " outside parentheses
// ("server exited (signal: killed): …" splits after the parenthesis), or -1.
func causeColon(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ':':
			if depth == 0 && i+1 < len(s) && s[i+1] == ' ' {
				return i
			}
		}
	}
	return -1
}

// plural returns "1 assert", "2 asserts".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
