package report

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/wsplan/wsplan/internal/result"
)

// The assets of the HTML report, inlined into every page: uPlot (the chart
// library, MIT, see assets/uplot/LICENSE), the page's own script and style,
// and the page template.
//
//go:embed assets/uplot/uPlot.iife.min.js assets/uplot/uPlot.min.css assets/uplot/LICENSE assets/report.js assets/report.css assets/report.html.tmpl
var htmlAssets embed.FS

var htmlTemplate = template.Must(template.New("report.html.tmpl").ParseFS(htmlAssets, "assets/report.html.tmpl"))

// HTML writes one self-contained HTML page for one or more runs: no request
// leaves the page when it is opened (uPlot, the script, the style and the
// data are inlined). It shows, for each run, the host banner, wsplan's
// provenance, the same phase tables and assertions as the terminal; and for
// each phase, charts comparing the servers and the runs (each run a series):
// the phase's rate (TPS), server and client CPU-seconds per million messages,
// memory per connection, the latency percentile spectrum and, where results
// carry one, the per-second timeline. A phase kind the page does not know
// still gets its table and whichever of these charts its metrics allow.
//
// With several runs, the tables of every run after the first show their
// changes against the first, as `wsplan compare` does.
func HTML(w io.Writer, runs []*result.Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("report: html: no runs")
	}
	medians := make([]*result.Run, len(runs))
	for i, r := range runs {
		medians[i] = result.Collapse(r)
	}
	runs = medians
	page, err := htmlPage(runs)
	if err != nil {
		return err
	}
	return htmlTemplate.Execute(w, page)
}

// htmlView is what the template renders.
type htmlView struct {
	Title   string
	Runs    []htmlRunView
	UPlotJS template.JS
	UPlotCS template.CSS
	License string
	Script  template.JS
	Style   template.CSS
	Data    template.JS // the charts, JSON
}

// htmlRunView is one run's part of the page.
type htmlRunView struct {
	Label       string
	Description string
	Host        string
	Provenance  string   // one line; "" when the file has none
	Libraries   []string // "module version"
	Notes       []string // interrupted, aborted
	Blocks      []mdBlock
}

func htmlPage(runs []*result.Run) (*htmlView, error) {
	labels := runLabels(runs)
	v := &htmlView{Title: pageTitle(runs)}
	for i, run := range runs {
		rv := htmlRunView{Label: labels[i], Description: strings.TrimSpace(run.Plan.Description)}
		var host bytes.Buffer
		if err := Host(&host, run); err != nil {
			return nil, err
		}
		rv.Host = strings.TrimRight(host.String(), "\n")
		if p := run.Wsplan; p != nil {
			rv.Provenance = p.String()
			for _, l := range p.LibraryNames() {
				rv.Libraries = append(rv.Libraries, l+" "+p.Libraries[l])
			}
		}
		if run.Interrupted {
			rv.Notes = append(rv.Notes, "Interrupted: the run was stopped before the end; the tables hold what was measured until then.")
		}
		if run.Aborted != "" {
			rv.Notes = append(rv.Notes, "Stopped early (abort: true): "+run.Aborted+".")
		}
		var md bytes.Buffer
		var base *result.Run
		if i > 0 {
			base = runs[0]
		}
		if err := Tables(&md, run, base, FormatMarkdown); err != nil {
			return nil, err
		}
		if err := Assertions(&md, run, FormatMarkdown); err != nil {
			return nil, err
		}
		rv.Blocks = parseMarkdownTables(md.String())
		v.Runs = append(v.Runs, rv)
	}
	data, err := json.Marshal(chartModel(runs, labels))
	if err != nil {
		return nil, fmt.Errorf("report: html: %w", err)
	}
	v.Data = template.JS(data) // json.Marshal escapes <, > and &: safe in a script
	read := func(name string) string {
		b, err := htmlAssets.ReadFile(name)
		if err != nil {
			panic(err) // embedded at build time: cannot fail
		}
		return string(b)
	}
	v.UPlotJS = template.JS(read("assets/uplot/uPlot.iife.min.js"))
	v.UPlotCS = template.CSS(read("assets/uplot/uPlot.min.css"))
	v.License = read("assets/uplot/LICENSE")
	v.Script = template.JS(read("assets/report.js"))
	v.Style = template.CSS(read("assets/report.css"))
	return v, nil
}

