package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/klauspost/compress/snappy"
	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/testenv"
)

// hardSecret holds what encoders change: both quotes, a backslash, a
// percent sign, a space and non-ASCII; its pieces between them hold a dot,
// which no base64 alphabet has, so they cannot match by chance in the
// reports' base64 histograms.
const hardSecret = `x.Q7"y.W3'z.L9\k.R5%j.H2 é✓m.F4`

// secretEncodings are the spellings of a secret an output may carry; a
// row's forms must appear in no output. (Written here, apart from
// internal/secret's list, so that the test checks it.)
var secretEncodings = []struct {
	name  string
	forms func(s string) []string
}{
	{"raw", func(s string) []string { return []string{s} }},
	{"Go-quoted", func(s string) []string { return []string{inner(strconv.Quote(s)), inner(strconv.QuoteToASCII(s))} }},
	{"JSON-escaped", func(s string) []string {
		b, _ := json.Marshal(s)
		return []string{inner(string(b))}
	}},
	{"YAML-quoted", func(s string) []string {
		b, _ := yaml.Marshal(&yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Value: s})
		return []string{strings.ReplaceAll(s, "'", "''"), inner(strings.TrimSpace(string(b)))}
	}},
	{"URL-encoded", func(s string) []string { return []string{url.QueryEscape(s), url.PathEscape(s)} }},
	{"HTML-escaped", func(s string) []string { return []string{html.EscapeString(s)} }},
	{"base64", func(s string) []string {
		return []string{base64.StdEncoding.EncodeToString([]byte(s)), base64.URLEncoding.EncodeToString([]byte(s)),
			base64.RawStdEncoding.EncodeToString([]byte(s)), base64.StdEncoding.EncodeToString([]byte("bench:" + s))}
	}},
	// A piece survives any escaping of the characters around it.
	{"a piece", func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(`"'\% `, r) || r > 127 })
	}},
}

func inner(q string) string { return q[1 : len(q)-1] }

// issueSecret is issue 30's own example: beside what hardSecret holds, a
// valid URL escape (%41) and a Go escape (\b). Its pieces are too short
// to look for alone.
const issueSecret = `s3 "q" 'a' \b %41 é✓`

// phaseSecret is a credential a script phase writes itself, without
// ${env:}: its upgrade's Authorization header, an access_token query
// parameter, a JSON member named password.
const phaseSecret = "ph.L1t3r4l.Cr3d"

// TestSecretsNeverLeave: a secret holding every character encoders change
// (hardSecret, then issueSecret), given through ${env:NAME} in a URL's
// query, an Authorization header, an MQTT and a STOMP password, a
// graphql-ws init and the plan's name, and in a script phase's body (its
// name, upgrade headers and query, and the message it sends), beside a
// credential the phase writes itself (phaseSecret), is found in no output
// in any encoding: a run's stdout and stderr (progress on), --json,
// --junit, --summary, --html, --benchfmt, the out dir (its name, the
// server's log that prints the secret, the shards' logs), the live
// metrics on --metrics-listen, remote write and OTLP bodies, and
// validate's print and its errors for a malformed init (a quote that
// breaks its JSON), an init with an apostrophe, and a URL whose path
// holds the secret. A STOMP server that echoes the password in its ERROR
// carries the secret through the client shards' replies; a server that
// logs each upgrade request and message it gets carries the phase's
// through its log. Each output shows *** where the secret was (so the
// check can fail).
func TestSecretsNeverLeave(t *testing.T) {
	testenv.Slow(t, "6 s: every output of two runs searched for secrets")
	t.Parallel()
	for _, tc := range []struct{ name, secret string }{{"hard", hardSecret}, {"issue", issueSecret}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := secretOutputs(t, tc.secret)
			for name, text := range o.text {
				for _, secret := range []string{tc.secret, phaseSecret} {
					for _, enc := range secretEncodings {
						for _, f := range enc.forms(secret) {
							if i := strings.Index(text, f); i >= 0 && len(f) >= minForm {
								t.Errorf("%s shows %s (%s) %q at %d: …%s…", name, secret, enc.name, f, i, text[max(0, i-80):min(len(text), i+len(f)+80)])
							}
						}
					}
				}
				if want := o.shows[name]; want != "" && !strings.Contains(text, want) {
					t.Errorf("%s: no %q where the secret was:\n%s", name, want, clipText(text))
				}
			}
			for name, want := range o.shows {
				if _, ok := o.text[name]; !ok {
					t.Errorf("no output %s (it should show %q)", name, want)
				}
			}
		})
	}
}

