package scenarios

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/wsplan/wsplan/internal/metrics"
)

// The verdict rule, once for every kind and protocol: a phase in which
// units failed, errored, were refused, downgraded or lost is not ok, and
// the run exits 1, unless the plan allows it explicitly: `allow:` in the
// phase's body (allow: {errors: 10, lost: 0.1%}), or an assertion that
// reads the count (then the assertion decides).
//
// A kind declares its faults once (Kind.Faults; a phase whose faults
// depend on its configuration adds its own through Faulter), reports the
// counts as ordinary metrics and, optionally, why they happened
// (Outcome.Reasons). Judge applies the rule; the engine calls it for
// every phase. A kind never sets Outcome.Failed for a count it declares
// as a fault: Failed is for what is not a count of units (the phase could
// not run, the connections it needs were gone).

// Fault is a count of units that went wrong in a phase.
type Fault struct {
	// Metric is a Count metric of the kind (or of the phase, for a
	// Faulter), e.g. metrics.Failed.
	Metric string
	// Of is the metric that counts every unit, for "12 of 2000" and for a
	// percentage allowance; "" = none (only a count may be allowed).
	Of string
	// What says what the units are and what happened to them, plural,
	// after the count: "echoes failed", "error answers".
	What string
	// Within is the fault whose units these are a part of (a script's
	// login_errors are some of its errors); "" = none. A part is judged
	// on its own only when the plan allows it or an assertion reads it,
	// and its units then leave its whole's count; otherwise its whole
	// judges them (so that allow: {errors: 5} covers every exchange's).
	Within string
}

// Faulter is implemented by phases with faults beyond their kind's (a
// script's exchanges: login_errors).
type Faulter interface {
	ExtraFaults() []Fault
}

// Credentialed is implemented by phases that write credentials of their
// own (a script's upgrade headers and query, the JSON it sends): the
// plan masks the ones named like a credential in every output, as it
// does a server's (plan.Plan.Secrets).
type Credentialed interface {
	Credentials() Credentials
}

// Credentials are what a phase writes that may hold credentials, as
// written (templates): a value that holds {{ is rendered at run time and
// is not itself a secret.
type Credentials struct {
	Headers map[string]string // upgrade request headers, by name
	Query   string            // an upgrade request's query: a=1&token=…
	JSON    []string          // messages sent: a JSON object's members
}

// PhaseFaults returns every fault a phase declares: its kind's, then its
// own (Faulter).
func PhaseFaults(kind string, ph Phase) []Fault {
	var out []Fault
	if k, ok := Lookup(kind); ok {
		out = append(out, k.Faults...)
	}
	if f, ok := ph.(Faulter); ok {
		out = append(out, f.ExtraFaults()...)
	}
	return out
}

// Allowance is how many units of one fault a phase may count and still
// pass: N units, or Percent of the fault's Of metric. The zero Allowance
// allows none.
type Allowance struct {
	N       int64
	Percent float64 // > 0: a percentage of Of instead of N
}

// ParseAllowance reads an allowance as the plan writes it: a count ("10",
// "0") or a percentage ("0.1%", "5%").
func ParseAllowance(s string) (Allowance, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 || f > 100 {
			return Allowance{}, fmt.Errorf("want a percentage above 0%% and at most 100%%, got %q", s)
		}
		return Allowance{Percent: f}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return Allowance{}, fmt.Errorf("want a count >= 0 or a percentage such as 0.1%%, got %q", s)
	}
	return Allowance{N: n}, nil
}

// String writes a as the plan does.
func (a Allowance) String() string {
	if a.Percent > 0 {
		return strconv.FormatFloat(a.Percent, 'f', -1, 64) + "%"
	}
	return strconv.FormatInt(a.N, 10)
}

// limit is the most units of f that a allows in m.
func (a Allowance) limit(f Fault, m metrics.Values) int64 {
	if a.Percent > 0 {
		return int64(math.Floor(float64(m.Int(f.Of)) * a.Percent / 100))
	}
	return a.N
}

