package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// treeNodes counts the nodes the parser builds (aliases not expanded).
func treeNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += treeNodes(k)
	}
	return c
}

// TestEstimateNodes: for every YAML file of the repository (plans a
// person wrote) the estimate is within a factor of two of the parser's
// count, so that no such plan is refused for it; for documents made of
// nodes it is at least half the count, so that they are refused before
// the parser builds them.
func TestEstimateNodes(t *testing.T) {
	var files []string
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("found only %d YAML files", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) != nil {
			continue // broken on purpose (invalid-syntax.yaml)
		}
		got, want := estimateNodes(data, 1<<30), treeNodes(&doc)
		if got > 2*want+8 {
			t.Errorf("%s: estimate %d, the parser builds %d nodes", f, got, want)
		}
	}

	hostile := map[string]string{
		"flow list":        "x: [1" + strings.Repeat(",1", 5000) + "]\n",
		"block list":       "x:\n" + strings.Repeat("- 1\n", 5000),
		"flow map":         "x: {" + strings.Repeat("a: 1, ", 5000) + "}\n",
		"block map":        strings.Repeat("a: 1\n", 5000),
		"nested flow":      strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + "\n",
		"aliases":          "a: &a 1\nb: [" + strings.Repeat("*a, ", 5000) + "]\n",
		"list of maps":     strings.Repeat("- {a: 1, b: [2, 3]}\n", 1000),
		"quoted items":     "x: [" + strings.Repeat(`"a,b", 'c''d', `, 2000) + "]\n",
		"after block text": "t: |\n  a: b, c\n  - d\nx: [1" + strings.Repeat(",1", 5000) + "]\n",
		"compact":          "x: [" + strings.Repeat("a:1,", 5000) + "]\n",
	}
	for name, doc := range hostile {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, want := estimateNodes([]byte(doc), 1<<30), treeNodes(&n)
		if got < want/2 || got > 2*want+8 {
			t.Errorf("%s: estimate %d, the parser builds %d nodes", name, got, want)
		}
	}
}
