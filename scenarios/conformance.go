package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wsplan/wsplan/internal/autobahn"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/units"
)

// The conformance phase's key and the metrics only it reports.
const (
	conformanceKind          = "conformance"
	conformanceCases         = "cases"
	conformanceOK            = "ok"
	conformanceNonStrict     = "non_strict"
	conformanceInformational = "informational"
	conformanceUnimplemented = "unimplemented"
	conformanceFailing       = "failing"
	conformanceNotRun        = "not_run"
)

// Conformance checks the server against RFC 6455 with the Go-native
// Autobahn|Testsuite fuzzingclient cases of internal/autobahn, each case on
// its own connection, and reports Autobahn's verdicts. It runs in the
// orchestrating process, never on client shards: it dials Env.Target
// itself (one connection per case) and does not use the Driver's
// connections, so it needs no connect phase before it.
type Conformance struct {
	Cases       []string       `yaml:"cases,flow" doc:"Autobahn case ids or globs to run (\"1.*\", \"6.4.*\", \"2.10\"; \"*\" = every case); default every case but the big ones (messages of 1 MiB and up in 9.x, 12.x/13.x cases of 4 KiB messages and up)"`
	Exclude     []string       `yaml:"exclude,flow" doc:"case ids or globs left out of cases"`
	CaseTimeout units.Duration `yaml:"case_timeout" default:"30s" min:"1s" max:"10m" doc:"longest wall time of one case, connect and handshake included; a case that hits it is FAILED (cases end sooner on their own Autobahn timers)"`
	Behavior    Behavior       `yaml:"behavior" default:"strict" doc:"what a NON-STRICT verdict counts as: strict = failing, lenient = passing"`
	Parallel    int            `yaml:"parallel" default:"1" min:"1" max:"64" doc:"cases run at once, each on its own connection; 1 = one after another, as Autobahn runs them"`
}

// Behavior is conformance's behavior: strict or lenient.
type Behavior string

// JSONSchema states the two values (internal/schema).
func (Behavior) JSONSchema() map[string]any {
	return map[string]any{"enum": []any{string(autobahn.Strict), string(autobahn.Lenient)}}
}

// ConformanceDetail is the conformance phase's Detail in the result: the
// whole autobahn.Report, every case with its verdict and, for any verdict
// but OK, what the server did.
type ConformanceDetail = autobahn.Report

func init() {
	Register(Kind{
		Name:   conformanceKind,
		Doc:    "RFC 6455 check with Autobahn|Testsuite's fuzzingclient cases, one connection per case; verdicts OK, NON-STRICT, INFORMATIONAL, UNIMPLEMENTED, FAILED",
		New:    func() Phase { return &Conformance{} },
		Faults: []Fault{{Metric: metrics.Failed, Of: conformanceCases, What: "cases FAILED: a MUST of RFC 6455 broken"}},
		Metrics: []metrics.Def{
			{Name: conformanceCases, Kind: metrics.Count, Doc: "cases run"},
			{Name: conformanceOK, Kind: metrics.Count, Doc: "cases with verdict OK"},
			{Name: conformanceNonStrict, Kind: metrics.Count, Doc: "cases with verdict NON-STRICT: conformant, but a SHOULD broken (e.g. close 1002 where 1007 was expected)"},
			{Name: conformanceInformational, Kind: metrics.Count, Doc: "cases with verdict INFORMATIONAL: the RFC leaves the behavior open"},
			{Name: conformanceUnimplemented, Kind: metrics.Count, Doc: "cases with verdict UNIMPLEMENTED: permessage-deflate cases on a server that did not negotiate it"},
			{Name: metrics.Failed, Kind: metrics.Count, Doc: "cases with verdict FAILED: a MUST of RFC 6455 broken"},
			{Name: conformanceFailing, Kind: metrics.Count, Doc: "cases that do not pass under behavior: failed, plus non_strict when strict"},
			{Name: conformanceNotRun, Kind: metrics.Count, Doc: "cases selected but not run: the server's process exited (then the row fails with its exit, and no case after it counts FAILED)"},
			{Name: metrics.Used, Kind: metrics.Duration, Doc: "wall time of the phase"},
		},
		Title: "[Conformance] Report",
		Columns: []Column{
			{Metric: ColFramework},
			{Header: "Cases", Metric: conformanceCases},
			{Header: "OK", Metric: conformanceOK},
			{Header: "Non-strict", Metric: conformanceNonStrict},
			{Header: "Informational", Metric: conformanceInformational},
			{Header: "Unimplemented", Metric: conformanceUnimplemented},
			{Header: "Failed", Metric: metrics.Failed},
			{Header: "Failing", Metric: conformanceFailing},
			{Header: "Not run", Metric: conformanceNotRun},
			{Header: "Time", Metric: metrics.Used, Format: FormatDuration},
			{Metric: ColVerdict},
		},
		Summary: func(v metrics.Values) string {
			return fmt.Sprintf("%d cases: %d OK, %d non-strict, %d failed; %d failing", v.Int(conformanceCases), v.Int(conformanceOK), v.Int(conformanceNonStrict), v.Int(metrics.Failed), v.Int(conformanceFailing))
		},
		Tables: conformanceTables,
	})
}

