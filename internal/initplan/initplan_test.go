package initplan

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/plan"
	protocols "github.com/wsplan/wsplan/internal/proto"

	"github.com/wsplan/wsplan/internal/proto/mqtt"
	"github.com/wsplan/wsplan/internal/proto/socketio"
)

// update rewrites the golden plans: go test ./internal/initplan -update
var update = flag.Bool("update", false, "rewrite testdata/*.yaml from the templates")

// TestEveryCombination renders every protocol × url (none, ws://,
// remote wss://) × tls × ci and loads each plan with the plan loader:
// its server, protocol, TLS, phases and assertions are what was asked.
func TestEveryCombination(t *testing.T) {
	urls := []string{"", "ws://127.0.0.1:7000/ws", "wss://bench.example.com/x"}
	n := 0
	for _, proto := range Protocols() {
		for _, u := range urls {
			for _, tls := range []bool{false, true} {
				for _, ci := range []bool{false, true} {
					o := Options{URL: u, Protocol: proto, TLS: tls, CI: ci, Conns: 30, File: "gate.yaml"}
					t.Run(fmt.Sprintf("%s/%q/tls=%v/ci=%v", proto, u, tls, ci), func(t *testing.T) {
						checkCombination(t, o)
					})
					n++
				}
			}
		}
	}
	if want := (len(client.Protocols()) + 1) * 3 * 2 * 2; n != want {
		t.Errorf("%d combinations, want %d", n, want)
	}
}

// checkCombination renders o, loads the plan and checks it against o.
func checkCombination(t *testing.T, o Options) {
	t.Helper()
	data, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.LoadBytes(o.File, data, plan.LoadOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if p.Name != "gate" || len(p.Servers) != 1 {
		t.Fatalf("name %q, %d servers; want gate, 1", p.Name, len(p.Servers))
	}
	s := p.Servers[0]
	proto := o.Protocol
	if proto == NoProtocol {
		proto = ""
	}
	wantTLS := o.TLS || strings.HasPrefix(o.URL, "wss://")
	switch {
	case o.URL == "" && proto == "":
		if !s.BuiltIn() || s.Name != DefaultPreset || s.ServeTLS != wantTLS {
			t.Errorf("server %+v: want the preset %s, tls %v", s, DefaultPreset, wantTLS)
		}
	default:
		if len(s.URLs) != 1 {
			t.Fatalf("urls %v, want one", s.URLs)
		}
		if got := strings.HasPrefix(s.URLs[0], "wss://"); got != wantTLS || (wantTLS && s.TLS == nil) {
			t.Errorf("url %s, tls %v: want wss:// and a tls: block = %v", s.URLs[0], s.TLS, wantTLS)
		}
		if ex, _ := protocols.ExampleOf(proto); o.URL == "" && s.URLs[0] != ex.URL && !wantTLS {
			t.Errorf("url %s, want the example's %s", s.URLs[0], ex.URL)
		}
	}
	if got := s.Protocol != nil && s.Protocol.Name == proto; got != (proto != "") {
		t.Errorf("protocol %v, want %q", s.Protocol, proto)
	}
	if want := strings.Contains(o.URL, "example.com"); p.Defaults.AllowRemote != want {
		t.Errorf("allow_remote %v, want %v", p.Defaults.AllowRemote, want)
	}
	kinds := []string{}
	for _, ph := range p.Phases {
		kinds = append(kinds, ph.Kind)
	}
	wantPhases := 2
	if proto == "" {
		wantPhases = 3 // connect, echo, rate
	}
	if len(kinds) != wantPhases || kinds[0] != p.Phases[0].Name {
		t.Errorf("phases %v, want %d starting with connect", kinds, wantPhases)
	}
	if len(p.Assert) < 2 || p.Assert[0].Abort != o.CI {
		t.Errorf("assertions %+v: want at least 2, the first aborting = ci %v", p.Assert, o.CI)
	}
	for _, a := range p.Assert {
		if !strings.Contains(a.Expr, "p99 < duration(") || a.Name == "" {
			t.Errorf("assertion %q (%q): want a named p99 bound", a.Expr, a.Name)
		}
	}
	if p.Vars["conns"] != "30" {
		t.Errorf("conns %q, want 30", p.Vars["conns"])
	}
	checkComments(t, data)
}

// sections are the plan's top-level keys that must each come after a
// comment saying what they are.
var sections = regexp.MustCompile(`(?m)^(vars|defaults|servers|phases|assert):`)

// checkComments checks that every section, server and phase of a plan
// has its comment, and that every comment is within 80 columns.
func checkComments(t *testing.T, data []byte) {
	t.Helper()
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if len([]rune(l)) > 80 && strings.HasPrefix(strings.TrimSpace(l), "#") {
			t.Errorf("line %d is %d columns: %q", i+1, len([]rune(l)), l)
		}
		entry := strings.HasPrefix(l, "  - ") && !strings.HasPrefix(lines[i-1], "  - ") && !strings.HasPrefix(lines[i-1], "    ")
		if sections.MatchString(l) || (entry && !strings.HasPrefix(l, "  - name:")) {
			if i == 0 || !strings.HasPrefix(strings.TrimSpace(lines[i-1]), "#") {
				t.Errorf("line %d %q: no comment above it", i+1, l)
			}
		}
	}
}

