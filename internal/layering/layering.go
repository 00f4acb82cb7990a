// Package layering checks the module's layering rules on its source, so
// that `go test ./...` fails when one is broken:
//
//   - only internal/launch imports os/exec (it owns child processes);
//   - only cmd/ uses the terminal: no os.Stdin, os.Stdout, os.Stderr,
//     fmt.Print*, log.Print*/Fatal*/Panic* (the standard logger writes to
//     stderr), print or println anywhere else — other packages return
//     values and errors, or use the io.Reader/io.Writer their caller passes
//     in;
//   - only cmd/ ends the process (os.Exit): exit codes are decided in one
//     place;
//   - internal/client imports nothing of this module (it is the hot path,
//     kept free of plan, report and engine types);
//   - the built-in servers' declarations (Declarations: frameworks)
//     import the standard library alone, and their implementations
//     (Servers: frameworks/servers, which import every WebSocket and HTTP
//     library the presets measure) are imported by cmd/ alone, test
//     files included: plan loading, validation, the schema and their
//     tests link no server library;
//   - test-only packages (internal/testserver, internal/faultserver,
//     internal/testenv) are imported by _test.go files alone and import
//     nothing of this module, so every package's tests can use them
//     without an import cycle; test-support packages (TestSupport:
//     internal/clienttest, scenarios/scenariotest) are imported by
//     _test.go files alone too, but may import the module and the
//     test-only packages; test-server packages (TestServers:
//     internal/prototest, the protocols' test servers) are imported by
//     _test.go files alone and import nothing that imports
//     internal/client — the client's leaves, the test-only packages and
//     TestServerImports (internal/launch) — so internal/client's own
//     tests and its users' tests share them;
//   - a phase kind's names are spelled only in that kind's files
//     (its package scenarios/K/, or while a kind is still split in two,
//     scenarios/K.go, scenarios/K_*.go, internal/client/K.go,
//     internal/client/K_*.go for kind K; the names come from the kind
//     registry, see Guard). Two kinds of string literal are checked:
//     a kind's name used as a kind — compared with, switched on or
//     assigned to something named kind (r.Kind == "echo", Kind: "echo"),
//     returned by a Kind method, registered as a Kind's Name, or passed
//     to Lookup or MetricDefs — so "rate" as a plan key or "ping" as a
//     protocol op stays free; and a metric name exactly one kind declares
//     (fanout_p99, capacity), anywhere, unless internal/metrics declares
//     it (then it is shared: tps, recv_rate, p99, client_bound) or it is
//     one of Words. internal/metrics may spell every name.
//
// Test files keep two rules only, who imports Servers and the standard
// library's imports in a group of their own: tests may run processes and
// print.
package layering

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The rules, as named in a Violation.
const (
	RuleExec     = "os/exec outside internal/launch"
	RuleTerminal = "terminal I/O outside cmd/"
	RuleExit     = "os.Exit outside cmd/"
	RuleClient   = "internal/client imports the module"
	RuleTestOnly = "test-only package outside tests or not a leaf"
	RuleDecls    = "frameworks imports beyond the standard library"
	RuleServers  = "frameworks/servers imported outside cmd/"
	RuleGroups   = "the standard library's imports grouped with others"
	RuleNames    = "a kind's name outside its files"
)

// ClientLeaves are the module's packages internal/client may import: leaf
// packages made for it that import nothing of the module themselves but
// each other (TLS record layer, permessage-deflate, payload contents,
// scripts), so the client still depends on nothing that could depend on
// it.
var ClientLeaves = map[string]bool{
	"internal/wstls":     true,
	"internal/pmdeflate": true,
	"internal/payload":   true,
	"internal/script":    true, // scripted conversations: templates, paths, matchers
	"internal/units":     true, // durations and sizes (the script documents' types)
	"internal/exprlimit": true, // expr's memory budget (script's expr conditions)
	"internal/decl":      true, // the keys' declarations: defaults, bounds, keys from struct tags
	// The protocols over WebSocket: what they share and their registry,
	// each protocol's codec and state machine, and the list of built-ins.
	"internal/proto":           true,
	"internal/proto/all":       true,
	"internal/proto/graphqlws": true,
	"internal/proto/jsonrpc":   true,
	"internal/proto/mqtt":      true,
	"internal/proto/socketio":  true,
	"internal/proto/stomp":     true,
}

// Declarations is the package that declares the built-in servers (names,
// options, limits, presets): plan loading, validation and the schema
// read it, so it imports the standard library alone. Servers is the
// package of their implementations, which imports the WebSocket and HTTP
// libraries: only cmd/ (`wsplan serve`) imports it, in tests too.
const (
	Declarations = "frameworks"
	Servers      = "frameworks/servers"
)

