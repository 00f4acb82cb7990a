package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

// TestExtraTables: a kind's own tables (scenarios.Kind.Tables; here
// conformance's cases not OK) follow its table, per server, read back
// from the result's Detail.
func TestExtraTables(t *testing.T) {
	detail := `{"behavior":"strict","results":[` +
		`{"id":"1.1.1","verdict":"OK","pass":true},` +
		`{"id":"2.2","verdict":"FAILED","pass":false,"observed":"got [pong \"wrong\"]"},` +
		`{"id":"6.4.1","verdict":"NON-STRICT","pass":false,"observed":"late close"}]}`
	run := &result.Run{Results: []result.Result{
		{Server: "a", Phase: "conformance", Kind: "conformance", OK: true, Metrics: metrics.Values{"cases": int64(3)}, Detail: []byte(detail)},
		{Server: "b", Phase: "conformance", Kind: "conformance", OK: true, Metrics: metrics.Values{"cases": int64(1)},
			Detail: []byte(`{"results":[{"id":"1.1.1","verdict":"OK","pass":true}]}`)},
		{Server: "c", Phase: "conformance", Kind: "conformance", OK: false, Error: "server died", Metrics: metrics.Values{}},
	}}
	var b strings.Builder
	if err := Tables(&b, run, nil, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := "a: 2 cases not OK\n\n| Case  | Verdict    | Observed           |\n|:------|:-----------|:-------------------|\n" +
		"| 2.2   | FAILED     | got [pong \"wrong\"] |\n| 6.4.1 | NON-STRICT | late close         |\n"
	if !strings.Contains(out, want) {
		t.Errorf("missing\n%s\nin\n%s", want, out)
	}
	if strings.Count(out, "cases not OK") != 1 {
		t.Errorf("tables for servers without failing cases:\n%s", out)
	}
	if i, j := strings.Index(out, "[Conformance] Report"), strings.Index(out, "a: 2 cases not OK"); i < 0 || j < i {
		t.Errorf("the extra table does not follow the phase's table:\n%s", out)
	}
}

// TestParseExtraTables: on the HTML page, a kind's extra table is a block
// of its own, titled, not rows appended to the phase's table.
func TestParseExtraTables(t *testing.T) {
	md := "[X] Report\n\n| A |\n|:--|\n| 1 |\n\n- a: 2 of 3 cases do not pass\n\na: 2 cases not OK\n\n| Case | Verdict |\n|:--|:--|\n| 2.2 | FAILED |\n\nb: 1 cases not OK\n\n| Case | Verdict |\n|:--|:--|\n| 7.5.1 | FAILED |\n"
	got := parseMarkdownTables(md)
	want := []mdBlock{
		{Title: "[X] Report", Header: []string{"A"}, Rows: [][]string{{"1"}}, Notes: []string{"a: 2 of 3 cases do not pass"}},
		{Title: "a: 2 cases not OK", Header: []string{"Case", "Verdict"}, Rows: [][]string{{"2.2", "FAILED"}}},
		{Title: "b: 1 cases not OK", Header: []string{"Case", "Verdict"}, Rows: [][]string{{"7.5.1", "FAILED"}}},
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("got  %s\nwant %s", gb, wb)
	}
}
