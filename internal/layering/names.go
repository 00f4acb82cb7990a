package layering

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Words are metric names some kind declares that the module also uses as
// plain words of its own, with no kind meant: the report's verdict "ok"
// (conformance counts "ok" cases), its chart type "steps" (search counts
// its steps) and ping's unit "pongs" (hold counts its pongs). The
// kind-names rule does not check them.
var Words = map[string]bool{
	"ok":    true,
	"steps": true,
	"pongs": true,
}

// Guard is what the kind-names rule checks: every kind's name, and the
// metric names that belong to one kind.
type Guard struct {
	Kinds   map[string]bool   // every kind's name
	Metrics map[string]string // a metric name → the one kind that declares it
}

// NewGuard makes the rule's names from the kind registry: kinds maps each
// kind's name to the metric names it declares (scenarios.Kinds). A
// metric name more than one kind declares, one in shared (the string
// constants of internal/metrics, SharedNames) and Words belong to no kind.
func NewGuard(kinds map[string][]string, shared map[string]bool) Guard {
	g := Guard{Kinds: map[string]bool{}, Metrics: map[string]string{}}
	owners := map[string]map[string]bool{}
	for k, ms := range kinds {
		g.Kinds[k] = true
		for _, m := range ms {
			if owners[m] == nil {
				owners[m] = map[string]bool{}
			}
			owners[m][k] = true
		}
	}
	for m, ks := range owners {
		if len(ks) != 1 || shared[m] || Words[m] {
			continue
		}
		for k := range ks {
			g.Metrics[m] = k
		}
	}
	return g
}

// SharedNames returns the string constants internal/metrics declares under
// root: the names no one kind owns.
func SharedNames(root string) (map[string]bool, error) {
	dir := filepath.Join(root, "internal", "metrics")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, sp := range gd.Specs {
				for _, v := range sp.(*ast.ValueSpec).Values {
					if s, ok := stringLit(v); ok {
						out[s] = true
					}
				}
			}
		}
	}
	return out, nil
}

// kindOfFile returns the kind whose file rel (slash-separated, relative to
// the module root) is, or "": every file of scenarios/K/ (kind K's
// package) is kind K's, and so are scenarios/K.go, scenarios/K_*.go,
// internal/client/K.go and internal/client/K_*.go of a kind not yet
// moved into a package of its own.
func (g Guard) kindOfFile(rel string) string {
	dir, base := path.Split(rel)
	if k, ok := strings.CutPrefix(dir, "scenarios/"); ok && k != "" {
		if k = strings.TrimSuffix(k, "/"); g.Kinds[k] {
			return k
		}
		return ""
	}
	if dir != "scenarios/" && dir != "internal/client/" {
		return ""
	}
	name := strings.TrimSuffix(base, ".go")
	for k := range g.Kinds {
		if name == k || strings.HasPrefix(name, k+"_") {
			return k
		}
	}
	return ""
}

// CheckNames checks one parsed non-test file at rel (slash-separated,
// relative to the module root) against the kind-names rule.
func CheckNames(fset *token.FileSet, f *ast.File, rel string, g Guard) []Violation {
	if strings.HasPrefix(rel, "internal/metrics/") {
		return nil
	}
	c := &namesCheck{fset: fset, g: g, own: g.kindOfFile(rel), skip: map[*ast.BasicLit]bool{}}
	for _, imp := range f.Imports {
		c.skip[imp.Path] = true
	}
	ast.Inspect(f, c.visit)
	return c.out
}

// namesCheck is the kind-names rule over one file.
type namesCheck struct {
	fset  *token.FileSet
	g     Guard
	own   string                 // the kind whose file this is, or ""
	skip  map[*ast.BasicLit]bool // struct tags and import paths
	funcs []*ast.FuncDecl        // the function declarations seen so far
	out   []Violation
}

func (c *namesCheck) add(lit *ast.BasicLit, what string) {
	p := c.fset.Position(lit.Pos())
	c.out = append(c.out, Violation{Pos: fmt.Sprintf("%s:%d", p.Filename, p.Line), Rule: RuleNames, What: what})
}

// asKind checks e where a kind's name would be used as a kind.
func (c *namesCheck) asKind(e ast.Expr) {
	lit, ok := e.(*ast.BasicLit)
	if !ok {
		return
	}
	if s, _ := stringLit(lit); c.g.Kinds[s] && s != c.own {
		c.add(lit, fmt.Sprintf("kind %q", s))
	}
}

// visit checks metric names in every string literal, and kind names where
// they are used as kinds.
func (c *namesCheck) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.Field:
		if n.Tag != nil {
			c.skip[n.Tag] = true
		}
	case *ast.BasicLit:
		if s, ok := stringLit(n); ok && !c.skip[n] {
			if k, ok := c.g.Metrics[s]; ok && k != c.own {
				c.add(n, fmt.Sprintf("%s's metric %q", k, s))
			}
		}
	case *ast.BinaryExpr:
		if n.Op == token.EQL || n.Op == token.NEQ {
			if isKindExpr(n.X) {
				c.asKind(n.Y)
			}
			if isKindExpr(n.Y) {
				c.asKind(n.X)
			}
		}
	case *ast.SwitchStmt:
		if n.Tag != nil && isKindExpr(n.Tag) {
			for _, cc := range n.Body.List {
				for _, e := range cc.(*ast.CaseClause).List {
					c.asKind(e)
				}
			}
		}
	case *ast.AssignStmt:
		for i, l := range n.Lhs {
			if isKindExpr(l) && i < len(n.Rhs) {
				c.asKind(n.Rhs[i])
			}
		}
	case *ast.CompositeLit:
		for _, e := range n.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				if key, ok := kv.Key.(*ast.Ident); ok && (isKindName(key.Name) || key.Name == "Name" && isKindExpr(n.Type)) {
					c.asKind(kv.Value)
				}
			}
		}
	case *ast.CallExpr:
		if name := calleeName(n.Fun); name == "Lookup" || name == "MetricDefs" {
			for _, a := range n.Args {
				c.asKind(a)
			}
		}
	case *ast.FuncDecl:
		c.funcs = append(c.funcs, n)
	case *ast.ReturnStmt:
		if fd := enclosing(c.funcs, n.Pos()); fd != nil && isKindName(fd.Name.Name) {
			for _, r := range n.Results {
				c.asKind(r)
			}
		}
	}
	return true
}

// isKindName reports whether an identifier names a kind: kind, Kind.
func isKindName(s string) bool { return strings.EqualFold(s, "kind") }

// isKindExpr reports whether e is something named kind: kind, x.Kind,
// x.Kind(), Kind, *x.Kind.
func isKindExpr(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return isKindName(e.Name)
	case *ast.SelectorExpr:
		return isKindName(e.Sel.Name)
	case *ast.CallExpr:
		return len(e.Args) == 0 && isKindExpr(e.Fun)
	case *ast.StarExpr:
		return isKindExpr(e.X)
	}
	return false
}

// calleeName is the name a call calls: f, x.f.
func calleeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.IndexExpr: // a generic function's instance
		return calleeName(e.X)
	}
	return ""
}

// enclosing returns the function declaration that holds pos, or nil.
func enclosing(funcs []*ast.FuncDecl, pos token.Pos) *ast.FuncDecl {
	for _, fd := range funcs {
		if fd.Pos() <= pos && pos < fd.End() {
			return fd
		}
	}
	return nil
}

// stringLit returns the value of a string literal expression.
func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
