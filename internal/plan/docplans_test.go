package plan

import (
	"os"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/docs"
	"github.com/wsplan/wsplan/internal/script"
)

// TestDocPlans loads every YAML plan shown in README.md and docs/, so the
// manual cannot drift from what the loader accepts; a block that is not
// a whole plan says so with docs.FragmentMarker.
func TestDocPlans(t *testing.T) {
	// The plans taking a header or a token from the environment.
	for _, name := range []string{"API_TOKEN", "WSPLAN_HAR_COOKIE", "WSPLAN_HAR_TOKEN", "WSPLAN_HAR_AUTHORIZATION", "WSPLAN_HAR_X_API_KEY"} {
		t.Setenv(name, "docs-example-"+name)
	}
	plans, err := docs.Plans("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range plans {
		// As if the block were a plan in plans/: paths in it (a script's
		// data file) are relative to that directory.
		name := "../../plans/" + path.Base(b.Page) + "#L" + strconv.Itoa(b.Line)
		if _, err := LoadBytes(name, []byte(b.Body), LoadOptions{}); err != nil {
			t.Errorf("%s:%d: the yaml block does not load as a plan (mark a part of one with %s on the line before it):\n%v\n---\n%s", b.Page, b.Line, docs.FragmentMarker, err, b.Body)
		}
	}
	if len(plans) < 10 {
		t.Errorf("found %d plans in README.md and docs/, want at least 10", len(plans))
	}
}

// TestDocLimits: the Limits table of docs/plans.md states the loader's
// limits as the constants are.
func TestDocLimits(t *testing.T) {
	b, err := os.ReadFile("../../docs/plans.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
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
		if !strings.Contains(page, row) {
			t.Errorf("docs/plans.md's Limits table has no row starting %q", row)
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