// pageTitle names the page after the plan(s).
func pageTitle(runs []*result.Run) string {
	var names []string
	seen := map[string]bool{}
	for _, r := range runs {
		n := r.Plan.Name
		if n == "" {
			n = r.Plan.File
		}
		if n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "wsplan report"
	}
	return "wsplan: " + strings.Join(names, " vs ")
}

// runLabels names each run in legends: the start time when every run is of
// the same plan, else the plan's name and the start time; a repeated label
// gets " #2", " #3".
func runLabels(runs []*result.Run) []string {
	if len(runs) == 1 {
		s := runs[0].Plan.Name
		if s == "" {
			s = runs[0].Plan.File
		}
		if !runs[0].Started.IsZero() {
			s = strings.TrimSpace(s + " " + runs[0].Started.UTC().Format("2006-01-02 15:04:05 UTC"))
		}
		return []string{s}
	}
	samePlan := true
	for _, r := range runs[1:] {
		if r.Plan.Name != runs[0].Plan.Name || r.Plan.File != runs[0].Plan.File {
			samePlan = false
		}
	}
	out := make([]string, len(runs))
	count := map[string]int{}
	for i, r := range runs {
		s := ""
		if !samePlan {
			s = r.Plan.Name
			if s == "" {
				s = r.Plan.File
			}
		}
		if !r.Started.IsZero() {
			s = strings.TrimSpace(s + " " + r.Started.UTC().Format("01-02 15:04:05"))
		}
		if s == "" {
			s = "run"
		}
		count[s]++
		if n := count[s]; n > 1 {
			s += fmt.Sprintf(" #%d", n)
		}
		out[i] = s
	}
	return out
}

// mdBlock is one piece of the Markdown that Tables and Assertions write:
// a title line, a table, or a paragraph of notes.
type mdBlock struct {
	Title  string
	Header []string
	Rows   [][]string
	Notes  []string
}

// parseMarkdownTables reads back what Tables and Assertions write in
// Markdown, so the page shows exactly the terminal's tables (one renderer,
// no second copy of the columns): a "[...] Report" line is a title, lines
// starting with '|' a table (the second, the alignment row, skipped), other
// non-empty lines notes; a table that follows another table's notes is a
// block of its own, titled by the line before it.
func parseMarkdownTables(md string) []mdBlock {
	var out []mdBlock
	var cur *mdBlock
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	sc := bufio.NewScanner(strings.NewReader(md))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	inTable := false
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " ")
		switch {
		case line == "":
			inTable = false
		case strings.HasPrefix(line, "|"):
			cells := splitMarkdownRow(line)
			if !inTable && cur != nil && cur.Header != nil {
				// A second table under one title (a kind's extra tables,
				// scenarios.Kind.Tables): its own block, titled by the line
				// written before it.
				title := ""
				if n := len(cur.Notes); n > 0 {
					title, cur.Notes = cur.Notes[n-1], cur.Notes[:n-1]
					if n == 1 {
						cur.Notes = nil
					}
				}
				flush()
				cur = &mdBlock{Title: title}
			}
			if cur == nil {
				cur = &mdBlock{}
			}
			switch {
			case !inTable && cur.Header == nil:
				cur.Header = cells
			case isAlignRow(cells):
			default:
				cur.Rows = append(cur.Rows, cells)
			}
			inTable = true
		case strings.HasPrefix(line, "[") && strings.Contains(line, "] Report"):
			flush()
			cur = &mdBlock{Title: line}
		default:
			if cur == nil {
				cur = &mdBlock{}
			}
			cur.Notes = append(cur.Notes, strings.TrimPrefix(line, "- "))
		}
	}
	flush()
	return out
}

// splitMarkdownRow splits "| a | b\|c |" into ["a", "b|c"].
func splitMarkdownRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			b.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(b.String()))
}

func isAlignRow(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, ":-") != "" || c == "" {
			return false
		}
	}
	return true
}
