package layering

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ImportChain returns a chain of the module's packages from from to to
// (both relative to module mod, at root), each importing the next from a
// non-test file, or nil when from does not reach to. It is how the
// TestServers rule is checked beyond a package's own imports: a test
// server must not reach internal/client, whose own tests import it.
func ImportChain(root, mod, from, to string) ([]string, error) {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		if pkg == to {
			var chain []string
			for p := pkg; p != ""; p = prev[p] {
				chain = append([]string{p}, chain...)
			}
			return chain, nil
		}
		imps, err := moduleImports(root, mod, pkg)
		if err != nil {
			return nil, err
		}
		for _, imp := range imps {
			if _, seen := prev[imp]; !seen {
				prev[imp] = pkg
				queue = append(queue, imp)
			}
		}
	}
	return nil, nil
}

// moduleImports lists the module's packages that pkg's non-test files
// import, relative to mod.
func moduleImports(root, mod, pkg string) ([]string, error) {
	dir := filepath.Join(root, filepath.FromSlash(pkg))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		for _, imp := range f.Imports {
			if ip, err := strconv.Unquote(imp.Path.Value); err == nil && strings.HasPrefix(ip, mod+"/") {
				out = append(out, strings.TrimPrefix(ip, mod+"/"))
			}
		}
	}
	return out, nil
}
