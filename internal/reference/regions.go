package reference

import (
	"fmt"
	"strings"
)

// Fill replaces the body of every marked region of text with the table
// of its name, and returns the new text and the names of its regions. A
// region whose name has no table, or one left open, is an error.
func Fill(text string, tables map[string]string) (string, []string, error) {
	var out strings.Builder
	var found []string
	rest := text
	for {
		i := strings.Index(rest, Begin)
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
		j := strings.Index(body, End)
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