// TestOnly are the module's packages made for tests alone: only _test.go
// files import them, and they import nothing of the module (leaves, like
// ClientLeaves), so internal/client's tests may use them too.
var TestOnly = map[string]bool{
	"internal/testserver":  true,
	"internal/faultserver": true, // protocol servers that go wrong on purpose (the fault matrix)
	"internal/testenv":     true, // which tests a run includes (WSPLAN_SLOW), waits on a loaded host
}

// TestSupport are the module's packages of helpers for other packages'
// tests (a client closed at cleanup, an echo server with faults): only
// _test.go files import them, and they may import the module and the
// test-only packages.
var TestSupport = map[string]bool{
	"internal/clienttest":    true, // what the kinds' client-side tests share
	"scenarios/scenariotest": true, // what the kinds' plan-side tests share
}

// TestServers are the module's packages of servers that internal/client's
// own tests share with its users' tests (the phase kinds'): only _test.go
// files import them, and they import nothing that imports internal/client
// — the client's leaves (ClientLeaves: the protocols' constants), the
// test-only packages and TestServerImports — so internal/client's
// in-package tests may use them without an import cycle.
var TestServers = map[string]bool{
	"internal/prototest": true, // the protocols' test servers: JSON-RPC, graphql-ws, refusals, mosquitto
}

// TestServerImports are the packages TestServers may import besides
// ClientLeaves and TestOnly; TestModule checks that nothing they import
// imports internal/client.
var TestServerImports = map[string]bool{
	"internal/launch": true, // a broker's process (mosquitto), stopped by its process group
}

// Hints say how to fix a violation of each rule.
var Hints = map[string]string{
	RuleExec:     "start processes through internal/launch",
	RuleTerminal: "return values and errors, or use an io.Reader/io.Writer the caller (cmd/) passes in",
	RuleExit:     "return an error; cmd/ maps it to an exit code",
	RuleClient:   "pass plain values in internal/client's own types; convert in the caller",
	RuleTestOnly: "import test-only packages from _test.go files only, and keep them free of the module's packages (test servers: of all but the client's leaves, the test-only packages and TestServerImports)",
	RuleDecls:    "declare in frameworks with the standard library; what needs a library goes in frameworks/servers",
	RuleServers:  "read the declarations from frameworks; only cmd/ starts servers in-process",
	RuleGroups:   "give the standard library's imports a group of their own, then other modules', then this module's, each group separated by a blank line",
	RuleNames:    "use what the kind declares (scenarios.Kind: Throughput, Columns, Charts, Efficiency), or move a name several kinds share to internal/metrics",
}

// A Violation is one broken rule at one place.
type Violation struct {
	Pos  string // file:line
	Rule string // one of the Rule constants
	What string // what was found, e.g. "fmt.Println"
}

// String is "file:line: rule: what (hint)".
func (v Violation) String() string {
	return v.Pos + ": " + v.Rule + ": " + v.What + " (" + Hints[v.Rule] + ")"
}

// CheckFile checks one parsed non-test file of the package with import path
// pkg, in module mod.
func CheckFile(fset *token.FileSet, f *ast.File, mod, pkg string) []Violation {
	rel := relPath(mod, pkg)
	isCmd := inCmd(rel)
	out := CheckImports(fset, f, mod, pkg)
	add := func(pos token.Pos, rule, what string) {
		out = append(out, violation(fset, pos, rule, what))
	}
	names := map[string]string{} // local name → import path
	for _, imp := range f.Imports {
		ip, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		name := path.Base(ip)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = ip
		if ip == "os/exec" && rel != "internal/launch" {
			add(imp.Pos(), RuleExec, "imports os/exec")
		}
		inMod := ip == mod || strings.HasPrefix(ip, mod+"/")
		if (rel == "internal/client" || strings.HasPrefix(rel, "internal/client/")) && inMod && !ClientLeaves[strings.TrimPrefix(ip, mod+"/")] {
			add(imp.Pos(), RuleClient, "imports "+ip)
		}
		if inMod && !testImportOK(rel, strings.TrimPrefix(ip, mod+"/")) {
			add(imp.Pos(), RuleTestOnly, "imports "+ip)
		}
		if rel == Declarations && !isStd(ip) {
			add(imp.Pos(), RuleDecls, "imports "+ip)
		}
	}
	if isCmd {
		return out
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			id, ok := n.X.(*ast.Ident)
			if !ok {
				return true
			}
			sel := n.Sel.Name
			switch names[id.Name] {
			case "os":
				switch sel {
				case "Stdin", "Stdout", "Stderr":
					add(n.Pos(), RuleTerminal, "os."+sel)
				case "Exit":
					add(n.Pos(), RuleExit, "os.Exit")
				}
			case "fmt":
				if strings.HasPrefix(sel, "Print") {
					add(n.Pos(), RuleTerminal, "fmt."+sel)
				}
			case "log":
				if strings.HasPrefix(sel, "Print") || strings.HasPrefix(sel, "Fatal") || strings.HasPrefix(sel, "Panic") {
					add(n.Pos(), RuleTerminal, "log."+sel)
				}
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "print" || id.Name == "println") {
				add(n.Pos(), RuleTerminal, id.Name)
			}
		}
		return true
	})
	return out
}

