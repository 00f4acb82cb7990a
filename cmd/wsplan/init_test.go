package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/initplan"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/prototest"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
)

// `wsplan init` as a user runs it: the plan it writes runs as written
// against the server it names (an in-test echo server, a preset, Debian's
// mosquitto), it asks on a terminal and never overwrites a file unasked.

// initPlan runs `wsplan init ARGS... FILE` in dir (stdin not a terminal)
// and returns the plan's path.
func initPlan(t *testing.T, dir string, args ...string) string {
	t.Helper()
	file := filepath.Join(dir, "plan.yaml")
	var stdout, stderr bytes.Buffer
	if code := Main(append(append([]string{"init"}, args...), file), &stdout, &stderr); code != 0 {
		t.Fatalf("wsplan init %v: exit %d: %s", args, code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "wrote "+file) {
		t.Errorf("stdout %q: want it to name the file written", stdout.String())
	}
	return file
}

// runInitPlan runs `wsplan run plan.yaml ARGS...` in dir, with the JSON
// in r.json, and returns its exit code and stdout.
func runInitPlan(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	r := startWsplan(t, dir, append([]string{"run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs"}, args...)...)
	code := r.wait(t, 2*time.Minute)
	if code != 0 {
		t.Logf("stderr:\n%s", r.stderrText())
	}
	return code, r.stdout.String()
}

// TestInitRaw: the raw plan for a url runs against an echo server with
// every phase ok and every assertion held; against a server that answers
// 300 ms late, the p99 assertions fail it (exit 1).
func TestInitRaw(t *testing.T) {
	testenv.Slow(t, "runs a raw starter plan against every preset shape: 5 s; TestInitMQTT runs init then run")
	for _, c := range []struct {
		name  string
		delay time.Duration
		code  int
		want  string
	}{
		{"echo server", 0, 0, "3 assertions: 3 passed, 0 failed"},
		{"300ms late", 300 * time.Millisecond, 1, "| target | echo    | echo p99 "},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := testserver.Start(t, testserver.Options{Delay: c.delay})
			initPlan(t, dir, "--url", "ws://"+s.Addr()+"/ws", "--conns", "10")
			args := []string{"--set", "echoes=20", "--set", "duration=1s"}
			if c.delay == 0 { // the bounds a loaded host keeps; 300 ms late breaks the default's 250 ms
				args = append(args, "--set", "p99=5s", "--set", "handshake_p99=5s")
			}
			code, out := runInitPlan(t, dir, args...)
			if code != c.code || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, want %d with %q; stdout:\n%s", code, c.code, c.want, out)
			}
			res := readJSON(t, filepath.Join(dir, "r.json"))
			if len(res.Results) != 3 {
				t.Fatalf("%d results, want connect, echo and rate", len(res.Results))
			}
			for _, x := range res.Results {
				if c.delay == 0 && !x.OK {
					t.Errorf("%s: %s", x.Phase, x.Error)
				}
			}
			if c.delay > 0 && !strings.Contains(out, "FAIL") {
				t.Errorf("no failed assertion in:\n%s", out)
			}
		})
	}
}

// TestInitPresetTLS: without a url, the plan measures a preset; with
// --tls the preset serves wss:// with the run's CA, and the connect row
// says TLS was spoken.
func TestInitPresetTLS(t *testing.T) {
	testenv.Slow(t, "2 s: wsplan init's TLS preset plan run")
	dir := t.TempDir()
	initPlan(t, dir, "--tls", "--conns", "10", "--ci")
	code, out := runInitPlan(t, dir, "--set", "port="+strconv.Itoa(freeBasePort(t, 1)), "--set", "echoes=50", "--set", "duration=1s",
		"--set", "p99=5s", "--set", "handshake_p99=5s")
	if code != 0 {
		t.Fatalf("exit %d; stdout:\n%s", code, out)
	}
	res := readJSON(t, filepath.Join(dir, "r.json"))
	if len(res.Results) != 3 || res.Results[0].Server != initplan.DefaultPreset {
		t.Fatalf("results %+v: want 3 of %s", res.Results, initplan.DefaultPreset)
	}
	if v := res.Results[0].Info["tls_version"]; !strings.HasPrefix(v, "TLS") {
		t.Errorf("connect info tls_version %q, want TLS spoken", v)
	}
}

