package scenarios

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKindFilesApart: kinds do not reach into each other. For every kind,
// the package builds with the kind's files (K.go, K_*.go) deleted (a
// `go build -overlay`), so that a kind is removed by deleting its files and
// only its registration goes with them.
func TestKindFilesApart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package once per kind")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			gone := map[string]string{}
			for _, f := range files {
				base := strings.TrimSuffix(filepath.Base(f), ".go")
				if !strings.HasSuffix(base, "_test") && (base == name || strings.HasPrefix(base, name+"_")) {
					gone[f] = "" // deleted
				}
			}
			if len(gone) == 0 {
				t.Fatalf("kind %s has no file %s.go", name, name)
			}
			b, err := json.Marshal(map[string]any{"Replace": gone})
			if err != nil {
				t.Fatal(err)
			}
			overlay := filepath.Join(t.TempDir(), "overlay.json")
			if err := os.WriteFile(overlay, b, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(goTool, "build", "-overlay", overlay, ".")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("without %s's files the package does not build: %v\n%s", name, err, out)
			}
		})
	}
}
