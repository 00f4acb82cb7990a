package plan

import (
	"os"
	"regexp"
	"strings"
	"testing"
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
