package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestValidateREADME: the resolved plans README.md shows under `wsplan
// validate` are what it prints for those plans.
func TestValidateREADME(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, tc := range []struct{ plan, first string }{
		{"../../plans/script.yaml", "  - script (script): "},
		{"../../plans/stomp.yaml", "  - rabbitmq: "},
	} {
		i := strings.Index(readme, "\n"+tc.first)
		if i < 0 {
			t.Fatalf("README.md shows no line starting %q", tc.first)
		}
		block := readme[i+1:]
		block = block[:strings.Index(block, "```")]
		var stdout, stderr bytes.Buffer
		if code := Main([]string{"validate", tc.plan}, &stdout, &stderr); code != 0 {
			t.Fatalf("validate %s: exit %d\n%s", tc.plan, code, stderr.String())
		}
		if !strings.Contains(stdout.String(), block) {
			t.Errorf("README.md shows for %s:\n%s\nvalidate prints:\n%s", tc.plan, block, stdout.String())
		}
	}
}