// minForm is the shortest form of a secret looked for: a shorter piece
// (issueSecret's "s3") could be in an output by chance.
const minForm = 4

// secretOutputs are every output of the runs and validations of
// TestSecretsNeverLeave, by name, and what each must show where the
// secret was.
type secretOutput struct {
	text, shows map[string]string
}

// set records an output and what it must show.
func (o *secretOutput) set(name, text, shows string) {
	o.text[name] = text
	if shows != "" {
		o.shows[name] = shows
	}
}

// secretOutputs writes the plans for secret, validates them, runs the two
// that run (every server kind and output; the script phase's), and
// gathers what they printed and wrote.
func secretOutputs(t *testing.T, secret string) *secretOutput {
	init, _ := json.Marshal(map[string]string{"token": secret})
	env := []string{ // the runs' own: the subtests run side by side
		"WSPLAN_TEST_SECRET=" + secret,
		"WSPLAN_TEST_INIT=" + string(init),
		"WSPLAN_TEST_APOSTROPHE=" + `{"token":"it's-` + string(init[10:]),
	}
	dir := t.TempDir()
	recv := startPushReceiver(t)
	metrics := "127.0.0.1:" + strconv.Itoa(freeBasePort(t, 1))
	phaseMetrics := "127.0.0.1:" + strconv.Itoa(freeBasePort(t, 1))
	for name, body := range secretPlans(t, recv.addr) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := &secretOutput{text: map[string]string{}, shows: map[string]string{}}
	validate := func(file string, code int, want string) {
		v := startWsplanEnv(t, dir, env, "validate", file)
		if got := v.wait(t, time.Minute); got != code {
			t.Errorf("validate %s: exit %d, want %d; stderr:\n%s", file, got, code, v.stderrText())
		}
		o.set("validate "+file+": stdout+stderr", v.stdout.String()+v.stderrText(), want)
	}
	validate("quote.yaml", ExitUsage, "quote.yaml:1: servers[0].protocol: graphql-ws: init: must be a JSON object (connection_init's payload): its JSON is broken at byte")
	validate("apostrophe.yaml", ExitOK, "protocol: graphql-ws {init: '***'}")
	if strings.Contains(secret, "%j") { // an invalid URL escape
		validate("url.yaml", ExitUsage, "url.yaml:1: servers[0].url: bad URL: invalid URL escape (not shown)")
	} else {
		validate("url.yaml", ExitOK, "url ws://127.0.0.1:9/p/***")
	}
	validate("plan.yaml", ExitOK, "Authorization=Bearer ***")
	validate("phase.yaml", ExitOK, "headers: {Authorization: Bearer ***, X-Env: ***}")

	scrapes := scrapeWhileRunning(t, metrics)
	r := startWsplanEnv(t, dir, env, "run", "plan.yaml", "--progress", "on", "--json", "r.json", "--junit", "r.xml",
		"--summary", "r.md", "--html", "r.html", "--benchfmt", "r.bench", "--metrics-listen", metrics)
	if code := r.wait(t, 3*time.Minute); code != ExitFailed {
		t.Errorf("run: exit %d, want %d (stomp, mqtt and gql fail); stderr:\n%s", code, ExitFailed, r.stderrText())
	}
	o.set("run stdout", r.stdout.String(), "stomp: ERROR: ***")
	o.set("run stderr", r.stderrText(), "server logs: wsplan-out/bench ***-")
	o.set("--metrics-listen", scrapes(), `plan="bench ***"`)
	phaseScrapes := scrapeWhileRunning(t, phaseMetrics)
	ph := startWsplanEnv(t, dir, env, "run", "phase.yaml", "--progress", "on", "--json", "p.json", "--junit", "p.xml",
		"--summary", "p.md", "--html", "p.html", "--benchfmt", "p.bench", "--metrics-listen", phaseMetrics)
	if code := ph.wait(t, time.Minute); code != ExitOK {
		t.Errorf("run phase.yaml: exit %d, want %d; stderr:\n%s", code, ExitOK, ph.stderrText())
	}
	o.set("run phase.yaml stdout", ph.stdout.String(), "login ***")
	o.set("run phase.yaml stderr", ph.stderrText(), "")
	o.set("phase.yaml --metrics-listen", phaseScrapes(), `phase="login ***"`)
	o.set("remote write", recv.body("/api/v1/write"), `login ***`)
	o.set("OTLP", recv.body("/v1/metrics"), "bench ***")
	secretFiles(t, dir, o)
	return o
}

