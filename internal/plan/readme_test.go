package plan

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/script"
)

// TestREADMEPlans loads every YAML plan shown in README.md, so the manual
// cannot drift from what the loader accepts.
func TestREADMEPlans(t *testing.T) {
	t.Setenv("API_TOKEN", "readme-example-token") // the plan taking a header from the environment
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	plans := 0
	for i, m := range blocks {
		body := m[1]
		if !strings.Contains(body, "phases:") {
			continue // a fragment, not a plan
		}
		if !strings.Contains(body, "servers:") {
			body = "servers: [{name: gws}]\n" + body
		}
		plans++
		// As if the block were a plan in plans/: paths in it (a script's
		// data file) are relative to that directory.
		if _, err := LoadBytes("../../plans/README.md#yaml"+string(rune('0'+i)), []byte(body), LoadOptions{}); err != nil {
			t.Errorf("README yaml block %d does not load:\n%v\n---\n%s", i, err, body)
		}
	}
	if plans < 2 {
		t.Errorf("found %d plans in README.md, want at least 2", plans)
	}
}

// TestREADMELimits: the Limits table states the loader's limits as the
// constants are.
func TestREADMELimits(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, row := range []string{
		"| plan file | " + sizeName(MaxPlanBytes) + " ",
		"| YAML nodes | " + thousands(MaxNodes) + ",",
		"| nesting of collections | " + strconv.Itoa(MaxDepth) + " deep (a script's loops nest " + strconv.Itoa(script.MaxDepth) + " deep) |",
		"| variable expansion | " + sizeName(MaxExpansion) + " in all",
		"| values decoded | " + sizeName(MaxValueBytes) + " in all",
		"| matrix | " + thousands(MaxCombinations) + " combinations; combinations × plan size ≤ " + sizeName(MaxMatrixBytes) + " ",
		"| problems listed | " + strconv.Itoa(MaxErrors) + ", then how many more; a quoted value is cut at " + strconv.Itoa(maxQuoted) + " bytes |",
		"| data file (`data: {file}`) | " + sizeName(script.MaxDataBytes) + ", a line " + sizeName(script.MaxLineBytes) + ", " + thousands(script.MaxRows) + " rows |",
		"| a template's output | " + sizeName(script.MaxTemplateBytes) + " of its text",
	} {
		if !strings.Contains(readme, row) {
			t.Errorf("README.md's Limits table has no row starting %q", row)
		}
	}
}

// thousands writes n with commas: 100,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