// TestBadOptions: what Options.Check refuses, naming the flag.
func TestBadOptions(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Protocol: "amqp"}, `--protocol "amqp": want one of none, ` + strings.Join(client.Protocols(), ", ")},
		{Options{Conns: -1}, "--conns -1: want 1 to 100000"},
		{Options{Conns: MaxConns + 1}, "--conns 100001: want 1 to 100000"},
		{Options{URL: "http://127.0.0.1:7000/ws"}, `--url "http://127.0.0.1:7000/ws": want a ws:// or wss:// URL`},
		{Options{URL: "127.0.0.1:7000"}, `--url "127.0.0.1:7000": want a ws:// or wss:// URL: first path segment in URL cannot contain colon`},
		{Options{URL: "ws:///ws"}, `--url "ws:///ws": no host`},
		{Options{URL: "ws://127.0.0.1:7000/", Preset: "gorilla"}, `--preset "gorilla": a plan for --url ws://127.0.0.1:7000/ measures that server, not a preset`},
	} {
		err := c.o.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
		if _, err := Plan(c.o); err == nil {
			t.Errorf("%+v: Plan wrote a plan", c.o)
		}
	}
	// A preset the registry does not have: the plan loader says so.
	_, err := Plan(Options{Preset: "nosuch"})
	if err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("unknown preset: %v", err)
	}
	// A preset that cannot serve TLS: the loader's reason.
	_, err = Plan(Options{Preset: "greatws", TLS: true})
	if err == nil || !strings.Contains(err.Error(), "tls") {
		t.Errorf("greatws over TLS: %v", err)
	}
}

// TestGoodOptions: what the URL becomes.
func TestGoodOptions(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string // the url: line
	}{
		{Options{URL: "ws://127.0.0.1:7000/ws"}, `url: "ws://127.0.0.1:7000/ws"`},
		{Options{URL: "ws://127.0.0.1:7000/ws", TLS: true}, `url: "wss://127.0.0.1:7000/ws"`},
		{Options{URL: "ws://localhost:3000", Protocol: socketio.Name}, `url: "ws://localhost:3000/socket.io/?EIO=4&transport=websocket"`},
		{Options{URL: "ws://localhost:3000/io/?x=1", Protocol: socketio.Name}, `url: "ws://localhost:3000/io/?x=1&EIO=4&transport=websocket"`},
		{Options{URL: "ws://localhost:3000/?EIO=4&transport=websocket", Protocol: socketio.Name}, `url: "ws://localhost:3000/?EIO=4&transport=websocket"`},
		{Options{URL: "wss://a.example/ws?token=${env:TOKEN}"}, `url: "wss://a.example/ws?token=${env:TOKEN}"`},
		{Options{Protocol: mqtt.Name}, `url: "ws://127.0.0.1:9883/mqtt"`},
	} {
		data, err := Plan(c.o)
		if err != nil {
			if strings.Contains(c.o.URL, "${env:") && strings.Contains(err.Error(), "TOKEN") {
				continue // the environment has no TOKEN: the loader's error names it
			}
			t.Errorf("%+v: %v", c.o, err)
			continue
		}
		if !bytes.Contains(data, []byte(c.want)) {
			t.Errorf("%+v: no %s in\n%s", c.o, c.want, data)
		}
	}
}

// TestGolden compares two plans with their golden files: the raw plan
// for the preset and the MQTT plan for a url.
func TestGolden(t *testing.T) {
	for file, o := range map[string]Options{
		"preset.yaml": {File: "preset.yaml"},
		"mqtt.yaml":   {URL: "ws://127.0.0.1:9883/mqtt", Protocol: mqtt.Name, File: "mqtt.yaml"},
		"ci.yaml":     {URL: "wss://bench.example.com/ws", CI: true, Conns: 50, File: "ci.yaml"},
	} {
		got, err := Plan(o)
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", file)
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the template's output (go test ./internal/initplan -update rewrites it):\n%s", golden, diffLines(string(want), string(got)))
		}
	}
}

// diffLines lists the lines that differ, by number.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "%d:\n- %s\n+ %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}