// TestInitMQTT: `wsplan init --url ws://127.0.0.1:PORT/mqtt --protocol
// mqtt`, then `wsplan run` against Debian's mosquitto: exit 0, every
// exchange counted.
func TestInitMQTT(t *testing.T) {
	testenv.Slow(t, "1 s: wsplan init's MQTT plan run against mosquitto")
	dir := t.TempDir()
	addr := prototest.StartMosquitto(t)
	file := initPlan(t, dir, "--url", "ws://"+addr+"/mqtt", "--protocol", "mqtt", "--conns", "20")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the plan:\n%s", data)
	// The bounds a loaded host keeps: a handshake p99 of 1.37 s broke the
	// default 1 s on one; the exchanges counted are what is checked here.
	code, out := runInitPlan(t, dir, "--set", "p99=5s", "--set", "handshake_p99=5s")
	if code != 0 {
		t.Fatalf("exit %d; stdout:\n%s", code, out)
	}
	t.Logf("wsplan run plan.yaml: exit 0\n%s", out)
	res := readJSON(t, filepath.Join(dir, "r.json"))
	if len(res.Results) != 2 {
		t.Fatalf("%d results, want connect and script", len(res.Results))
	}
	m := res.Results[1].Metrics
	if !res.Results[1].OK || m["suback_count"] != 20.0 || m["delivery_count"] != 400.0 || m["puback_count"] != 400.0 {
		t.Errorf("script: ok=%v %q; suback %v, delivery %v, puback %v: want 20, 400, 400",
			res.Results[1].OK, res.Results[1].Error, m["suback_count"], m["delivery_count"], m["puback_count"])
	}
	if !strings.Contains(out, "2 assertions: 2 passed, 0 failed") {
		t.Errorf("assertions:\n%s", out)
	}
}

// TestInitFiles: an existing file is refused without --force (exit 2,
// untouched) and overwritten with it; - writes the plan to stdout; bad
// flags are exit 2 naming the flag.
func TestInitFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(file, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
		file   string // its contents after, "" = a plan
	}{
		{[]string{"init", file}, ExitUsage, "plan.yaml exists: --force overwrites it", "mine\n"},
		{[]string{"init", "--protocol", "amqp", file}, ExitUsage, `--protocol "amqp": want one of none,`, "mine\n"},
		{[]string{"init", "--conns", "0", "--force", file}, ExitUsage, "--conns 0: want 1 to 100000", "mine\n"},
		{[]string{"init", "--url", "http://127.0.0.1/", "--force", file}, ExitUsage, "want a ws:// or wss:// URL", "mine\n"},
		{[]string{"init", "--force", "--protocol", "stomp", file}, ExitOK, "", ""},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", c.args, code, stderr.String(), c.code, c.stderr)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if c.file != "" && string(data) != c.file {
			t.Errorf("%v: the file is now %q, want %q", c.args, data, c.file)
		}
		if c.file == "" {
			if err := initplan.Check(file, data); err != nil || !bytes.Contains(data, []byte("protocol: {name: stomp")) {
				t.Errorf("%v: the plan written: %v\n%s", c.args, err, data)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"init", "--url", "ws://127.0.0.1:7000/ws", "-"}, &stdout, &stderr); code != 0 {
		t.Fatalf("init -: exit %d: %s", code, stderr.String())
	}
	p, err := plan.LoadBytes("starter.yaml", stdout.Bytes(), plan.LoadOptions{})
	if err != nil || p.Name != "starter" || p.Servers[0].URLs[0] != "ws://127.0.0.1:7000/ws" {
		t.Errorf("init - wrote a plan that loads as %+v, %v:\n%s", p, err, stdout.String())
	}
}
