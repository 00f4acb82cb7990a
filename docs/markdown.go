package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// What the docs' tests read: the pages on disk (README.md and every
// Markdown file under docs/), their fenced blocks, tables, links and
// headings. The tests of internal/plan, internal/schema and cmd/wsplan
// read the pages through these too, so every test agrees on what a
// snippet, a fragment or an anchor is.

// FragmentMarker, on the line before a ```yaml block, says the block is
// part of a plan (a step, a server, a workflow file) rather than a whole
// one: the tests then do not load it as a plan.
const FragmentMarker = "<!-- fragment -->"

// MeasuredPrefix starts the line right above a table of measured figures:
// "Measured: 2026-12-04, commit 7e276aa, the quiet 2-core host (…)".
const MeasuredPrefix = "Measured: "

// Pages lists README.md and every .md file under docs/ of the repository
// at root, as paths relative to root with forward slashes, sorted.
func Pages(root string) ([]string, error) {
	out := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".md" {
			return err
		}
		rel, err := filepath.Rel(root, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	sort.Strings(out[1:])
	return out, err
}

// Block is a fenced code block of a page.
type Block struct {
	Page string // relative to the repository's root
	Line int    // of the opening fence, from 1
	Lang string // the fence's info string: yaml, sh, text, …
	// Body is the block's text, its lines unindented by the fence's own
	// indentation (a block in a list item).
	Body string
	// Fragment is set when the line before the fence is FragmentMarker.
	Fragment bool
}

var fenceRE = regexp.MustCompile("^( *)```\\s*([A-Za-z0-9_-]*)")

// Blocks returns the fenced blocks of a page's text.
func Blocks(page, text string) []Block {
	var out []Block
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		b := Block{Page: page, Line: i + 1, Lang: m[2]}
		b.Fragment = i > 0 && strings.TrimSpace(lines[i-1]) == FragmentMarker
		indent := len(m[1])
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimLeft(lines[i], " "), "```"); i++ {
			l := lines[i]
			if len(l)-len(strings.TrimLeft(l, " ")) >= indent {
				l = l[indent:]
			}
			body = append(body, l)
		}
		b.Body = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

// Prose returns the page's lines outside fenced blocks, with their
// numbers from 1; lines inside blocks are empty strings.
func Prose(text string) []string {
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return lines
}

var (
	codeSpanRE = regexp.MustCompile("`[^`]*`")
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// Link is a Markdown link's target and its line.
type Link struct {
	Line   int
	Target string
}

// Links returns the link targets of the page's prose (not in code).
func Links(text string) []Link {
	var out []Link
	for i, l := range Prose(text) {
		l = codeSpanRE.ReplaceAllString(l, "")
		for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
			out = append(out, Link{Line: i + 1, Target: m[1]})
		}
	}
	return out
}

// CodeSpans returns the inline code spans of the page's prose, without
// their backticks, with their lines.
func CodeSpans(text string) []Link {
	var out []Link
	for i, l := range Prose(text) {
		for _, m := range codeSpanRE.FindAllString(l, -1) {
			out = append(out, Link{Line: i + 1, Target: strings.Trim(m, "`")})
		}
	}
	return out
}

var headingRE = regexp.MustCompile(`^#{1,6} +(.*?) *#*$`)

// Anchors returns the anchors of a page's headings as GitHub makes them:
// lower case, punctuation dropped, spaces as dashes, a repeated one with
// -1, -2, … appended.
func Anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range Prose(text) {
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := Slug(m[1])
		if n := seen[a]; n > 0 {
			out[a+"-"+itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

var slugDrop = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)

// Slug is a heading's anchor, as GitHub makes it.
func Slug(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = slugDrop.ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// Table is a Markdown table of a page: its header and data rows, split
// into trimmed cells, and the nearest non-blank line above it.
type Table struct {
	Line   int // of the header row, from 1
	Header []string
	Rows   [][]string
	Above  string
}

// Tables returns the tables of a page's prose.
func Tables(text string) []Table {
	var out []Table
	lines := Prose(text)
	for i := 0; i+1 < len(lines); i++ {
		if !isRow(lines[i]) || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "| ---") {
			continue
		}
		t := Table{Line: i + 1, Header: cells(lines[i])}
		for j := i - 1; j >= 0; j-- {
			if s := strings.TrimSpace(lines[j]); s != "" {
				t.Above = s
				break
			}
		}
		j := i + 2
		for ; j < len(lines) && isRow(lines[j]); j++ {
			t.Rows = append(t.Rows, cells(lines[j]))
		}
		out = append(out, t)
		i = j
	}
	return out
}

func isRow(l string) bool {
	l = strings.TrimSpace(l)
	return strings.HasPrefix(l, "|") && strings.HasSuffix(l, "|")
}

// cells splits a row on the pipes that are not escaped (\|).
func cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	var out []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteByte('|')
			i++
		case row[i] == '|':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

// ReadPage reads a page relative to the repository's root.
func ReadPage(root, page string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	return string(b), err
}

// ReadPages reads every page of Pages, by its path.
func ReadPages(root string) (map[string]string, error) {
	list, err := Pages(root)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range list {
		if out[p], err = ReadPage(root, p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Plans are the YAML plans the pages show: every ```yaml block not
// marked as a fragment, by page and line. One that names no server gets
// the gws preset (servers: [{name: gws}]), as pages show phases alone.
func Plans(root string) ([]Block, error) {
	pages, err := ReadPages(root)
	if err != nil {
		return nil, err
	}
	var out []Block
	for p, text := range pages {
		for _, b := range Blocks(p, text) {
			if b.Lang != "yaml" || b.Fragment {
				continue
			}
			if !strings.Contains(b.Body, "servers:") {
				b.Body = "servers: [{name: gws}]\n" + b.Body
			}
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Page != out[j].Page {
			return out[i].Page < out[j].Page
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}
