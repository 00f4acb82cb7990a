package layering

import (
	"os"
	"strings"
	"testing"
)

// TestDocStatesRules: docs/architecture.md names every package the rules
// let internal/client import, every test-only package and the servers'
// two packages, so the page cannot drift from ClientLeaves, TestOnly,
// TestSupport, TestServers, TestServerImports, Declarations and Servers.
func TestDocStatesRules(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	i := strings.Index(page, "Layering rules, checked by")
	if i < 0 {
		t.Fatal("docs/architecture.md has no paragraph starting \"Layering rules, checked by\"")
	}
	rules := page[i:]
	rules = rules[:strings.Index(rules, "\n\n")]
	for _, pkg := range []string{Declarations, Servers} {
		if !strings.Contains(rules, "`"+pkg+"`") {
			t.Errorf("docs/architecture.md's layering rules do not name `%s`", pkg)
		}
	}
	for _, set := range []map[string]bool{ClientLeaves, TestOnly, TestSupport, TestServers, TestServerImports} {
		for pkg := range set {
			if !strings.Contains(rules, "`"+pkg+"`") {
				t.Errorf("docs/architecture.md's layering rules do not name `%s`", pkg)
			}
		}
	}
}
