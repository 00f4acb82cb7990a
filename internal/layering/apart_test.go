package layering

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/scenarios"
)

// TestKindFilesApart: kinds do not reach into each other, in scenarios/
// and in internal/client. For every kind, its package builds with the
// kind's files (K.go, K_*.go) deleted (a `go build -overlay`), so that a
// kind is removed by deleting its files and only its registration goes
// with them. The client's connect kind is the dialer every kind's
// connections come from: it stays.
func TestKindFilesApart(t *testing.T) {
	testenv.Slow(t, "builds a package once per kind: a minute from an empty build cache")
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, _, err := ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	var clientKinds []string
	for _, k := range client.KindNames() {
		if k != "connect" {
			clientKinds = append(clientKinds, k)
		}
	}
	for _, pkg := range []struct {
		dir   string
		kinds []string
	}{
		{"scenarios", scenarios.Names()},
		{"internal/client", clientKinds},
	} {
		dir := filepath.Join(root, pkg.dir)
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range pkg.kinds {
			t.Run(pkg.dir+"/"+name, func(t *testing.T) {
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
					t.Errorf("without %s's files %s does not build: %v\n%s", name, pkg.dir, err, out)
				}
			})
		}
	}
}
