// Package report renders a run document (result.Run) for people and CI:
// the per-phase tables in the layout of the published go-websocket-benchmark
// tables, the host banner, the assertions table, a Markdown summary file and
// JUnit XML.
//
// Data flow: the engine measures and the assert package evaluates into a
// result.Run; cmd/ passes that Run (fresh, or read back from --json) to the
// functions here with the writer to print to. Every function is a pure
// function of its arguments: the same Run renders the same bytes, whether it
// was just measured or read back with result.ReadFile.
//
// Formats: "md" (Markdown tables, the default; also what "" means) and
// "ascii" (boxed tables drawn with +, - and |).
package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// The table formats.
const (
	FormatMarkdown = "md"    // Markdown table; the default
	FormatASCII    = "ascii" // box table of + - |
)

// Formats lists the accepted table formats, the default first.
var Formats = []string{FormatMarkdown, FormatASCII}

func checkFormat(format string) (string, error) {
	switch format {
	case "", FormatMarkdown:
		return FormatMarkdown, nil
	case FormatASCII:
		return FormatASCII, nil
	}
	return "", fmt.Errorf("report: unknown format %q: want %s", format, strings.Join(Formats, " or "))
}

// renderTable writes one table. Cells are single-line: newlines become
// spaces, and in Markdown a '|' is escaped so it cannot split a cell.
func renderTable(w io.Writer, format string, header []string, rows [][]string) error {
	var r tw.Renderer
	switch format {
	case FormatASCII:
		r = renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})
	default:
		r = renderer.NewMarkdown()
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(r),
		tablewriter.WithHeaderAutoFormat(tw.Off), // keep "Framework", not "FRAMEWORK"
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
	)
	t.Header(cleanRow(format, header))
	for _, row := range rows {
		if err := t.Append(cleanRow(format, row)); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

func cleanRow(format string, row []string) []string {
	out := make([]string, len(row))
	for i, c := range row {
		c = strings.Join(strings.Fields(c), " ")
		if c == "" {
			c = "-"
		}
		if format == FormatMarkdown {
			c = strings.ReplaceAll(c, "|", `\|`)
		}
		out[i] = c
	}
	return out
}

// errWriter remembers the first write error so a sequence of Fprintf calls
// can be checked once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

func (e *errWriter) printf(format string, args ...any) {
	fmt.Fprintf(e, format, args...) // the error is kept in e.err
}
