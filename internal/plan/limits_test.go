package plan

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestLineIndex: a path's line is its own when it was seen, else its
// closest ancestor's, however the path was spelt (quoted keys, indexes).
func TestLineIndex(t *testing.T) {
	x := newLineIndex()
	set := map[string]int{
		"phases":                                1,
		"phases[0].script":                      2,
		"phases[0].script.steps[1]":             3,
		"phases[0].script.steps[1].publish.qos": 4,
		`host.sysctl["net.ipv4.tcp_rmem"]`:      5,
		`host.sysctl["a[0]"]`:                   6,
		`["odd key"].x`:                         7,
		"phases[10].echo":                       8,
	}
	// In an order where no path follows its parent.
	for _, p := range []string{"phases[10].echo", "phases[0].script.steps[1].publish.qos", `host.sysctl["a[0]"]`, "phases[0].script.steps[1]",
		`["odd key"].x`, "phases", `host.sysctl["net.ipv4.tcp_rmem"]`, "phases[0].script"} {
		x.set(p, set[p])
	}
	x.setGiven("phases[0].script.steps[1]")
	for path, want := range map[string]int{
		"phases[0].script.steps[1].publish.qos":   4,
		"phases[0].script.steps[1].publish":       3,
		"phases[0].script.steps[1].loop.count":    3,
		"phases[0].script.steps[2]":               2,
		"phases[1].echo":                          1,
		"phases[10].echo.payload":                 8,
		`host.sysctl["net.ipv4.tcp_rmem"]`:        5,
		`host.sysctl["a[0]"]`:                     6,
		`host.sysctl["net.core.somaxconn"]`:       0,
		`["odd key"].x.y`:                         7,
		"nothing":                                 0,
		"":                                        0,
		"phases[0].script.steps[1].headers.a b.c": 3,
	} {
		if got := x.line(path); got != want {
			t.Errorf("line(%s) = %d, want %d", path, got, want)
		}
	}
	if !x.isGiven("phases[0].script.steps[1]") || x.isGiven("phases[0].script") || x.isGiven("phases[0].script.steps[1].publish") {
		t.Error("isGiven is wrong")
	}
}

// TestProblemsListed: past MaxErrors, problems are counted, not listed.
func TestProblemsListed(t *testing.T) {
	var b strings.Builder
	b.WriteString(hostileBase + "phases: [{connect: {connections: 1}}]\n")
	for i := range MaxErrors + 50 {
		fmt.Fprintf(&b, "k%d: 1\n", i)
	}
	_, err := LoadBytes("t.yaml", []byte(b.String()), LoadOptions{})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != MaxErrors+1 {
		t.Fatalf("got %d problems, want %d and a count: %.300v", len(errs), MaxErrors, err)
	}
	if last := errs[len(errs)-1].Error(); last != fmt.Sprintf("t.yaml: and 50 more problems: fix the first %d and load it again", MaxErrors) {
		t.Errorf("last: %s", last)
	}
}

// TestListedAndClipped: messages list at most maxListed names and quote
// at most maxQuoted bytes of a value.
func TestListedAndClipped(t *testing.T) {
	var names []string
	for i := range maxListed + 5 {
		names = append(names, fmt.Sprintf("n%d", i))
	}
	if got := listed(names); !strings.HasSuffix(got, fmt.Sprintf("n%d, … (%d in all)", maxListed-1, maxListed+5)) {
		t.Errorf("listed: %s", got)
	}
	long := strings.Repeat("é", maxQuoted)
	if got := clipped(long); len(got) > maxQuoted+len("…") || !strings.HasSuffix(got, "é…") {
		t.Errorf("clipped: %q", got)
	}
	if got := quoteClipped("short"); got != `"short"` {
		t.Errorf("quoteClipped: %s", got)
	}
}
