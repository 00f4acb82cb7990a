package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestValidateDocs: the resolved plans the docs show under `wsplan
// validate` are what it prints for those plans.
func TestValidateDocs(t *testing.T) {
	for _, tc := range []struct{ page, plan, first string }{
		{"../../docs/kinds/script.md", "../../plans/script.yaml", "  - script (script): "},
		{"../../docs/protocols.md", "../../plans/stomp.yaml", "  - rabbitmq: "},
	} {
		b, err := os.ReadFile(tc.page)
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		i := strings.Index(page, "\n"+tc.first)
		if i < 0 {
			t.Fatalf("%s shows no line starting %q", tc.page, tc.first)
		}
		block := page[i+1:]
		block = block[:strings.Index(block, "```")]
		var stdout, stderr bytes.Buffer
		if code := Main([]string{"validate", tc.plan}, &stdout, &stderr); code != 0 {
			t.Fatalf("validate %s: exit %d\n%s", tc.plan, code, stderr.String())
		}
		if !strings.Contains(stdout.String(), block) {
			t.Errorf("%s shows for %s:\n%s\nvalidate prints:\n%s", tc.page, tc.plan, block, stdout.String())
		}
	}
}
