package layering

import (
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/scenarios"
)

// TestModule: the module keeps its layering rules. A failure names the
// file, the line, the rule and what broke it.
func TestModule(t *testing.T) {
	root, mod := moduleRoot(t)
	vs, err := CheckModule(root, mod, registryGuard(t, root))
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
				if ip := strings.Trim(imp.Path.Value, `"`); strings.HasPrefix(ip, mod+"/") && !ClientLeaves[strings.TrimPrefix(ip, mod+"/")] {
					t.Errorf("%s/%s imports %s: a package internal/client may import must import nothing of the module but other such leaves", leaf, e.Name(), ip)
				}
			}
		}
	}
}

// TestServersReachNoClient: nothing a test-server package imports, at any
// depth, imports internal/client (whose in-package tests import it).
func TestServersReachNoClient(t *testing.T) {
	root, mod := moduleRoot(t)
	for pkg := range TestServers {
		chain, err := ImportChain(root, mod, pkg, "internal/client")
		if err != nil {
			t.Fatal(err)
		}
		if chain != nil {
			t.Errorf("%s reaches internal/client: %s (%s)", pkg, strings.Join(chain, " → "), Hints[RuleTestOnly])
		}
	}
}

// TestImportChain: a chain through an allowed import is found (the
// planted case: launch made to import the client), and none where there
// is none.
func TestImportChain(t *testing.T) {
	const mod = "example.com/m"
	root := t.TempDir()
	files := map[string]string{
		"internal/prototest/p.go":      `package prototest; import ("example.com/m/internal/launch"; "example.com/m/internal/proto/jsonrpc")`,
		"internal/prototest/p_test.go": `package prototest; import "example.com/m/internal/engine"`,
		"internal/launch/l.go":         `package launch; import "example.com/m/internal/secret"`,
		"internal/secret/s.go":         `package secret; import "example.com/m/internal/client"`,
		"internal/proto/jsonrpc/j.go":  `package jsonrpc`,
		"internal/client/c.go":         `package client`,
		"internal/engine/e.go":         `package engine; import "example.com/m/internal/client"`,
	}
	for name, src := range files {
		p := root + "/" + name
		if err := os.MkdirAll(p[:strings.LastIndex(p, "/")], 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chain, err := ImportChain(root, mod, "internal/prototest", "internal/client")
	if want := []string{"internal/prototest", "internal/launch", "internal/secret", "internal/client"}; err != nil || !reflect.DeepEqual(chain, want) {
		t.Errorf("planted: chain %q (%v), want %q", chain, err, want)
	}
	if chain, err := ImportChain(root, mod, "internal/proto/jsonrpc", "internal/client"); err != nil || chain != nil {
		t.Errorf("a leaf: chain %q (%v), want none", chain, err)
	}
}

// moduleRoot is the directory and path of the module these tests are in.
func moduleRoot(t *testing.T) (root, mod string) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, mod, err = ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	return root, mod
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
		{"fault server outside tests", "scenarios", `import "example.com/m/internal/faultserver"; var _ = faultserver.X`, []string{RuleTestOnly + ": imports example.com/m/internal/faultserver"}},
		{"fault server imports module", "internal/faultserver", `import "example.com/m/internal/client"; var _ = client.X`, []string{RuleTestOnly + ": imports example.com/m/internal/client"}},
		{"test-only package imports others", "internal/testserver", `import "github.com/gorilla/websocket"; var _ = websocket.X`, nil},
		{"test support outside tests", "scenarios/ping", `import "example.com/m/internal/clienttest"; var _ = clienttest.X`, []string{RuleTestOnly + ": imports example.com/m/internal/clienttest"}},
		{"test support imports test-only and module", "internal/clienttest", `import ("example.com/m/internal/testserver"; "example.com/m/internal/client"); var _, _ = testserver.X, client.X`, nil},
		{"test servers outside tests", "scenarios/script", `import "example.com/m/internal/prototest"; var _ = prototest.X`, []string{RuleTestOnly + ": imports example.com/m/internal/prototest"}},
		{"test servers in a test-only leaf", "internal/testserver", `import "example.com/m/internal/prototest"; var _ = prototest.X`, []string{RuleTestOnly + ": imports example.com/m/internal/prototest"}},
		{"test servers import the client", "internal/prototest", `import "example.com/m/internal/client"; var _ = client.X`, []string{RuleTestOnly + ": imports example.com/m/internal/client"}},
		{"test servers import test support", "internal/prototest", `import "example.com/m/internal/clienttest"; var _ = clienttest.X`, []string{RuleTestOnly + ": imports example.com/m/internal/clienttest"}},
		{"test servers import the module", "internal/prototest", `import "example.com/m/internal/engine"; var _ = engine.X`, []string{RuleTestOnly + ": imports example.com/m/internal/engine"}},
		{"test servers import protocols, test-only and launch", "internal/prototest", `import ("example.com/m/internal/proto/jsonrpc"; "example.com/m/internal/testserver"; "example.com/m/internal/launch"; "github.com/gorilla/websocket"); var _, _, _, _ = jsonrpc.X, testserver.X, launch.X, websocket.X`, nil},
		{"test support imports test servers", "internal/clienttest", `import "example.com/m/internal/prototest"; var _ = prototest.X`, nil},
		{"declarations import std", "frameworks", `import ("crypto/tls"; "sort"); var _, _ = tls.X, sort.X`, nil},
		{"declarations import a library", "frameworks", `import "github.com/gorilla/websocket"; var _ = websocket.X`, []string{RuleDecls + ": imports github.com/gorilla/websocket"}},
		{"declarations import x/sys", "frameworks", `import "golang.org/x/sys/unix"; var _ = unix.X`, []string{RuleDecls + ": imports golang.org/x/sys/unix"}},
		{"declarations import the module", "frameworks", `import "example.com/m/internal/units"; var _ = units.X`, []string{RuleDecls + ": imports example.com/m/internal/units"}},
		{"declarations import their servers", "frameworks", `import "example.com/m/frameworks/servers"; var _ = servers.X`, []string{RuleServers + ": imports example.com/m/frameworks/servers", RuleDecls + ": imports example.com/m/frameworks/servers"}},
		{"servers import libraries", "frameworks/servers", `import ("example.com/m/frameworks"; "github.com/lxzan/gws"); var _, _ = frameworks.X, gws.X`, nil},
		{"cmd imports servers", "cmd/wsplan", `import "example.com/m/frameworks/servers"; var _ = servers.X`, nil},
		{"plan imports servers", "internal/plan", `import "example.com/m/frameworks/servers"; var _ = servers.X`, []string{RuleServers + ": imports example.com/m/frameworks/servers"}},
		{"engine imports servers", "internal/engine", `import "example.com/m/frameworks/servers"; var _ = servers.X`, []string{RuleServers + ": imports example.com/m/frameworks/servers"}},
		{"engine imports declarations", "internal/engine", `import "example.com/m/frameworks"; var _ = frameworks.X`, nil},
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

// TestCheckImports: test files keep two rules, who imports the servers
// and the standard library's imports in a group of their own, and no
// other (they may exec and print).
func TestCheckImports(t *testing.T) {
	const mod = "example.com/m"
	cases := []struct {
		name, pkg, src string
		want           []string // "rule: what"
	}{
		{"plan's tests import servers", "internal/plan", `import "example.com/m/frameworks/servers"`, []string{RuleServers + ": imports example.com/m/frameworks/servers"}},
		{"schema's tests import servers", "internal/schema", "import (\n\"testing\"\n\n\"example.com/m/frameworks/servers\"\n)", []string{RuleServers + ": imports example.com/m/frameworks/servers"}},
		{"cmd's tests import servers", "cmd/wsplan", `import "example.com/m/frameworks/servers"`, nil},
		{"servers' external tests", "frameworks/servers", `import "example.com/m/frameworks/servers"`, nil},
		{"tests print and exec", "internal/plan", "import (\n\"os/exec\"\n\"fmt\"\n\n\"github.com/gorilla/websocket\"\n)", nil},
		{"groups apart", "internal/plan", "import (\n\"fmt\"\n\"testing\"\n\n\"github.com/gorilla/websocket\"\n\n\"example.com/m/internal/testenv\"\n)", nil},
		{"the module's import among the standard library's", "internal/plan", "import (\n\"fmt\"\n\"example.com/m/internal/testenv\"\n\"testing\"\n\n\"github.com/gorilla/websocket\"\n)",
			[]string{RuleGroups + ": imports example.com/m/internal/testenv in one group with imports of the other origin"}},
		{"another module's first, then the standard library", "internal/plan", "import (\n\"github.com/gorilla/websocket\"\n\"fmt\"\n\"os\"\n)",
			[]string{RuleGroups + ": imports fmt in one group with imports of the other origin"}},
	}
	for _, c := range cases {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x_test.go", "package p; "+c.src, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, v := range CheckImports(fset, f, mod, mod+"/"+c.pkg) {
			got = append(got, v.Rule+": "+v.What)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// registryGuard is the kind-names rule's guard from the kind registry.
func registryGuard(t *testing.T, root string) Guard {
	t.Helper()
	kinds := map[string][]string{}
	for _, k := range scenarios.Kinds() {
		for _, d := range k.Metrics {
			kinds[k.Name] = append(kinds[k.Name], d.Name)
		}
		if len(k.Metrics) == 0 {
			kinds[k.Name] = nil
		}
	}
	shared, err := SharedNames(root)
	if err != nil {
		t.Fatal(err)
	}
	g := NewGuard(kinds, shared)
	// The names the issue that made the rule was about: the rule sees
	// broadcast's, the shared ones are internal/metrics'.
	if g.Metrics["fanout_p99"] != "broadcast" || g.Metrics["delivery_rate"] != "broadcast" || g.Metrics["capacity"] != "search" {
		t.Errorf("guarded metrics lack broadcast's or search's: %v", g.Metrics)
	}
	for _, n := range []string{"tps", "recv_rate", "client_bound", "p99", "failed"} {
		if _, ok := g.Metrics[n]; ok || !shared[n] && n != "failed" {
			t.Errorf("%q: guarded as one kind's (%v) or not shared", n, g.Metrics[n])
		}
	}
	return g
}

// TestCheckNames: the kind-names rule catches a kind's name used as a
// kind and a kind's own metric outside its files, and only those: a plan
// key or protocol word spelled like a kind, a shared metric, a name in
// its kind's own files, a struct tag and internal/metrics pass.
func TestCheckNames(t *testing.T) {
	g := NewGuard(map[string][]string{
		"echo":      {"tps", "p99", "failed"},
		"ping":      {"tps", "p99", "failed"},
		"rate":      {"recv_rate", "rate", "failed"},
		"broadcast": {"fanout_p99", "delivery_rate", "ok"},
	}, map[string]bool{"recv_rate": true, "rate": true, "p99": true})
	cases := []struct {
		name, file, src string
		want            []string // "rule: what"
	}{
		{"planted in report", "report/html_fanout.go", `var m = "fanout_p99"`, []string{RuleNames + `: broadcast's metric "fanout_p99"`}},
		{"without it", "report/html_fanout.go", `var m = metricOf(x)`, nil},
		{"kind compared", "report/benchfmt.go", `func f(r R) bool { return r.Kind == "echo" }`, []string{RuleNames + `: kind "echo"`}},
		{"kind switched on", "internal/engine/x.go", `func f(kind string) { switch kind { case "ping", "other": } }`, []string{RuleNames + `: kind "ping"`}},
		{"kind looked up", "scenarios/search.go", `var k, _ = Lookup("rate")`, []string{RuleNames + `: kind "rate"`}},
		{"kind in a literal", "internal/result/x.go", `var r = Result{Kind: "broadcast"}`, []string{RuleNames + `: kind "broadcast"`}},
		{"kind registered elsewhere", "scenarios/other.go", `func init() { Register(Kind{Name: "echo"}) }`, []string{RuleNames + `: kind "echo"`}},
		{"kind method elsewhere", "internal/client/other.go", `func (p *P) Kind() string { return "echo" }`, []string{RuleNames + `: kind "echo"`}},
		{"kind word as a plan key", "scenarios/search.go", `const VaryRate = "rate"; var e = FieldError{"rate", "x"}`, nil},
		{"kind word as a protocol op", "internal/shard/serve.go", `func f(op string) { switch op { case "ping": }; send(Request{Op: "ping"}) }`, nil},
		{"shared metric", "report/benchfmt.go", `var m = []string{"recv_rate", "p99", "failed", "tps"}`, nil},
		{"a word", "report/tables.go", `func f() string { return "ok" }`, nil},
		{"own files", "scenarios/broadcast.go", `const n = "fanout_p99"; func init() { Register(Kind{Name: "broadcast"}) }`, nil},
		{"own client files", "internal/client/broadcast_loop.go", `var n = "delivery_rate"; func (p *P) Kind() string { return "broadcast" }`, nil},
		{"own package", "scenarios/broadcast/loop.go", `var n = "delivery_rate"; func (p *P) Kind() string { return "broadcast" }`, nil},
		{"another kind's package", "scenarios/ping/run.go", `var n = "delivery_rate"; var k = Lookup("echo")`, []string{RuleNames + `: broadcast's metric "delivery_rate"`, RuleNames + `: kind "echo"`}},
		{"a package of no kind", "scenarios/all/all.go", `var k = Lookup("echo")`, []string{RuleNames + `: kind "echo"`}},
		{"struct tag", "internal/client/other.go", "type P struct { R float64 `json:\"delivery_rate\"` }", nil},
		{"internal/metrics", "internal/metrics/metrics.go", `const F = "fanout_p99"; var k = Result{Kind: "echo"}`, nil},
	}
	for _, c := range cases {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, c.file, "package p; "+c.src, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, v := range CheckNames(fset, f, c.file, g) {
			if !strings.HasPrefix(v.Pos, c.file+":") {
				t.Errorf("%s: position %q", c.name, v.Pos)
			}
			got = append(got, v.Rule+": "+v.What)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
