package reference

import (
	"fmt"
	"strings"
)

// Fill replaces the body of every marked region of text with the table
// of its name, and returns the new text and the names of its regions. A
// region's markers start their lines (a marker quoted in a sentence or an
// indented block is text). A region whose name has no table, or one left
// open, is an error.
func Fill(text string, tables map[string]string) (string, []string, error) {
	var out strings.Builder
	var found []string
	rest := text
	for {
		i := lineStart(rest, Begin)
		if i < 0 {
			out.WriteString(rest)
			return out.String(), found, nil
		}
		eol := strings.Index(rest[i:], "-->")
		if eol < 0 {
			return "", found, fmt.Errorf("a region's begin marker has no -->")
		}
		name := strings.TrimSpace(rest[i+len(Begin) : i+eol])
		head := rest[:i+eol+len("-->")]
		body := rest[i+eol+len("-->"):]
		j := lineStart(body, End)
		if j < 0 {
			return "", found, fmt.Errorf("region %q has no %s", name, End)
		}
		table, ok := tables[name]
		if !ok {
			return "", found, fmt.Errorf("region %q: no such table (known: keys, section NAME, kind NAME, options)", name)
		}
		found = append(found, name)
		out.WriteString(head)
		out.WriteString("\n" + table)
		out.WriteString(End)
		rest = body[j+len(End):]
	}
}

// lineStart is the index of the first marker in text that starts a line,
// or -1.
func lineStart(text, marker string) int {
	for off := 0; ; {
		i := strings.Index(text[off:], marker)
		if i < 0 {
			return -1
		}
		if at := off + i; at == 0 || text[at-1] == '\n' {
			return at
		}
		off += i + len(marker)
	}
}
