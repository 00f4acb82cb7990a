package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// JUnit writes the run as JUnit XML for CI: one <testsuite> per server (in
// run order); in it one <testcase> per phase, failed when the phase failed
// (the error and the tail of the server's log as the failure text), and one
// per assertion, failed when it did not hold (its values as the failure
// text). A phase's time is its "used" metric; its metrics and warnings are
// the case's <system-out>. With repeats the cases are the medians
// (result.Collapse), failed when any repeat failed; with a matrix a case's
// name ends with its combination: "echo [payload=64]".
func JUnit(w io.Writer, run *result.Run) error {
	run = result.Collapse(run)
	names := run.MatrixNames()
	combo := func(vars map[string]string) string {
		if len(vars) == 0 {
			return ""
		}
		return " [" + result.VarsString(vars, names) + "]"
	}
	name := "wsplan"
	if run.Plan.Name != "" {
		name += ": " + run.Plan.Name
	}
	doc := junitSuites{Name: name}
	index := map[string]int{}
	suite := func(server string) *junitSuite {
		i, ok := index[server]
		if !ok {
			i = len(doc.Suites)
			index[server] = i
			doc.Suites = append(doc.Suites, junitSuite{Name: server})
		}
		return &doc.Suites[i]
	}
	for i := range run.Results {
		r := &run.Results[i]
		s := suite(r.Server)
		secs := r.Metrics.Dur(metrics.Used).Seconds()
		s.add(phaseCase(r, combo(r.Vars), secs))
		s.secs += secs
	}
	for _, a := range run.Assertions {
		suite(a.Server).add(assertionCase(run, a, combo(a.Vars)))
	}
	for i := range doc.Suites {
		s := &doc.Suites[i]
		s.Time = fmt.Sprintf("%.3f", s.secs)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
	}
	if !run.Started.IsZero() && run.Finished.After(run.Started) {
		doc.Time = fmt.Sprintf("%.3f", run.Finished.Sub(run.Started).Seconds())
	}

	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("report: junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// metricsLine lists a result's metrics as sorted "k=v" pairs.
func metricsLine(r *result.Result) string {
	names := make([]string, 0, len(r.Metrics))
	for k := range r.Metrics {
		names = append(names, k)
	}
	sort.Strings(names)
	kinds := map[string]metrics.Kind{}
	for _, d := range scenarios.MetricDefs(r.Kind) {
		kinds[d.Name] = d.Kind
	}
	parts := make([]string, len(names))
	for i, n := range names {
		k, known := kinds[n]
		parts[i] = n + "=" + formatValue(r.Metrics[n], k, known)
	}
	return strings.Join(parts, " ")
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Time     string       `xml:"time,attr,omitempty"`
	Suites   []junitSuite `xml:"testsuite"`
}

// phaseCase is a phase's test case: its metrics and warnings as its
// output, failed with its error and the server log's tail.
func phaseCase(r *result.Result, combo string, secs float64) junitCase {
	c := junitCase{Classname: "wsplan." + r.Server, Name: r.Phase + combo, Time: fmt.Sprintf("%.3f", secs)}
	var out []string
	if m := metricsLine(r); m != "" {
		out = append(out, m)
	}
	out = append(out, r.Warnings...)
	if len(out) > 0 {
		c.SystemOut = &junitText{strings.Join(out, "\n")}
	}
	if !r.OK {
		text := r.Error
		if r.ServerLog != "" {
			text += "\n\nserver log (tail):\n" + r.ServerLog
		}
		c.Failure = &junitFailure{Message: r.Error, Type: "phase", Text: text}
	}
	return c
}

// assertionCase is an assertion's test case, failed with the values it
// was evaluated with when it did not hold.
func assertionCase(run *result.Run, a result.Assertion, combo string) junitCase {
	label := a.Name
	if label == "" {
		label = a.Expr
	}
	c := junitCase{Classname: "wsplan." + a.Server, Name: a.Phase + combo + ": " + label, Time: "0.000"}
	if !a.Pass {
		msg := "assertion failed: " + a.Expr
		if a.Error != "" {
			msg = a.Error
		}
		text := "expr: " + a.Expr
		if v := assertionValues(run, a); v != "" {
			text += "\nvalues: " + v
		}
		c.Failure = &junitFailure{Message: msg, Type: "assertion", Text: text}
	}
	return c
}

// add appends a case to the suite, counting it (and its failure).
func (s *junitSuite) add(c junitCase) {
	if c.Failure != nil {
		s.Failures++
	}
	s.Tests++
	s.Cases = append(s.Cases, c)
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
	secs     float64
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

type junitText struct {
	Text string `xml:",cdata"`
}
