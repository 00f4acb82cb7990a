package plan

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem with a plan, located in its file.
//
// It prints as `file:line: field.path: message`, e.g.
//
//	plans/x.yaml:12: phases[1].echo.payload: must be > 0, got -5
//
// Line is 0 when the problem has no place in the file (a --set or --only
// flag, a missing section); the line part is then left out. Field is the
// path of the YAML key from the top of the document ("" = the document or
// the problem is in a flag, see Msg).
type Error struct {
	File  string // the file name given to Load or LoadBytes
	Line  int    // 1-based line, 0 = none
	Field string // e.g. "phases[1].echo.payload"; "" = the whole document
	Msg   string // lower-case, states the bound and a fix where one exists
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in a plan, in line order. Load returns it
// (as error) whenever the plan is unusable; get at the list with
//
//	var errs plan.Errors
//	if errors.As(err, &errs) { … }
//
// or at the first one with errors.As(err, new(*plan.Error)).
type Errors []*Error

// Error prints one problem per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As and errors.Is look at each problem.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// sorted returns the problems ordered by line (problems without a line
// first), keeping the order they were found in within a line, without
// duplicates.
func (es Errors) sorted() Errors {
	seen := map[Error]bool{}
	out := make(Errors, 0, len(es))
	for _, e := range es {
		if seen[*e] {
			continue
		}
		seen[*e] = true
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// suggest returns the candidate closest to s when it is close enough to be
// a likely typo, or "".
func suggest(s string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		if diff := len(c) - len(s); (diff > 3 || diff < -3) && best != "" {
			continue // at least that far: never closer than the limit below
		}
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	// A typo changes about a third of a word at most; "x" is not "nbio",
	// and a one- or two-letter word is a typo only of itself in other case.
	limit := min(3, len(s)/3)
	if len(s) >= 3 {
		limit = max(1, limit)
	}
	if best == "" || bestD > limit {
		return ""
	}
	return best
}

// unknownMsg says that s is not one of known, suggesting the closest name
// or listing them all.
func unknownMsg(what, s string, known []string) string {
	if c := suggest(s, known); c != "" {
		return fmt.Sprintf("unknown %s %q (did you mean %q?)", what, s, c)
	}
	if len(known) == 0 {
		return fmt.Sprintf("unknown %s %s", what, quoteClipped(s))
	}
	return fmt.Sprintf("unknown %s %s (known: %s)", what, quoteClipped(s), listed(known))
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		// Long strings are never typos of a key; skip the quadratic work.
		if a == b {
			return 0
		}
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
