package layering

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/scenarios"
)

// kindUses are the kinds built on another kind's package (a search runs
// rate's steps): removing a kind removes these with it. A kind's package
// importing another kind's that is not listed here fails
// TestKindPackagesApart, as does a line here that is no longer true.
var kindUses = map[string][]string{
	"search": {"rate"},
}

// TestKindPackagesApart: a kind that is a package of its own
// (scenarios/K/) is removed by deleting its directory and its line in
// scenarios/all, with the kinds built on it (kindUses). For every such
// kind, the module's packages but those build without it (a `go build
// -overlay` that deletes their files and rewrites scenarios/all/all.go
// without their imports), so nothing but those lines names it.
func TestKindPackagesApart(t *testing.T) {
	testenv.Slow(t, "builds the module once per kind: minutes from an empty build cache")
	goTool, root := goAndRoot(t)
	kinds := packagedKinds(t, root)
	if len(kinds) == 0 {
		t.Fatal("no kind has a package of its own under scenarios/")
	}
	checkKindUses(t, goTool, root, kinds)
	for _, name := range kinds {
		t.Run(name, func(t *testing.T) {
			pkgs := []string{"scenarios/" + name}
			for _, user := range usersOf(name) {
				pkgs = append(pkgs, "scenarios/"+user)
			}
			packageApart(t, goTool, root, "scenarios/all/all.go", pkgs...)
		})
	}
}

// usersOf returns the kinds built on kind, directly or through another
// (kindUses), sorted.
func usersOf(kind string) []string {
	seen := map[string]bool{}
	var walk func(k string)
	walk = func(k string) {
		for user, uses := range kindUses {
			if !seen[user] && slices.Contains(uses, k) {
				seen[user] = true
				walk(user)
			}
		}
	}
	walk(kind)
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkKindUses fails the test unless kindUses lists exactly the kinds'
// packages that import another kind's (non-test files).
func checkKindUses(t *testing.T, goTool, root string, kinds []string) {
	t.Helper()
	const mod = "github.com/wsplan/wsplan/scenarios/"
	got := map[string][]string{}
	for _, k := range kinds {
		out, err := exec.Command(goTool, "list", "-f", `{{join .Imports "\n"}}`, root+"/scenarios/"+k).Output()
		if err != nil {
			t.Fatalf("go list scenarios/%s: %v", k, err)
		}
		for _, imp := range strings.Fields(string(out)) {
			if other, ok := strings.CutPrefix(imp, mod); ok && slices.Contains(kinds, other) {
				got[k] = append(got[k], other)
			}
		}
	}
	for k := range got {
		slices.Sort(got[k])
	}
	want := map[string][]string{}
	for k, uses := range kindUses {
		want[k] = slices.Sorted(slices.Values(uses))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kinds built on other kinds' packages: %v; kindUses says %v: removing a kind must remove those built on it, say so in kindUses", got, want)
	}
}

// TestProtocolPackagesApart: a protocol is a package of its own
// (internal/proto/P/), removed by deleting it and its line in
// internal/proto/all; the module's packages but its own build without
// each in turn, as TestKindPackagesApart does for kinds.
func TestProtocolPackagesApart(t *testing.T) {
	testenv.Slow(t, "builds the module once per protocol: minutes from an empty build cache")
	goTool, root := goAndRoot(t)
	ents, err := os.ReadDir(filepath.Join(root, "internal", "proto"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() || e.Name() == "all" || e.Name() == "testdata" {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			packageApart(t, goTool, root, "internal/proto/all/all.go", "internal/proto/"+e.Name())
		})
	}
	if n == 0 {
		t.Fatal("no protocol package under internal/proto")
	}
}

// packageApart builds every package of the module but pkgs (directories
// relative to root) with their files deleted and the file all (relative
// to root) rewritten without their import lines, and fails the test when
// they do not build. Test code may name what it tests: _test.go files are
// not built, and neither are the test servers (TestServers), which serve
// the protocols' tests — removing a protocol removes its tests and its
// server there with it.
func packageApart(t *testing.T, goTool, root, all string, pkgs ...string) {
	t.Helper()
	out, err := exec.Command(goTool, "list", "-f", "{{.Dir}}", root+"/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	gone := map[string]string{}
	dirs := map[string]bool{}
	var lines []string
	for _, pkg := range pkgs {
		pkgDir := filepath.Join(root, filepath.FromSlash(pkg))
		dirs[pkgDir] = true
		files, err := filepath.Glob(filepath.Join(pkgDir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			gone[f] = ""
		}
		lines = append(lines, `"github.com/wsplan/wsplan/`+pkg+`"`)
	}
	allGo := filepath.Join(root, filepath.FromSlash(all))
	src, err := os.ReadFile(allGo)
	if err != nil {
		t.Fatal(err)
	}
	keep := strings.Split(string(src), "\n")
	for _, line := range lines {
		n := len(keep)
		keep = slices.DeleteFunc(keep, func(l string) bool { return strings.Contains(l, line) })
		if len(keep) == n {
			t.Fatalf("%s does not import %s", all, line)
		}
	}
	without := filepath.Join(t.TempDir(), "all.go")
	if err := os.WriteFile(without, []byte(strings.Join(keep, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	gone[allGo] = without
	var build []string
	for _, d := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		if !dirs[d] && !TestServers[filepath.ToSlash(rel)] {
			build = append(build, d)
		}
	}
	buildWithout(t, goTool, root, gone, build, strings.Join(pkgs, " and "))
}

// TestKindFilesApart: kinds not yet moved into a package of their own do
// not reach into each other, in scenarios/ and in internal/client. For
// every such kind, its package builds with the kind's files (K.go,
// K_*.go) deleted (a `go build -overlay`), so that a kind is removed by
// deleting its files and only its registration goes with them. The
// client's connect kind is the dialer every kind's connections come
// from: it stays.
func TestKindFilesApart(t *testing.T) {
	testenv.Slow(t, "builds a package once per kind: a minute from an empty build cache")
	goTool, root := goAndRoot(t)
	moved := map[string]bool{}
	for _, k := range packagedKinds(t, root) {
		moved[k] = true
	}
	var planKinds, clientKinds []string
	for _, k := range scenarios.Names() {
		if !moved[k] {
			planKinds = append(planKinds, k)
		}
	}
	for _, k := range client.KindNames() {
		if k != "connect" && !moved[k] {
			clientKinds = append(clientKinds, k)
		}
	}
	for _, pkg := range []struct {
		dir   string
		kinds []string
	}{
		{"scenarios", planKinds},
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
				buildWithout(t, goTool, dir, gone, []string{"."}, name+"'s files")
			})
		}
	}
}

// goAndRoot returns the go tool and the module's root; it skips the test
// without a go tool.
func goAndRoot(t *testing.T) (goTool, root string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	root, _ = moduleRoot(t)
	return goTool, root
}

// packagedKinds returns the registered kinds that are a package of their
// own: a directory scenarios/K/ named after the kind.
func packagedKinds(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, k := range scenarios.Names() {
		if st, err := os.Stat(filepath.Join(root, "scenarios", k)); err == nil && st.IsDir() {
			out = append(out, k)
		}
	}
	return out
}

// buildWithout runs `go build` of pkgs in dir with the files of replace
// replaced ("" = deleted), and fails the test when they do not build.
func buildWithout(t *testing.T, goTool, dir string, replace map[string]string, pkgs []string, what string) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(t.TempDir(), "overlay.json")
	if err := os.WriteFile(overlay, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, append([]string{"build", "-overlay", overlay}, pkgs...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("without %s the module does not build: %v\n%s", what, err, out)
	}
}
