package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestFitText: whole lines wider than the terminal wrap at spaces with a
// hanging indent; lines that fit, progress lines, a word wider than the
// room and an unfinished line (a prompt) are left whole; no limit leaves
// everything as it is.
func TestFitText(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		width    int
		want     string
	}{
		{"fits", "warning: short\n", 20, "warning: short\n"},
		{"exactly the width", "0123456789\n", 10, "0123456789\n"},
		{"no limit", "a b c d e f g h\n", 0, "a b c d e f g h\n"},
		{"wraps with a hanging indent", "warning: one two three four\n", 14,
			"warning: one\n  two three\n  four\n"},
		{"indented line keeps its indent", "  - a bb ccc dddd\n", 9,
			"  - a bb\n    ccc\n    dddd\n"},
		{"each line on its own", "aaa bbb ccc\nshort\nddd eee fff\n", 8,
			"aaa bbb\n  ccc\nshort\nddd eee\n  fff\n"},
		{"a long word is not broken", "see /a/very/long/path/to/a/file now\n", 12,
			"see\n  /a/very/long/path/to/a/file\n  now\n"},
		{"runes, not bytes", "µµµµ µµµµ µµµµ\n", 10, "µµµµ µµµµ\n  µµµµ\n"},
		{"progress line untouched", "\r\x1b[Krate gws: 10/6000  20/s  1s  ETA 3s and more words\n", 10,
			"\r\x1b[Krate gws: 10/6000  20/s  1s  ETA 3s and more words\n"},
		{"a prompt (no newline) untouched", "Your server's URL, ws://… or wss://… (empty: a preset): ", 20,
			"Your server's URL, ws://… or wss://… (empty: a preset): "},
		{"whole lines wrap, the unfinished one not", "aaa bbb ccc\nddd eee fff", 8,
			"aaa bbb\n  ccc\nddd eee fff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fitText(tc.in, tc.width)
			if got != tc.want {
				t.Errorf("fitText(%q, %d) =\n%q\nwant\n%q", tc.in, tc.width, got, tc.want)
			}
			// Wrapping moves words, never drops or changes one.
			if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(tc.in), " ") {
				t.Errorf("words changed: %q → %q", tc.in, got)
			}
		})
	}
}

// TestFitTerminalNotFile: a writer that is not a terminal (a buffer, a
// pipe, a file) is returned as it is: its lines are never wrapped.
func TestFitTerminalNotFile(t *testing.T) {
	var b bytes.Buffer
	if w := fitTerminal(&b); w != &b {
		t.Errorf("fitTerminal(buffer) = %T, want the buffer itself", w)
	}
}
