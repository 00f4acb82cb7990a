package layering

import (
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestModule: the module keeps its layering rules. A failure names the
// file, the line, the rule and what broke it.
func TestModule(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, mod, err := ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := CheckModule(root, mod)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("%s", v)
	}
	// The leaves stay leaves.
	for leaf := range ClientLeaves {
		entries, err := os.ReadDir(root + "/" + leaf)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, root+"/"+leaf+"/"+e.Name(), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				if ip := strings.Trim(imp.Path.Value, `"`); strings.HasPrefix(ip, mod+"/") {
					t.Errorf("%s/%s imports %s: a package internal/client may import must import nothing of the module", leaf, e.Name(), ip)
				}
			}
		}
	}
}

// TestCheckFile: the checker catches each kind of violation, and only those.
func TestCheckFile(t *testing.T) {
	const mod = "example.com/m"
	cases := []struct {
		name, pkg, src string
		want           []string // "rule: what"
	}{
		{"exec in launch", "internal/launch", `import "os/exec"; var _ = exec.Command`, nil},
		{"exec elsewhere", "internal/engine", `import "os/exec"; var _ = exec.Command`, []string{RuleExec + ": imports os/exec"}},
		{"exec in cmd", "cmd/tool", `import "os/exec"; var _ = exec.Command`, []string{RuleExec + ": imports os/exec"}},
		{"printing in cmd", "cmd/tool", `import ("fmt"; "os"); func f() { fmt.Println(); fmt.Fprintln(os.Stderr); println() }`, nil},
		{"fmt.Print", "report", `import "fmt"; func f() { fmt.Printf("x") }`, []string{RuleTerminal + ": fmt.Printf"}},
		{"os.Stderr", "frameworks", `import "os"; var w = os.Stderr`, []string{RuleTerminal + ": os.Stderr"}},
		{"aliased os.Stdout", "frameworks", `import xos "os"; var w = xos.Stdout`, []string{RuleTerminal + ": os.Stdout"}},
		{"os.Stdin", "internal/shard", `import "os"; var r = os.Stdin`, []string{RuleTerminal + ": os.Stdin"}},
		{"os.Exit", "internal/launch", `import "os"; func f() { os.Exit(1) }`, []string{RuleExit + ": os.Exit"}},
		{"os.Exit in cmd", "cmd/tool", `import "os"; func main() { os.Exit(1) }`, nil},
		{"log.Fatal", "internal/plan", `import "log"; func f() { log.Fatalf("x") }`, []string{RuleTerminal + ": log.Fatalf"}},
		{"println", "internal/plan", `func f() { println("x") }`, []string{RuleTerminal + ": println"}},
		{"writer passed in", "report", `import ("fmt"; "io"); func f(w io.Writer) { fmt.Fprintf(w, "x"); _ = fmt.Sprint(1) }`, nil},
		{"client imports module", "internal/client", `import "example.com/m/internal/metrics"; var _ = metrics.X`, []string{RuleClient + ": imports example.com/m/internal/metrics"}},
		{"client imports a leaf", "internal/client", `import "example.com/m/internal/wstls"; var _ = wstls.X`, nil},
		{"client imports std", "internal/client", `import "net"; var _ = net.Dial`, nil},
		{"others import module", "internal/engine", `import "example.com/m/internal/client"; var _ = client.X`, nil},
		{"test-only package outside tests", "internal/engine", `import "example.com/m/internal/testserver"; var _ = testserver.X`, []string{RuleTestOnly + ": imports example.com/m/internal/testserver"}},
		{"test-only package imports module", "internal/testserver", `import "example.com/m/internal/units"; var _ = units.X`, []string{RuleTestOnly + ": imports example.com/m/internal/units"}},
		{"test-only package imports others", "internal/testserver", `import "github.com/gorilla/websocket"; var _ = websocket.X`, nil},
	}
	for _, c := range cases {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", "package p; "+c.src, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, v := range CheckFile(fset, f, mod, mod+"/"+c.pkg) {
			if !strings.HasPrefix(v.Pos, "x.go:") {
				t.Errorf("%s: position %q", c.name, v.Pos)
			}
			got = append(got, v.Rule+": "+v.What)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