// secretFiles adds every file the runs wrote under dir to o, by name (the
// out dir's under a name that does not change from run to run).
func secretFiles(t *testing.T, dir string, o *secretOutput) {
	var logs []string
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		name := rel
		if d, f, ok := strings.Cut(rel, string(filepath.Separator)); ok && d == "wsplan-out" {
			name = "out dir " + strings.SplitN(f, string(filepath.Separator), 2)[0][:5] + " " + filepath.Base(f)
		}
		o.text[name] = rel + "\n" + string(b) // its path too
		if strings.HasSuffix(path, ".log") {
			logs = append(logs, name)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"r.json", "r.xml", "r.md", "r.html"} {
		o.shows[f] = "stomp: ERROR: ***"
	}
	for _, f := range []string{"p.json", "p.xml", "p.md", "p.html"} {
		o.shows[f] = "login ***"
	}
	o.shows["p.bench"] = "BenchmarkLogin____/server=echolog"
	o.shows["r.bench"] = "bench"
	o.shows["out dir bench server-logger.log"] = "token=***"
	o.shows["out dir phase server-echolog.log"] = "Authorization: Bearer ***"
	if len(logs) != 1+2*2+1+2 {
		t.Errorf("logs %q: want the logger's and 2 shards' of each server that could be reached, the echolog's and its 2 shards'", logs)
	}
}

// secretPlans are the plans of TestSecretsNeverLeave, by file name: plan
// (every server kind, pushing metrics to recv), phase (a script phase
// whose body holds the secrets, on a server that logs what it gets), and
// three that validate prints or refuses.
func secretPlans(t *testing.T, recv string) map[string]string {
	stomp := startEchoSTOMP(t)
	dead := "127.0.0.1:" + strconv.Itoa(freeBasePort(t, 1))
	logger := "127.0.0.1:" + strconv.Itoa(freeBasePort(t, 1))
	echolog := "127.0.0.1:" + strconv.Itoa(freeBasePort(t, 1))
	plan := fmt.Sprintf(`name: "bench ${env:WSPLAN_TEST_SECRET}"
defaults:
  base_port: %d
  headers: {Authorization: "Bearer ${env:WSPLAN_TEST_SECRET}"}
client: {shards: 2, loops: 1}
metrics:
  remote_write: "http://%s/api/v1/write"
  otlp: "http://%s/v1/metrics"
  interval: 200ms
  headers: {Authorization: "Bearer ${env:WSPLAN_TEST_SECRET}"}
servers:
  - name: logger
    command: [sh, -c, 'printf "token=%%s\n" "$1"; printf %%s "$1" | base64; exec wsplan serve --framework gorilla --addrs "$2"', sh, "${env:WSPLAN_TEST_SECRET}", "%s"]
    addrs: ["%s"]
  - name: stomp
    url: "ws://%s/ws"
    protocol: {name: stomp, username: bench, password: "${env:WSPLAN_TEST_SECRET}"}
  - name: mqtt
    url: "ws://%s/mqtt?token=${env:WSPLAN_TEST_SECRET}"
    protocol: {name: mqtt, version: "5", username: bench, password: "${env:WSPLAN_TEST_SECRET}"}
  - name: gql
    url: "ws://%s/graphql?access_token=${env:WSPLAN_TEST_SECRET}"
    protocol: {name: graphql-ws, init: '${env:WSPLAN_TEST_INIT}'}
phases:
  - connect: {connections: 4, concurrency: 4, timeout: 2s}
  - hold: {duration: 1s}
`, freeBasePort(t, 4), recv, recv, logger, logger, stomp, dead, dead)
	phase := fmt.Sprintf(`name: phase
defaults: {base_port: %d}
client: {shards: 2, loops: 1}
metrics: {remote_write: "http://%s/api/v1/write", interval: 200ms}
servers:
  - name: echolog
    command: [wsplan-echolog, "%s"]
    addrs: ["%s"]
phases:
  - script:
      name: "login ${env:WSPLAN_TEST_SECRET}"
      users: 2
      duration: 1s
      query: "user=bench&access_token=%s"
      headers: {X-Env: "${env:WSPLAN_TEST_SECRET}", Authorization: "Bearer %s"}
      steps:
        - send: '{"op":"login","password":"%s","env":"${env:WSPLAN_TEST_SECRET}"}'
        - expect: {prefix: '{"op":"login"', as: login}
        - think: 100ms
`, freeBasePort(t, 4), recv, echolog, echolog, phaseSecret, phaseSecret, phaseSecret)
	return map[string]string{
		"quote.yaml":      "servers: [{name: a, url: \"ws://127.0.0.1:9/\", protocol: {name: graphql-ws, init: '{\"token\":\"${env:WSPLAN_TEST_SECRET}\"}'}}]\nphases: [{connect: {connections: 1}}]\n",
		"apostrophe.yaml": "servers: [{name: a, url: \"ws://127.0.0.1:9/\", protocol: {name: graphql-ws, init: '${env:WSPLAN_TEST_APOSTROPHE}'}}]\nphases: [{connect: {connections: 1}}]\n",
		"url.yaml":        "servers: [{name: a, url: \"ws://127.0.0.1:9/p/${env:WSPLAN_TEST_SECRET}\"}]\nphases: [{connect: {connections: 1}}]\n",
		"plan.yaml":       plan,
		"phase.yaml":      phase,
	}
}

