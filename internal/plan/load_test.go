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

	"github.com/wsplan/wsplan/scenarios/echo"

	"github.com/wsplan/wsplan/frameworks"
	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// TestLoadBadPlans maps each testdata/invalid-*.yaml to the exact problems
// it must produce, in order.
func TestLoadBadPlans(t *testing.T) {
	// Lists that grow as adapters and phase kinds are added.
	knownFrameworks := strings.Join(frameworks.Names(), ", ")
	kinds := strings.Join(scenarios.Names(), ", ")

	tests := []struct {
		file string
		opts LoadOptions
		want []string
	}{
		{file: "invalid-toplevel-key.yaml", want: []string{
			`2: unknown key "descripton" (did you mean "description"?)`,
		}},
		{file: "invalid-phase-key.yaml", want: []string{
			`7: phases[1].echo: unknown key "paylod" (did you mean "payload"?)`,
		}},
		{file: "invalid-phase-kind.yaml", want: []string{
			`5: phases[1]: unknown phase kind "ech" (did you mean "echo"?)`,
			`6: phases[2]: unknown phase kind "blast" (known: ` + kinds + `)`,
		}},
		{file: "invalid-phase-shape.yaml", want: []string{
			`4: phases[0]: want one key naming the phase kind, got 2 (connect, echo): put settings inside the kind's mapping, and start each phase with its own -`,
			`6: phases[1]: want a mapping with one key naming the phase kind (` + kinds + `), got "just a string"`,
			`7: phases[2].connect: want a mapping of the phase's settings, got 10`,
			`8: phases[3]: empty phase: want one key naming its kind (` + kinds + `)`,
		}},
		{file: "invalid-phase-names.yaml", want: []string{
			`5: phases[1].echo.name: duplicate phase name "warm" (also phases[0].connect)`,
			`6: phases[2].echo.name: "connect" is a phase kind: give this echo phase another name`,
			`7: phases[3].echo.name: must not be empty (leave name: out for the default, echo)`,
		}},
		{file: "invalid-allow.yaml", want: []string{
			`4: phases[0].connect.allow.lost: not a fault this phase counts (it counts failed)`,
			`5: phases[1].echo.allow.failed: want a count >= 0 or a percentage such as 0.1%, got "-1"`,
			`6: phases[2].echo.allow: want a mapping of fault counts to what is allowed (allow: {failed: 10, lost: 0.1%}), got a list`,
			`7: phases[3].hold.allow.dropped: want a percentage above 0% and at most 100%, got "101%"`,
			`7: phases[3].hold.allow.pings_lost: want a count >= 0 or a percentage such as 0.1%, got "x"`,
		}},
		{file: "invalid-framework.yaml", want: []string{
			`2: servers[0].name: unknown framework "qqqqqqqqqq" (known: ` + knownFrameworks + `)`,
			`4: servers[1].framework: unknown framework "fake_plan_tst" (did you mean "fake_plan_test"?)`,
		}},
		{file: "invalid-option.yaml", want: []string{
			`3: defaults.options.colour: server a: framework fake_plan_test has no option "colour" (options: nodelay, read_buffer, compression, mode, pool_size)`,
			`8: servers[0].options.pool_sise: framework fake_plan_test has no option "pool_sise" (did you mean "pool_size"?)`,
		}},
		{file: "invalid-option-value.yaml", want: []string{
			`2: defaults.nodelay: want true or false, got "maybe"`,
			`7: servers[0].options.pool_size: want an integer, got "many"`,
			`8: servers[0].options.mode: want one of event|pool, got "turbo"`,
			`9: servers[0].options.compression: want true or false, got "yes"`,
		}},
		{file: "invalid-option-bounds.yaml", want: []string{
			`5: servers[0].options.pool_size: must be <= 1000, got 5000`,
			`6: servers[0].options.read_buffer: must be <= 67108864, got 70000000`,
			`9: servers[1].options: mode pool needs pool_size >= 1, got 0`,
			`12: servers[2].options.pool_size: must be >= 0, got -1`,
		}},
		{file: "invalid-duration.yaml", want: []string{
			`6: phases[0].connect.timeout: bad duration "10 seconds": want e.g. 500ms, 10s, 1m30s`,
			`7: phases[1].echo.timeout: bad duration "5": add a unit, e.g. 5s`,
		}},
		{file: "invalid-negative.yaml", want: []string{
			`4: phases[0].connect.connections: must be > 0, got -5`,
		}},
		{file: "invalid-concurrency.yaml", want: []string{
			`4: phases[0].connect.concurrency: must be <= connections (10), got 20`,
			`5: phases[1].echo.concurrency: must be <= the connections opened before it (10), got 11`,
		}},
		{file: "invalid-undefined-var.yaml", want: []string{
			`6: phases[0].connect.connections: undefined variable ${conn} (did you mean ${conns}?)`,
			`6: phases[0].connect.timeout: undefined variable ${timeout} (vars: conns)`,
			`7: phases[1].echo.total: undefined variable ${x} (vars: conns)`,
		}},
		{file: "valid-vars.yaml", opts: LoadOptions{Sets: map[string]string{"con": "5", "size": "big", "zzz": "1"}}, want: []string{
			`--set: unknown variable "con" (did you mean "conc"?)`,
			`--set: unknown variable "zzz" (known: conns, conc, size, quoted, dur, literal)`,
		}},
		{file: "valid-minimal.yaml", opts: LoadOptions{Sets: map[string]string{"conns": "5"}}, want: []string{
			`--set: unknown variable "conns": the plan declares no vars:`,
		}},
		{file: "valid-minimal.yaml", opts: LoadOptions{Only: []string{"fake_plan_tset", "nobody"}}, want: []string{
			`--only: unknown server "fake_plan_tset" (did you mean "fake_plan_test"?)`,
			`--only: unknown server "nobody" (known: fake_plan_test)`,
		}},
		{file: "invalid-vars.yaml", want: []string{
			`2: vars.a: ${b} is not declared above a: a variable may only use variables declared before it`,
			`4: vars.list: want a single value (string, number or bool), got a list`,
			`5: vars: bad variable name "9lives": use letters, digits and _, not starting with a digit`,
			`6: vars.empty: has no value: give it one, or set it with --set empty=VALUE`,
			`7: vars.c: ${c} is not declared above c: a variable may only use variables declared before it`,
		}},
		{file: "invalid-wrong-type.yaml", want: []string{
			`4: phases[0].connect.connections: want an integer, got "many"`,
			`4: phases[0].connect.concurrency: want an integer, got 1.5`,
			`4: phases[0].connect.retries: want an integer, got a list`,
			`5: phases[1].echo.text: want true or false, got "sometimes"`,
		}},
		{file: "invalid-duplicate-server.yaml", want: []string{
			`5: servers[2].name: duplicate server "fake_plan_test" (also servers[0], line 2): give each server its own name`,
		}},
		{file: "invalid-echo-first.yaml", want: []string{
			`4: phases[0].echo.concurrency: must be > 0, got 0`,
			`4: phases[0].echo: needs open connections: put a connect phase before it`,
		}},
		{file: "invalid-three.yaml", want: []string{
			`5: servers[1].framework: unknown framework "no_such_framework_at_all" (known: ` + knownFrameworks + `)`,
			`7: phases[0].connect.timeout: bad duration "10 seconds": want e.g. 500ms, 10s, 1m30s`,
			`8: phases[1].echo: unknown key "totl" (did you mean "total"?)`,
		}},
		{file: "invalid-defaults.yaml", want: []string{
			`2: defaults.listen: 10.1.2.3 is not a loopback address: set defaults.allow_remote: true to listen on it`,
			`3: defaults.ports: must be <= 1000, got 2000`,
			`4: defaults.sample_interval: must be > 0, got -1s`,
			`5: defaults.stop_grace: must be > 0, got -2s`,
			`6: defaults.ready_timeout: bad duration "20": add a unit, e.g. 20s`,
		}},
		{file: "invalid-ports.yaml", want: []string{
			`2: defaults.base_port: base_port + ports × servers must be <= 65535, got 65000 + 300 × 2 = 65600: lower base_port or ports`,
		}},
		{file: "invalid-host.yaml", want: []string{
			`4: host.sysctl["../../etc/passwd"]: bad sysctl name "../../etc/passwd": want dotted names such as net.core.somaxconn`,
			`5: host.sysctl["net.ipv4.tcp_tw_reuse"]: has no value: write the value as ` + "`sysctl -w`" + ` takes it`,
			`6: host.sysctl["net.ipv4.ip_local_reserved_ports"]: bad port list "9000-8000,8080": range 9000-8000 goes down`,
			`7: host.sysctl["net.ipv4.ip_local_port_range"]: want two ports, got "1024": want the first and last ephemeral port, such as "1024 65535"`,
			`8: host.nofile: must be >= 0, got -1`,
			`9: host.server_cpus: bad CPU list "3-1": range 3-1 goes down`,
			`10: host.client_cpus: bad CPU list "0,x": want CPU numbers and ranges such as 0,2-3, got "x"`,
			`11: host.idle_poll: must be <= 10ms, got 20ms`,
		}},
		{file: "invalid-client.yaml", want: []string{
			`2: client.shards: want an integer >= 0 or "auto", got "lots"`,
			`3: client.loops: must be >= 0 (0 = one per client CPU), got -1`,
			`4: client.source_addrs[1]: 10.0.0.1 is not a loopback address: set defaults.allow_remote: true to use it`,
			`4: client.source_addrs[2]: want an IP address such as 127.0.0.2, got "nope"`,
		}},
		{file: "invalid-faults.yaml", want: []string{
			`2: client.reconnect.max: must be >= base (2s), got 1s`,
			`2: client.reconnect.policy: must be none, immediate or backoff, got "sometimes"`,
			`2: client.reconnect.jitter: must be full, equal or none, got "lots"`,
			`12: phases[1].hold.faults[0].restart: server byurl: pid: cannot follow a restart (the pid changes): give pid_file:, read again after restart_command`,
			`12: phases[1].hold.faults[0].restart: server byurl3 is a url: target wsplan did not start: give it restart_command: (the command that restarts it)`,
			`12: phases[1].hold.faults[1].restart: must be server, got "client"`,
		}},
		{file: "invalid-kube.yaml", want: []string{
			`4: client.kubernetes: cannot be combined with client.remote: wsplan makes the remote shards itself`,
			`5: client.kubernetes.shards: must be > 0, got -1`,
			`6: client.kubernetes.port: must be <= 65535, got 70000`,
			`7: client.kubernetes.resources.cpu: want a Kubernetes quantity such as 2, 1500m or 4Gi, got "two"`,
			`8: client.kubernetes.ready_timeout: must be > 0, got -1s`,
		}},
		{file: "invalid-remote.yaml", want: []string{
			"1: client.certs: is required with client.remote: the directory `wsplan shard certs DIR` wrote, whose shard.pem/shard.key the shards were started with",
			`2: client.shards: cannot be combined with client.remote: remote shards replace local ones`,
			`3: client.remote[1]: want host:port of a ` + "`wsplan shard --listen`" + `, e.g. 10.0.0.7:7070, got "nope"`,
			`3: client.remote[2]: 10.0.0.7:7070 is also client.remote[0]: a shard serves one orchestrator link`,
			`3: client.remote[3]: want host:port of a ` + "`wsplan shard --listen`" + `, e.g. 10.0.0.7:7070, got "10.0.0.8:99999"`,
			`4: client.weights: want one weight per remote shard (4), got 2`,
			`4: client.weights[1]: must be >= 1, got 0`,
			`5: client.idle_exit: must be > 0, got -1s`,
		}},
		{file: "invalid-command.yaml", want: []string{
			`2: servers[0].addrs: is required with command: list where the server listens, e.g. [127.0.0.1:9000]`,
			`3: servers[0].framework: a server with command: is your own: remove framework:`,
			`5: servers[0].options: a server with command: takes no options: pass them in its command`,
			`8: servers[1].addrs[0]: 10.0.0.1 is not a loopback address: set defaults.allow_remote: true to use it`,
			`8: servers[1].addrs[1]: want an IP address and port such as 127.0.0.1:9000, got "127.0.0.1"`,
			`8: servers[1].addrs[2]: want a port between 1 and 65535, got "127.0.0.1:0"`,
			`9: servers[2].name: bad server name "built in": use letters, digits, _, - and .`,
			`10: servers[2].addrs: only with command:; built-in servers listen on defaults.listen from defaults.base_port`,
			`11: servers[2].path: want a path starting with /, got "ws"`,
		}},
		{file: "invalid-assert.yaml", want: []string{
			`8: assert[0].phase: unknown phase "ech" (did you mean "echo"?)`,
			`9: assert[1].expr: is required: a boolean expression such as failed == 0`,
			`10: assert[1].server[1]: unknown server "gorila" (known: fake_plan_test)`,
			`12: assert[2].server: unknown server "nobody" (known: fake_plan_test)`,
			`13: assert[2]: unknown key "severity" (known: name, expr, phase, server, abort)`,
		}},
		{file: "invalid-syntax.yaml", want: []string{
			`3: bad YAML: did not find expected ',' or '}'`,
		}},
		{file: "invalid-two-docs.yaml", want: []string{
			`5: a plan is one YAML document; a second one starts here (remove the ---)`,
		}},
		{file: "invalid-dup-key.yaml", want: []string{
			`4: phases[0].connect: key "connections" is written twice (first at line 4)`,
			`5: key "servers" is written twice (first at line 1)`,
		}},
		// A search that varies the rate opens no connection: the phases
		// after it are still checked against the 10 open ones.
		{file: "invalid-search.yaml", want: []string{
			`6: phases[2].rate.connections: must be <= the connections opened before it (10), got 11`,
			`9: phases[3].search.max: must be >= start (1000), got 500`,
			`10: phases[3].search.factor: must be > 1, got 1`,
			`11: phases[3].search.slo: "p99 < 5 && lost == 0": invalid operation: < (mismatched types time.Duration and int) (1:5): latencies are durations, write the bound as one, e.g. duration("5ms")`,
		}},
		{file: "invalid-rate.yaml", want: []string{
			`4: phases[0].rate: needs open connections: put a connect phase before it`,
			`7: phases[2].rate.duration: must be > 0, got 0s`,
			`8: phases[2].rate.rate: must be > 0 messages per connection per second, got 0`,
			`9: phases[2].rate.payload: must be >= 16 (the latency marker: 8-byte sequence number and 8-byte scheduled send time), got 8`,
			`10: phases[2].rate.connections: must be <= the connections opened before it (10), got 11`,
			`11: phases[2].rate.ramp: must be in [0, duration 0s], got 2s`,
			`12: phases[2].rate.max_inflight: must be >= 0, got -1`,
			`13: phases[3].hold.ping: must be >= 0 (0 = no pings), got -1s`,
		}},
		{file: "invalid-empty.yaml", want: []string{
			`servers: a plan needs at least one server, e.g. - name: gorilla (wsplan frameworks lists them)`,
			`phases: a plan needs at least one phase, e.g. - connect: {connections: 1000}`,
		}},
	}

	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			p, err := Load(path, tt.opts)
			if err == nil {
				t.Fatalf("Load(%s) = %+v, want errors", path, p)
			}
			if p != nil {
				t.Errorf("Load(%s) returned a plan with its errors", path)
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Load(%s) error %T is not plan.Errors: %v", path, err, err)
			}
			var want []string
			for _, w := range tt.want {
				// "12: field: msg" has a line; "--only: msg" has none.
				if w[0] >= '0' && w[0] <= '9' {
					want = append(want, path+":"+w)
				} else {
					want = append(want, path+": "+w)
				}
			}
			got := strings.Split(err.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("Load(%s) errors:\n%s\nwant:\n%s", path, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, e := range errs {
				if e.File != path || e.Msg == "" || e.Line < 0 {
					t.Errorf("malformed error %#v", e)
				}
			}
		})
	}

	files, err := filepath.Glob("testdata/invalid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !covered[filepath.Base(f)] {
			t.Errorf("%s has no entry in TestLoadBadPlans", f)
		}
	}
}

// TestLoadThreeProblems: one file, three unrelated mistakes, all reported
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