// Allow is a phase's `allow:`: fault metric → its allowance.
type Allow map[string]Allowance

// CheckAllow returns the problems of a phase's `allow:` against the
// faults it declares: each key must be one of them, and a percentage
// needs a fault that counts its units (Of).
func CheckAllow(a Allow, faults []Fault) []FieldError {
	known := map[string]Fault{}
	var names []string
	for _, f := range faults {
		known[f.Metric] = f
		names = append(names, f.Metric)
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []FieldError
	for _, k := range keys {
		f, ok := known[k]
		switch {
		case !ok && len(names) == 0:
			errs = append(errs, FieldError{Field: k, Msg: "this phase counts no faults to allow"})
		case !ok:
			errs = append(errs, FieldError{Field: k, Msg: fmt.Sprintf("not a fault this phase counts (it counts %s)", strings.Join(names, ", "))})
		case a[k].Percent > 0 && f.Of == "":
			errs = append(errs, FieldError{Field: k, Msg: fmt.Sprintf("%s has no total to take a percentage of: allow a count", k)})
		}
	}
	return errs
}

// Verdict is what Judge decides about a phase's faults.
type Verdict struct {
	// Failures say each fault over its allowance, e.g. "12 of 2000 echoes
	// failed: timeout ×12"; none = the faults held.
	Failures []string
	// Notes say each fault that counted units within its allowance, or
	// left to an assertion: the row's warnings.
	Notes []string
}

// Judge applies the rule to a phase's metrics: every fault whose count
// exceeds its allowance fails the phase. reasons gives, by fault metric,
// why its units went wrong (Outcome.Reasons); gated reports whether an
// assertion on the phase reads a metric (that assertion then decides; nil
// = none does).
func Judge(faults []Fault, allow Allow, m metrics.Values, reasons map[string]string, gated func(metric string) bool) Verdict {
	var v Verdict
	apart := map[string]int64{}    // a whole's units its parts judge
	parts := map[string][]string{} // and those parts
	judged := func(f Fault) bool {
		_, allowed := allow[f.Metric]
		return allowed || gated != nil && gated(f.Metric)
	}
	for _, f := range faults {
		if f.Within != "" && judged(f) {
			apart[f.Within] += m.Int(f.Metric)
			parts[f.Within] = append(parts[f.Within], f.Metric)
		}
	}
	for _, f := range faults {
		if f.Within != "" && !judged(f) {
			continue // its whole judges its units
		}
		n := m.Int(f.Metric) - apart[f.Metric]
		if n <= 0 {
			continue
		}
		msg := faultText(f, n, m, reasons[f.Metric])
		if len(parts[f.Metric]) > 0 {
			msg += " (" + strings.Join(parts[f.Metric], ", ") + " judged apart)"
		}
		a, allowed := allow[f.Metric]
		switch {
		case allowed && n <= a.limit(f, m):
			v.Notes = append(v.Notes, fmt.Sprintf("%s (allowed: up to %s)", msg, a))
		case !allowed && gated != nil && gated(f.Metric):
			v.Notes = append(v.Notes, msg+" (an assertion decides)")
		case allowed:
			v.Failures = append(v.Failures, fmt.Sprintf("%s (allowed: up to %s)", msg, a))
		default:
			v.Failures = append(v.Failures, msg)
		}
	}
	return v
}

// faultText says n units of f went wrong: "12 of 2000 echoes failed:
// timeout ×12".
func faultText(f Fault, n int64, m metrics.Values, why string) string {
	s := strconv.FormatInt(n, 10)
	if f.Of != "" {
		if total := m.Int(f.Of); total >= n {
			s += " of " + strconv.FormatInt(total, 10)
		}
	}
	s += " " + f.What
	if why != "" {
		s += ": " + why
	}
	return s
}