// echoLog is `wsplan-echolog ADDR`: a WebSocket echo server that logs
// each upgrade request (its query and headers) and each message it gets
// on stdout, as a server's debug log does.
func echoLog() {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("GET %s\n", r.URL.RequestURI())
		for _, k := range slices.Sorted(maps.Keys(r.Header)) {
			fmt.Printf("%s: %s\n", k, strings.Join(r.Header[k], ", "))
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			op, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			fmt.Printf("message: %s\n", msg)
			if c.WriteMessage(op, msg) != nil {
				return
			}
		}
	})
	srv := &http.Server{Addr: os.Args[1], Handler: h, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintln(os.Stderr, srv.ListenAndServe())
	os.Exit(1)
}

func clipText(s string) string {
	if len(s) > 4000 {
		return s[:4000] + "…"
	}
	return s
}

// startEchoSTOMP serves STOMP over WebSocket on a loopback port and
// answers every CONNECT with an ERROR whose message is the passcode, as a
// broker that quotes a refused login does; it returns its address.
func startEchoSTOMP(t *testing.T) string {
	t.Helper()
	up := websocket.Upgrader{Subprotocols: []string{"v12.stomp"}}
	escape := strings.NewReplacer(`\`, `\\`, ":", `\c`, "\n", `\n`, "\r", `\r`)
	return serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		_, msg, err := c.ReadMessage()
		if err != nil {
			return
		}
		pass := ""
		for _, l := range strings.Split(string(msg), "\n") {
			if v, ok := strings.CutPrefix(l, "passcode:"); ok {
				pass = v
			}
		}
		_ = c.WriteMessage(websocket.TextMessage, []byte("ERROR\nmessage:"+escape.Replace(pass)+"\n\n\x00")) // the client's failure is the test
		_, _, _ = c.ReadMessage()                                                                            // until the client closes
	}))
}

// pushReceiver records the bodies of remote-write and OTLP pushes,
// decompressed, by path.
type pushReceiver struct {
	addr   string
	mu     sync.Mutex
	bodies map[string]*bytes.Buffer
}

func startPushReceiver(t *testing.T) *pushReceiver {
	t.Helper()
	p := &pushReceiver{bodies: map[string]*bytes.Buffer{}}
	p.addr = serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch {
		case r.Header.Get("Content-Encoding") == "snappy":
			b, err = snappy.Decode(nil, b)
		case r.Header.Get("Content-Encoding") == "gzip":
			var z *gzip.Reader
			if z, err = gzip.NewReader(bytes.NewReader(b)); err == nil {
				b, err = io.ReadAll(z)
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		if p.bodies[r.URL.Path] == nil {
			p.bodies[r.URL.Path] = &bytes.Buffer{}
		}
		p.bodies[r.URL.Path].Write(b)
		p.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	return p
}

func (p *pushReceiver) body(path string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b := p.bodies[path]; b != nil {
		return b.String()
	}
	return ""
}

// serveLoopback serves h on a free loopback port until the test ends.
func serveLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// scrapeWhileRunning scrapes addr's /metrics every 100 ms until the test
// calls the returned function, which gives every scrape's body.
func scrapeWhileRunning(t *testing.T, addr string) func() string {
	t.Helper()
	var b strings.Builder
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		c := &http.Client{Timeout: time.Second}
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			r, err := c.Get("http://" + addr + "/metrics")
			if err != nil {
				continue // not listening yet, or no more
			}
			body, _ := io.ReadAll(r.Body) // a cut body is still checked
			r.Body.Close()
			b.Write(body)
		}
	}()
	var once sync.Once
	finish := func() string {
		once.Do(func() { close(stop); <-done })
		return b.String()
	}
	t.Cleanup(func() { finish() })
	return finish
}
