package main

import (
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// fitTerminal returns w wrapped so that the prose wsplan writes to it —
// warnings, notes, notices, errors — wraps to the terminal's width, when w
// is a terminal; else w itself (pipes and files get each message on one
// line, for grep). Tables are not written through it: they have their own
// fit (report.TablesFit).
func fitTerminal(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		return fitWriter{f: f}
	}
	return w
}

// fitWriter wraps each Write's lines to the terminal's width, read at each
// Write (the window may be resized). wsplan writes each message in one
// Write, so a message is wrapped whole.
type fitWriter struct{ f *os.File }

// Unwrap is the terminal, for terminal detection (fileOf).
func (w fitWriter) Unwrap() io.Writer { return w.f }

// Write writes p with its long lines wrapped; it reports len(p) written
// when the wrapped text was written whole (the lengths differ).
func (w fitWriter) Write(p []byte) (int, error) {
	width := terminalWidth(w.f)
	s := string(p)
	fitted := fitText(s, width)
	if fitted == s {
		return w.f.Write(p)
	}
	if _, err := io.WriteString(w.f, fitted); err != nil {
		return 0, err
	}
	return len(p), nil
}

// fitText wraps every whole line of s (one that ends in a newline) wider
// than width columns (runes) at spaces; see fitLine. What follows the
// last newline is left as it is: a prompt waiting for its answer, or a
// line the next Write continues, whose width is not known yet. width <= 0
// means no limit.
func fitText(s string, width int) string {
	if width <= 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines[:len(lines)-1] {
		lines[i] = fitLine(l, width)
	}
	return strings.Join(lines, "\n")
}

// contIndent is how much deeper than its first line a wrapped line's
// continuation lines are indented, so that the next message stands out.
const contIndent = "  "

// fitLine wraps one line to width columns at spaces, its continuation
// lines indented by its own indentation plus contIndent. A word longer
// than the room left (a path, a URL) keeps a line of its own, unbroken,
// so that it can still be copied. A line that redraws the screen (a
// carriage return or an escape sequence: the live progress line) is left
// as it is.
func fitLine(l string, width int) string {
	if utf8.RuneCountInString(l) <= width || strings.ContainsAny(l, "\r\x1b") {
		return l
	}
	body := strings.TrimLeft(l, " ")
	indent := l[:len(l)-len(body)]
	var b strings.Builder
	col := 0
	for i, word := range strings.Fields(body) {
		n := utf8.RuneCountInString(word)
		switch {
		case i == 0:
			b.WriteString(indent)
			col = len(indent)
		case col+1+n > width:
			b.WriteString("\n" + indent + contIndent)
			col = len(indent) + len(contIndent)
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += n
	}
	return b.String()
}