// Validate implements Phase.
func (p *Conformance) Validate(Context) []FieldError {
	var errs []FieldError
	switch autobahn.Behavior(p.Behavior) {
	case autobahn.Strict, autobahn.Lenient:
	default:
		errs = append(errs, FieldError{Field: "behavior", Msg: fmt.Sprintf("must be %s or %s, got %q", autobahn.Strict, autobahn.Lenient, p.Behavior)})
	}
	for _, f := range []struct {
		field string
		pats  []string
	}{{"cases", p.Cases}, {"exclude", p.Exclude}} {
		for _, pat := range f.pats {
			if _, err := autobahn.Select([]string{pat}, nil); err != nil {
				errs = append(errs, FieldError{Field: f.field, Msg: fmt.Sprintf("%q matches no case (ids look like 1.1.1, 2.10, 6.4.*)", pat)})
			}
		}
	}
	if len(errs) == 0 {
		if cases, _ := autobahn.Select(p.include(), p.Exclude); len(cases) == 0 {
			errs = append(errs, FieldError{Field: "exclude", Msg: "leaves no case to run"})
		}
	}
	return errs
}

// include is the include list: cases, or every case but the big ones.
func (p *Conformance) include() []string {
	if len(p.Cases) > 0 {
		return p.Cases
	}
	var ids []string
	for _, c := range autobahn.Cases() {
		if !c.Big {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// noDeflate reports whether the run had permessage-deflate cases (12.x,
// 13.x) and every one was UNIMPLEMENTED: the server negotiated none.
func noDeflate(rep autobahn.Report) bool {
	deflate, unimpl := 0, 0
	for _, r := range rep.Results {
		if strings.HasPrefix(r.ID, "12.") || strings.HasPrefix(r.ID, "13.") {
			deflate++
			if r.Verdict == autobahn.Unimplemented {
				unimpl++
			}
		}
	}
	return deflate > 0 && unimpl == deflate
}

// Run implements Phase.
func (p *Conformance) Run(ctx context.Context, env *Env) (Outcome, error) {
	t := env.Target
	if t.URL == "" && t.Addr == "" {
		return Outcome{}, fmt.Errorf("conformance: the engine gave no target address")
	}
	o := autobahn.Options{
		Cases:       p.include(),
		Exclude:     p.Exclude,
		CaseTimeout: p.CaseTimeout.D(),
		Behavior:    autobahn.Behavior(p.Behavior),
		Parallel:    p.Parallel,
		Gone:        env.ServerGone,
	}
	if pr := env.Progress; pr != nil {
		o.Selected = func(n int) { pr.Total.Store(int64(n)) }
		o.Done = func(autobahn.Result) { pr.Done.Add(1) }
	}
	rep, err := autobahn.Run(ctx, autobahn.Target{URL: t.URL, Addr: t.Addr, Header: t.Header, TLS: t.TLS}, o)
	if err != nil {
		return Outcome{}, fmt.Errorf("conformance: %w", err)
	}
	if rep.Interrupted && env.ServerGone != nil {
		// Cut short because the engine saw the server exit: the cases
		// left are not run, as when a case found it gone.
		if why := env.ServerGone(0); why != "" {
			selected, _ := autobahn.Select(o.Cases, o.Exclude)
			rep.Interrupted, rep.ServerGone, rep.NotRun = false, why, len(selected)-rep.Cases
		}
	}
	detail, err := json.Marshal(rep)
	if err != nil {
		return Outcome{}, fmt.Errorf("conformance: %w", err)
	}
	out := Outcome{
		Metrics: metrics.Values{
			conformanceCases:         int64(rep.Cases),
			conformanceOK:            int64(rep.OK),
			conformanceNonStrict:     int64(rep.NonStrict),
			conformanceInformational: int64(rep.Informational),
			conformanceUnimplemented: int64(rep.Unimplemented),
			metrics.Failed:           int64(rep.Failed),
			conformanceFailing:       int64(rep.Failing),
			conformanceNotRun:        int64(rep.NotRun),
			metrics.Used:             rep.Duration,
		},
		Detail: detail,
	}
	if rep.Failing > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d of %d cases do not pass (%s): %s", rep.Failing, rep.Cases, rep.Behavior, failingSummary(rep)))
	}
	if n := handshakeFailures(rep); n == rep.Cases && n > 0 {
		out.Failed = true
		out.Error = "no case could open a WebSocket connection: " + firstObserved(rep)
	}
	if t.Compression && noDeflate(rep) {
		out.Failed = true
		out.Error = "compression is on, but the server negotiated no permessage-deflate: every 12.x/13.x case is UNIMPLEMENTED"
	}
	if rep.ServerGone != "" {
		// The engine names the death as the row's cause; this says the
		// same where nothing else does (a kind run without an engine).
		out.Failed = true
		out.Error = fmt.Sprintf("server %s during the phase: %d of %d cases not run", rep.ServerGone, rep.NotRun, rep.Cases+rep.NotRun)
		out.Warnings = append(out.Warnings, fmt.Sprintf("the server's process exited (%s) after %d cases: %d cases not run, none counted FAILED after its death", rep.ServerGone, rep.Cases, rep.NotRun))
	}
	if rep.Interrupted {
		out.Warnings = append(out.Warnings, fmt.Sprintf("interrupted: %d cases finished", rep.Cases))
	}
	return out, ctx.Err()
}

// failingSummary lists the failing case ids in case order, runs of one
// section collapsed: "2.10, 6.4.1-6.4.4 (4), 7.5.1".
func failingSummary(rep autobahn.Report) string {
	var ids []string
	for _, r := range rep.Failures() {
		ids = append(ids, r.ID)
	}
	return CaseRanges(ids)
}

// CaseRanges writes case ids (in case order) compactly: consecutive ids
// of one section become "first-last (n)"; e.g. "1.1.1, 6.4.1-6.4.4 (4)".
func CaseRanges(ids []string) string {
	section := func(id string) string {
		if i := strings.LastIndexByte(id, '.'); i >= 0 {
			return id[:i]
		}
		return id
	}
	all := map[string]int{} // id -> index in case order
	for i, c := range autobahn.Cases() {
		all[c.ID] = i
	}
	var parts []string
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && section(ids[j]) == section(ids[i]) && all[ids[j]] == all[ids[j-1]]+1 {
			j++
		}
		switch n := j - i; {
		case n == 1:
			parts = append(parts, ids[i])
		default:
			parts = append(parts, fmt.Sprintf("%s-%s (%d)", ids[i], ids[j-1], n))
		}
		i = j
	}
	return strings.Join(parts, ", ")
}

func handshakeFailures(rep autobahn.Report) int {
	n := 0
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Observed, "opening handshake failed") {
			n++
		}
	}
	return n
}

func firstObserved(rep autobahn.Report) string {
	if len(rep.Results) == 0 {
		return ""
	}
	return rep.Results[0].Observed
}

// conformanceTables is the table of one server's cases that did not pass,
// and its NON-STRICT cases under lenient, with what the server did.
func conformanceTables(r *result.Result) []Table {
	if len(r.Detail) == 0 {
		return nil
	}
	var rep ConformanceDetail
	if err := json.Unmarshal(r.Detail, &rep); err != nil {
		return []Table{{Title: r.Server + ": conformance detail unreadable", Header: []string{"Error"}, Rows: [][]string{{err.Error()}}}}
	}
	var rows [][]string
	for _, c := range rep.Results {
		if c.Pass && c.Verdict != autobahn.NonStrict {
			continue
		}
		rows = append(rows, []string{c.ID, string(c.Verdict), c.Observed})
	}
	if len(rows) == 0 {
		return nil
	}
	return []Table{{
		Title:  fmt.Sprintf("%s: %d cases not OK", r.Server, len(rows)),
		Header: []string{"Case", "Verdict", "Observed"},
		Rows:   rows,
	}}
}
