package plan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/echo"
)

// at once at their own lines.
func TestLoadThreeProblems(t *testing.T) {
	_, err := Load("testdata/invalid-three.yaml", LoadOptions{})
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error %v is not plan.Errors", err)
	}
	if len(errs) != 3 {
		t.Fatalf("got %d errors, want 3:\n%v", len(errs), err)
	}
	want := []struct {
		line  int
		field string
	}{{5, "servers[1].framework"}, {7, "phases[0].connect.timeout"}, {8, "phases[1].echo"}}
	for i, w := range want {
		if errs[i].Line != w.line || errs[i].Field != w.field {
			t.Errorf("error %d at %d %s, want %d %s", i, errs[i].Line, errs[i].Field, w.line, w.field)
		}
	}
	var first *Error
	if !errors.As(err, &first) || first != errs[0] {
		t.Errorf("errors.As(*Error) = %v, want the first problem", first)
	}
}

func TestLoadValidPlans(t *testing.T) {
	files, err := filepath.Glob("testdata/valid-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid plans: %v", err)
	}
	for _, f := range files {
		if _, err := Load(f, LoadOptions{}); err != nil {
			t.Errorf("Load(%s): %v", f, err)
		}
	}
}

func TestLoadFull(t *testing.T) {
	p, err := Load("testdata/valid-full.yaml", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := false
	wantDefaults := Defaults{
		NoDelay:     &f,
		Options:     map[string]string{"read_buffer": "4096"},
		ReadyTime:   units.Duration(5 * time.Second),
		StopGrace:   units.Duration(time.Second),
		Ports:       2,
		BasePort:    10000,
		Host:        "127.0.0.1",
		Sample:      units.Duration(500 * time.Millisecond),
		AllowRemote: false,
	}
	check(t, "Name", p.Name, "full")
	check(t, "Description", p.Description, "every section")
	check(t, "Vars", p.Vars, map[string]string{"conns": "100", "payload": "512", "rate_duration": "10s", "label": "fast", "echo_total": "1000"})
	check(t, "Host", p.Host, Host{
		Sysctl:     map[string]string{"net.core.somaxconn": "2048", "net.ipv4.ip_local_port_range": "1024 65535"},
		SysctlLine: map[string]int{"net.core.somaxconn": 11, "net.ipv4.ip_local_port_range": 12},
		NoFile:     20000,
		ServerCPUs: "0",
		ClientCPUs: "1-3",
	})
	check(t, "Defaults", p.Defaults, wantDefaults)
	check(t, "Client", p.Client, Client{Shards: -1, SourceAddrs: []string{"127.0.0.2", "127.0.0.3"}, Loops: 2, IdleExit: units.Duration(DefaultIdleExit), Reconnect: defaultReconnect})
	base := map[string]string{"nodelay": "false", "read_buffer": "4096"}
	check(t, "Servers", p.Servers, []Server{
		{
			Name: "fake_plan_test", Adapter: "fake_plan_test", Options: base,
			Values: map[string]string{"nodelay": "false", "read_buffer": "4096", "compression": "false", "mode": "event", "pool_size": "0"},
			Path:   "/ws", Line: 30,
		},
		{
			Name: "pooled", Framework: "fake_plan_test", Adapter: "fake_plan_test",
			Options: map[string]string{"nodelay": "false", "read_buffer": "4096", "mode": "pool", "pool_size": "80", "compression": "true"},
			Values:  map[string]string{"nodelay": "false", "read_buffer": "4096", "compression": "true", "mode": "pool", "pool_size": "80"},
			Path:    "/ws", Line: 31,
		},
		{
			Name: "preset", Framework: "fake_plan_test_pool", Adapter: "fake_plan_test", Options: base,
			Values: map[string]string{"nodelay": "false", "read_buffer": "4096", "compression": "false", "mode": "pool", "pool_size": "4"},
			Path:   "/ws", Line: 34,
		},
		{
			Name: "mine", Command: []string{"./myserver", "-addr", "127.0.0.1:7000"}, Addrs: []string{"127.0.0.1:7000"},
			Path: "/echo", Line: 36,
		},
	})
	tr := true
	size := func(n units.Size) *units.Size { return &n }
	check(t, "Phases", p.Phases, []Phase{
		{Kind: "connect", PhaseKeys: PhaseKeys{Name: "connect"}, Line: 41, Spec: &scenarios.Connect{ConnectParams: client.ConnectParams{
			Connections: 100, Concurrency: 10, Timeout: units.Duration(2 * time.Second), Retries: 3}}},
		{Kind: "echo", PhaseKeys: PhaseKeys{Name: "warm"}, Line: 42, Spec: &echo.Phase{Params: echo.Params{
			Total: 1000, Concurrency: 100, Payload: size(512), Verify: &tr, Timeout: units.Duration(10 * time.Second), PayloadKind: "random"}}},
		{Kind: "echo", PhaseKeys: PhaseKeys{Name: "echo#2"}, Line: 43, Spec: &echo.Phase{Params: echo.Params{
			Total: 1000, Concurrency: 50, Payload: size(1024), Verify: &tr, // 1024: echo's payload tag default
			Timeout: units.Duration(10 * time.Second), Deadline: units.Duration(10 * time.Second), PayloadKind: "random"}}},
	})
	check(t, "Assert", p.Assert, []Assertion{
		{Expr: "failed == 0", Phase: "warm", Line: 46},
		{Name: "fast enough", Expr: `p99 < duration("200ms")`, Phase: "echo", Servers: []string{"pooled", "preset"}, Abort: true, Line: 50},
		{Expr: "tps > 0", Servers: []string{"mine"}, Line: 52},
	})
}

// TestDefaults: a plan that sets nothing gets every documented default.
func TestDefaults(t *testing.T) {
	p, err := Load("testdata/valid-minimal.yaml", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr := true
	check(t, "Name", p.Name, "valid-minimal")
	check(t, "Defaults", p.Defaults, Defaults{
		NoDelay:   &tr,
		ReadyTime: units.Duration(20 * time.Second),
		StopGrace: units.Duration(3 * time.Second),
		Ports:     1,
		BasePort:  9000,
		Host:      "127.0.0.1",
		Sample:    units.Duration(time.Second),
	})
	check(t, "Client", p.Client, Client{IdleExit: units.Duration(DefaultIdleExit), Reconnect: defaultReconnect})
	check(t, "Host", p.Host, Host{})
	check(t, "Vars", p.Vars, map[string]string{})
	// defaults.nodelay not written: the adapter's own default stands and
	// nothing is passed to the server.
	check(t, "Servers", p.Servers, []Server{{
		Name: "fake_plan_test", Adapter: "fake_plan_test", Options: map[string]string{},
		Values: map[string]string{"nodelay": "true", "read_buffer": "0", "compression": "false", "mode": "event", "pool_size": "0"},
		Path:   "/ws", Line: 3,
	}})
	check(t, "Phases", p.Phases, []Phase{{Kind: "connect", PhaseKeys: PhaseKeys{Name: "connect"}, Line: 5, Spec: &scenarios.Connect{ConnectParams: client.ConnectParams{
		Connections: 10, Concurrency: 10, Timeout: units.Duration(5 * time.Second), Retries: 3}}}})

	// The name defaults to the base name of whatever file name is given.
	p, err = LoadBytes("some/dir/nightly.v2.yml", []byte("servers: [{name: fake_plan_test}]\nphases: [{connect: {connections: 1}}]\n"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "Name", p.Name, "nightly.v2")
}

func TestVars(t *testing.T) {
	p, err := Load("testdata/valid-vars.yaml", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Phases[0].Spec.(*scenarios.Connect)
	e := p.Phases[1].Spec.(*echo.Phase)
	check(t, "connections (${conns}: int)", c.Connections, 1000)
	check(t, "concurrency (${conc} = ${conns})", c.Concurrency, 1000)
	check(t, "timeout (${dur}: duration)", c.Timeout, units.Duration(10*time.Second))
	check(t, "total (${conns}0: text, then int)", e.Total, int64(10000))
	check(t, "warmup", e.Warmup, int64(10))
	check(t, "name (text)", p.Name, "vars-small")
	check(t, "expr ($${ is literal)", p.Assert[0].Expr, "cost ${not_a_var} and small")
	check(t, `name ("${conns}" quoted: string)`, p.Assert[0].Name, "1000")
	check(t, "Vars", p.Vars, map[string]string{
		"conns": "1000", "conc": "1000", "size": "small", "quoted": "2000", "dur": "10s", "literal": "cost ${not_a_var}",
	})

	// --set overrides, typed as unquoted YAML; later vars see the override.
	p, err = Load("testdata/valid-vars.yaml", LoadOptions{Sets: map[string]string{"conns": "20", "size": "big", "dur": "1m"}})
	if err != nil {
		t.Fatal(err)
	}
	c = p.Phases[0].Spec.(*scenarios.Connect)
	check(t, "--set connections", c.Connections, 20)
	check(t, "--set concurrency via ${conc}", c.Concurrency, 20)
	check(t, "--set timeout", c.Timeout, units.Duration(time.Minute))
	check(t, "--set total", p.Phases[1].Spec.(*echo.Phase).Total, int64(200))
	check(t, "--set name", p.Name, "vars-big")
	check(t, "--set Vars", p.Vars["conns"]+" "+p.Vars["conc"]+" "+p.Vars["size"], "20 20 big")
}

func TestVarTyping(t *testing.T) {
	const plan = `vars:
  n: 10
  s: "10"
  d: 5s
servers: [{name: fake_plan_test}]
phases:
  - connect: {connections: ${n}, timeout: ${d}}
  - connect: {connections: ${s}}
  - connect: {connections: "${n}"}
  - echo: {total: ${n}, payload: ${n}KiB, text: ${t}}
`
	_, err := LoadBytes("t.yaml", []byte(plan), LoadOptions{})
	want := strings.Join([]string{
		// A quoted var is a string, wherever it goes.
		`t.yaml:8: phases[1].connect.connections: want an integer, got "10"`,
		// A quoted reference is text: a string.
		`t.yaml:9: phases[2].connect.connections: want an integer, got "10"`,
		`t.yaml:10: phases[3].echo.text: undefined variable ${t} (vars: n, s, d)`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Fatalf("errors:\n%v\nwant:\n%s", err, want)
	}

	// The same plan with the mistakes fixed, and --set typing.
	fixed := strings.NewReplacer(`${s}`, `${n}`, `"${n}"`, `${n}`, `${t}`, `true`).Replace(plan)
	p, err := LoadBytes("t.yaml", []byte(fixed), LoadOptions{Sets: map[string]string{"n": "30", "s": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "connections", p.Phases[0].Spec.(*scenarios.Connect).Connections, 30)
	check(t, "payload", *p.Phases[3].Spec.(*echo.Phase).Payload, units.Size(30<<10))

	// A --set value is YAML-typed: a word is a string, so an int field rejects it.
	_, err = LoadBytes("t.yaml", []byte(fixed), LoadOptions{Sets: map[string]string{"n": "lots"}})
	if err == nil || !strings.Contains(err.Error(), `t.yaml:7: phases[0].connect.connections: want an integer, got "lots"`) {
		t.Errorf("--set n=lots: %v", err)
	}
}

func TestOnly(t *testing.T) {
	p, err := Load("testdata/valid-full.yaml", LoadOptions{Only: []string{"mine", "fake_plan_test", ""}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range p.Servers {
		names = append(names, s.Name)
	}
	check(t, "servers (plan order)", names, []string{"fake_plan_test", "mine"})
	// Assertions keep naming servers --only left out.
	check(t, "assert servers", p.Assert[1].Servers, []string{"pooled", "preset"})
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	p, err := Load("testdata/valid-anchors.yaml", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "a options", p.Servers[0].Options, map[string]string{"mode": "pool", "pool_size": "8"})
	check(t, "b options", p.Servers[1].Options, map[string]string{"mode": "pool", "pool_size": "16"})
	check(t, "phase names", []string{p.Phases[0].Name, p.Phases[1].Name, p.Phases[2].Name}, []string{"connect", "echo", "more"})
	more := p.Phases[2].Spec.(*scenarios.Connect)
	check(t, "merged connect", [2]int{more.Connections, int(more.Timeout.D() / time.Second)}, [2]int{100, 1})
	check(t, "echo context", p.Phases[1].Spec.(*echo.Phase).Concurrency, 100)

	// A merged key is checked like a written one.
	_, err = LoadBytes("m.yaml", []byte("x: &c {connections: 1, timeot: 1s}\n"), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "\n"+`m.yaml:1: unknown key "x" (known: name, description, vars, host, defaults, client, soak, metrics, servers, phases, assert, repeat, matrix)`) {
		t.Errorf("unknown top-level key: %v", err)
	}
	_, err = LoadBytes("m.yaml", []byte("servers: [{name: fake_plan_test}]\nphases:\n  - connect: &c {connections: 1, timeot: 1s}\n  - connect:\n      <<: *c\n"), LoadOptions{})
	want := `m.yaml:3: phases[0].connect: unknown key "timeot" (did you mean "timeout"?)` + "\n" +
		`m.yaml:3: phases[1].connect: unknown key "timeot" (did you mean "timeout"?)`
	if err == nil || err.Error() != want {
		t.Errorf("merged unknown key:\n%v\nwant:\n%s", err, want)
	}
}

func TestAllowRemote(t *testing.T) {
	const plan = `defaults: {listen: 0.0.0.0, allow_remote: true}
client: {source_addrs: [10.0.0.2]}
servers:
  - {name: fake_plan_test}
  - {name: far, command: [./srv], addrs: ["192.0.2.1:80", "[2001:db8::1]:443", "localhost:9000"]}
phases: [{connect: {connections: 1}}]
`
	p, err := LoadBytes("r.yaml", []byte(plan), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "listen", p.Defaults.Host, "0.0.0.0")
	_, err = LoadBytes("r.yaml", []byte(strings.Replace(plan, "allow_remote: true", "allow_remote: false", 1)), LoadOptions{})
	want := strings.Join([]string{
		`r.yaml:1: defaults.listen: 0.0.0.0 is not a loopback address: set defaults.allow_remote: true to listen on it`,
		`r.yaml:2: client.source_addrs[0]: 10.0.0.2 is not a loopback address: set defaults.allow_remote: true to use it`,
		`r.yaml:5: servers[1].addrs[0]: 192.0.2.1 is not a loopback address: set defaults.allow_remote: true to use it`,
		`r.yaml:5: servers[1].addrs[1]: 2001:db8::1 is not a loopback address: set defaults.allow_remote: true to use it`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("without allow_remote:\n%v\nwant:\n%s", err, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/no-such-plan.yaml", LoadOptions{})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want a not-exist error", err)
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{"p.yaml", 12, "phases[1].echo.payload", "must be > 0, got -5"}, "p.yaml:12: phases[1].echo.payload: must be > 0, got -5"},
		{Error{"p.yaml", 3, "", `unknown key "x"`}, `p.yaml:3: unknown key "x"`},
		{Error{"p.yaml", 0, "--only", "unknown server"}, "p.yaml: --only: unknown server"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	for _, tt := range []struct {
		in, want string
	}{
		{"paylod", "payload"},
		{"phasez", "phases"},
		{"PAYLOAD", "payload"},
		{"x", ""},
		{"concurrence", "concurrency"},
		{"zzzzzz", ""},
	} {
		if got := suggest(tt.in, []string{"payload", "phases", "concurrency", "total"}); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func check[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, show(got), show(want))
	}
}

// show prints what the pointers in a phase list point at.
func show(v any) any {
	if ps, ok := v.([]Phase); ok {
		var out []string
		for _, p := range ps {
			out = append(out, fmt.Sprintf("{%s %s line %d %+v}", p.Kind, p.Name, p.Line, p.Spec))
		}
		return out
	}
	return v
}

// host.idle_poll: unset is nil (leave the host alone), 0s is a value (turn
// polling off), and the duration is kept as written.
func TestIdlePoll(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		line string
		want *units.Duration
	}{
		{"", nil},
		{"idle_poll: 0s", new(units.Duration(0))},
		{"idle_poll: 200us", new(units.Duration(200 * time.Microsecond))},
	} {
		path := filepath.Join(dir, "p.yaml")
		body := "host:\n  nofile: 0\n  " + tc.line + "\nservers: [{name: fake_plan_test}]\nphases:\n  - connect: {connections: 1}\n"
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Load(path, LoadOptions{})
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		check(t, tc.line, p.Host.IdlePoll, tc.want)
	}
}

// client.kubernetes: every unwritten key gets its default; spread:, whose
// default is true, stays false only when written false.
func TestKubeDefaults(t *testing.T) {
	for _, tc := range []struct {
		body   string
		spread bool
	}{
		{"{}", true},
		{"{spread: ~}", true},
		{"{spread: false}", false},
		{"{spread: true, shards: 3}", true},
	} {
		src := "client: {kubernetes: " + tc.body + "}\nservers: [{name: fake_plan_test}]\nphases: [{connect: {connections: 1}}]\n"
		p, err := LoadBytes("k.yaml", []byte(src), LoadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		k := p.Client.Kubernetes
		shards := 2
		if strings.Contains(tc.body, "shards: 3") {
			shards = 3
		}
		check(t, tc.body, *k, Kube{Namespace: "default", Shards: shards, Spread: &tc.spread, Port: 7070,
			ReadyTimeout: units.Duration(5 * time.Minute), ActiveDeadline: units.Duration(2 * time.Hour),
			TTL: units.Duration(10 * time.Minute), Line: 1})
		if d := DefaultKube(); tc.body == "{}" && !reflect.DeepEqual(*d, Kube{Namespace: k.Namespace, Shards: k.Shards, Spread: k.Spread, Port: k.Port,
			ReadyTimeout: k.ReadyTimeout, ActiveDeadline: k.ActiveDeadline, TTL: k.TTL}) {
			t.Errorf("DefaultKube() = %+v, a plan's unwritten keys %+v", d, k)
		}
	}
}

// defaultReconnect is client.reconnect unwritten: no reconnects, the
// other keys at their defaults.
var defaultReconnect = client.Reconnect{Policy: "none", Base: units.Duration(100 * time.Millisecond), Max: units.Duration(10 * time.Second),
	Jitter: "full", Timeout: units.Duration(5 * time.Second)}