// CheckImports checks the imports of one parsed file of the package
// with import path pkg, in module mod, for the rules every file keeps,
// _test.go files included (CheckFile adds the rest for non-test files): who imports Servers (a test binary
// that links the servers costs every run of it their libraries) and the
// standard library's imports in a group of their own.
func CheckImports(fset *token.FileSet, f *ast.File, mod, pkg string) []Violation {
	rel := relPath(mod, pkg)
	var out []Violation
	prevLine, mixed := 0, false
	var std, other bool // what the current group (imports on consecutive lines) holds
	for _, imp := range f.Imports {
		ip, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		if ip == mod+"/"+Servers && !serversImportOK(rel) {
			out = append(out, violation(fset, imp.Pos(), RuleServers, "imports "+ip))
		}
		if line := fset.Position(imp.Pos()).Line; line > prevLine+1 {
			std, other, mixed = false, false, false // a blank line: a new group
		}
		prevLine = fset.Position(imp.End()).Line
		if isStd(ip) {
			std = true
		} else {
			other = true
		}
		if std && other && !mixed {
			mixed = true
			out = append(out, violation(fset, imp.Pos(), RuleGroups, "imports "+ip+" in one group with imports of the other origin"))
		}
	}
	return out
}

// violation is rule broken at pos, by what.
func violation(fset *token.FileSet, pos token.Pos, rule, what string) Violation {
	p := fset.Position(pos)
	return Violation{Pos: fmt.Sprintf("%s:%d", p.Filename, p.Line), Rule: rule, What: what}
}

// relPath is the module's package pkg's path inside module mod ("" for
// the module's root package).
func relPath(mod, pkg string) string {
	return strings.TrimPrefix(strings.TrimPrefix(pkg, mod), "/")
}

// inCmd reports whether the module's package rel is a command's.
func inCmd(rel string) bool {
	return rel == "cmd" || strings.HasPrefix(rel, "cmd/")
}

// serversImportOK reports whether the module's package rel may import
// Servers: cmd/ and Servers itself (its external tests).
func serversImportOK(rel string) bool {
	return inCmd(rel) || rel == Servers
}

// isStd reports whether import path ip is the standard library's: its
// first element has no dot.
func isStd(ip string) bool {
	first, _, _ := strings.Cut(ip, "/")
	return !strings.Contains(first, ".")
}

// testImportOK reports whether the module's package rel (a non-test
// file of it) may import the module's package to under the rules of the
// packages made for tests: TestOnly, TestSupport and TestServers.
func testImportOK(rel, to string) bool {
	switch {
	case TestOnly[rel], TestSupport[to]:
		return false
	case TestOnly[to], TestServers[to]:
		return TestSupport[rel] || TestServers[rel]
	case TestServers[rel]:
		return ClientLeaves[to] || TestServerImports[to]
	}
	return true
}

// CheckModule parses every non-test Go file under root (the directory of
// module mod; testdata and hidden directories skipped) and returns every
// violation of the rules and of the kind-names rule with g, and of test
// files' imports of Servers, sorted by position.
func CheckModule(root, mod string, g Guard) ([]Violation, error) {
	fset := token.NewFileSet()
	var out []Violation
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dir := filepath.Dir(rel)
		pkg := mod
		if dir != "." {
			pkg = mod + "/" + filepath.ToSlash(dir)
		}
		if strings.HasSuffix(name, "_test.go") {
			f, err := parser.ParseFile(fset, filepath.ToSlash(rel), src, parser.ImportsOnly)
			if err != nil {
				return err
			}
			out = append(out, CheckImports(fset, f, mod, pkg)...)
			return nil
		}
		f, err := parser.ParseFile(fset, filepath.ToSlash(rel), src, 0)
		if err != nil {
			return err
		}
		out = append(out, CheckFile(fset, f, mod, pkg)...)
		out = append(out, CheckNames(fset, f, filepath.ToSlash(rel), g)...)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Pos < out[j].Pos })
	return out, err
}

// ModuleRoot returns the directory of the go.mod above dir and the module
// path it declares.
func ModuleRoot(dir string) (root, mod string, err error) {
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
					return d, strings.Trim(strings.TrimSpace(m), `"`), nil
				}
			}
			return "", "", fmt.Errorf("%s: no module line", filepath.Join(d, "go.mod"))
		}
		if filepath.Dir(d) == d {
			return "", "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}
