package docs

import (
	"flag"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/reference"
)

var update = flag.Bool("update", false, "rewrite the generated regions of the pages")

// root is the repository's root, from this package's directory.
const root = ".."

func pages(t *testing.T) map[string]string {
	t.Helper()
	out, err := ReadPages(root)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReference: every generated region holds the table the key
// declarations make today, and every table has a region somewhere.
func TestReference(t *testing.T) {
	tables, err := reference.Tables()
	if err != nil {
		t.Fatal(err)
	}
	placed := map[string]string{}
	for p, text := range pages(t) {
		got, names, err := reference.Fill(text, tables)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		for _, n := range names {
			if other, ok := placed[n]; ok {
				t.Errorf("%s: region %q is in %s too: one place for each table", p, n, other)
			}
			placed[n] = p
		}
		if got == text {
			continue
		}
		if *update {
			if err := os.WriteFile(filepath.Join(root, p), []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: a generated reference table is stale: regenerate with\n\t%s", p, reference.Command)
	}
	for n := range tables {
		if _, ok := placed[n]; !ok {
			where := "docs/reference.md"
			if kind, ok := strings.CutPrefix(n, reference.RegionKind); ok {
				where = "docs/kinds/" + kind + ".md"
			}
			t.Errorf("table %q has no region: add\n\t%s%s -->\n\t%s\nto %s, then run %s", n, reference.Begin, n, reference.End, where, reference.Command)
		}
	}
}

// TestReferenceRegionsSad: a region with no table, or left open, fails.
func TestReferenceRegionsSad(t *testing.T) {
	tables := map[string]string{"kind x": "| a |\n"}
	for _, tc := range []struct{ text, want string }{
		{"a\n" + reference.Begin + "kind y -->\nold\n" + reference.End + "\n", `region "kind y": no such table`},
		{reference.Begin + "kind x -->\nold\n", `region "kind x" has no`},
	} {
		if _, _, err := reference.Fill(tc.text, tables); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Fill(%q) = %v, want %q", tc.text, err, tc.want)
		}
	}
	quoted := "see `" + reference.Begin + "kind y -->` in text\n"
	if got, names, err := reference.Fill(quoted, tables); err != nil || len(names) != 0 || got != quoted {
		t.Errorf("a marker inside a line is text: Fill = %q, %v, %v", got, names, err)
	}
	got, names, err := reference.Fill("a\n"+reference.Begin+"kind x -->\nold\n"+reference.End+"\nb\n", tables)
	if err != nil || len(names) != 1 || got != "a\n"+reference.Begin+"kind x -->\n| a |\n"+reference.End+"\nb\n" {
		t.Errorf("Fill = %q, %v, %v", got, names, err)
	}
}

// TestLinks: every relative link of README.md and docs/ names a file or
// directory that exists, and a #anchor a heading of its page.
func TestLinks(t *testing.T) {
	all := pages(t)
	anchors := map[string]map[string]bool{}
	for p, text := range all {
		anchors[p] = Anchors(text)
	}
	for p, text := range all {
		for _, l := range Links(text) {
			if strings.Contains(l.Target, "://") || strings.HasPrefix(l.Target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(l.Target, "#")
			target := p
			if file != "" {
				target = path.Clean(path.Join(path.Dir(p), file))
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
					t.Errorf("%s:%d: link %s: no such file %s", p, l.Line, l.Target, target)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			a, ok := anchors[target]
			if !ok {
				t.Errorf("%s:%d: link %s: an anchor into a page that is not Markdown", p, l.Line, l.Target)
				continue
			}
			if !a[anchor] {
				t.Errorf("%s:%d: link %s: %s has no heading #%s", p, l.Line, l.Target, target, anchor)
			}
		}
	}
}

var (
	// measuredRE is the line above a table of figures: a date (or a
	// range), a commit, and the host.
	measuredRE = regexp.MustCompile(`^Measured: (\d{4}-\d{2}-\d{2})(–\d{4}-\d{2}-\d{2})?( \([^)]*\))?, commit ([0-9a-f]{7,40}), (\S.{5,})$`)
	// figureRE is a cell that is a measured figure: a number with its
	// unit, maybe bold, maybe with a note in brackets after it.
	figureRE = regexp.MustCompile(`^(\*\*)?[~≈+−-]?[0-9][0-9,.]*(–[0-9][0-9,.]*)?(\*\*)?( ?(ns|µs|us|ms|s|KiB|MiB|GiB|KB|MB|B|%|/s|k|×|x))?(\*\*)?( \(.*\))?$`)
)

// TestMeasuredTables: a table with a column of measured figures says,
// on the line right above it, when, at which commit and on which host it
// was measured.
func TestMeasuredTables(t *testing.T) {
	for p, text := range pages(t) {
		for _, tb := range Tables(text) {
			if strings.Join(tb.Header, "|") == "key|type|default|bounds|doc" || !figures(tb) {
				continue // a generated reference table holds declarations, not figures
			}
			if !measuredRE.MatchString(tb.Above) {
				t.Errorf("%s:%d: a table of measured figures needs, on the line above it,\n\tMeasured: YYYY-MM-DD, commit HASH, HOST\ngot %q", p, tb.Line, tb.Above)
			}
		}
	}
}

// figures says whether a column after the first holds a measured figure
// in every row.
func figures(tb Table) bool {
	if len(tb.Rows) == 0 {
		return false
	}
	for c := 1; c < len(tb.Header); c++ {
		all := true
		for _, r := range tb.Rows {
			if c >= len(r) || !(figureRE.MatchString(r[c]) || r[c] == "–" || r[c] == "-") {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func TestFiguresHappySad(t *testing.T) {
	for _, tc := range []struct {
		rows [][]string
		want bool
	}{
		{[][]string{{"gws", "1.34 ms"}, {"gorilla", "3.64 ms"}}, true},
		{[][]string{{"gws", "12,197"}, {"x", "–"}}, true},
		{[][]string{{"gws", "**0.55**"}, {"x", "1.09 (0.70–2.33)"}}, true},
		{[][]string{{"`p99`", "latency"}, {"`tps`", "echoes per second"}}, false},
		{[][]string{{"0", "every phase ran"}, {"1", "an assertion failed"}}, false},
		{nil, false},
	} {
		tb := Table{Header: []string{"a", "b"}, Rows: tc.rows}
		if got := figures(tb); got != tc.want {
			t.Errorf("figures(%v) = %v, want %v", tc.rows, got, tc.want)
		}
	}
	for line, want := range map[string]bool{
		"Measured: 2026-12-04, commit 7e276aa, the quiet 2-core host (cpuidle driver none)": true,
		"Measured: 2026-12-02–2026-12-03, commit 7e276aa, the 2-core development machine":   true,
		"Measured: 2026-12-04, the quiet 2-core host":                                       false,
		"Measured on the quiet host":                                                        false,
	} {
		if measuredRE.MatchString(line) != want {
			t.Errorf("measuredRE(%q) = %v, want %v", line, !want, want)
		}
	}
}

// TestTopicsEmbedded: every page under docs/ is a topic of the binary,
// with the same bytes.
func TestTopicsEmbedded(t *testing.T) {
	seen := map[string]bool{}
	for _, tp := range Topics() {
		seen["docs/"+tp.Path] = true
		page, err := Page(tp)
		if err != nil {
			t.Fatal(err)
		}
		disk, err := ReadPage(root, "docs/"+tp.Path)
		if err != nil || disk != string(page) {
			t.Errorf("topic %s differs from docs/%s (%v)", tp.Name, tp.Path, err)
		}
	}
	for p := range pages(t) {
		if p != "README.md" && !seen[p] {
			t.Errorf("%s is not embedded: add its directory to the go:embed line of docs/docs.go", p)
		}
	}
	for _, name := range []string{"plans", "kinds/echo", "echo", "echo.md", "docs/kinds/echo.md", "mqtt"} {
		if _, ok := Lookup(name); !ok {
			t.Errorf("Lookup(%q) found nothing", name)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("Lookup(nope) found a page")
	}
}

// TestTablesHaveRows: a table's separator is followed by its rows (a
// line between them would split it in two when rendered).
func TestTablesHaveRows(t *testing.T) {
	for p, text := range pages(t) {
		for _, tb := range Tables(text) {
			if len(tb.Rows) == 0 {
				t.Errorf("%s:%d: a table with no rows", p, tb.Line)
			}
		}
	}
}
