package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/klauspost/compress/snappy"
	"gopkg.in/yaml.v3"
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

// TestSecretsNeverLeave: a secret holding every character encoders change,
// given through ${env:NAME} in a URL's query, an Authorization header, an
// MQTT and a STOMP password, a graphql-ws init and the plan's name, is
// found in no output in any encoding: a run's stdout and stderr (progress
// on), --json, --junit, --summary, --html, --benchfmt, the out dir (its
// name, the server's log that prints the secret, the shards' logs), the
// live metrics on --metrics-listen, remote write and OTLP bodies, and
// validate's print and its errors for a malformed init (a quote that
// breaks its JSON), an init with an apostrophe, and a URL whose path the
// secret breaks. A STOMP server that echoes the password in its ERROR
// carries the secret through the client shards' replies. Each output
// shows *** where the secret was (so the check can fail).
func TestSecretsNeverLeave(t *testing.T) {
	t.Setenv("WSPLAN_TEST_SECRET", hardSecret)
	init, _ := json.Marshal(map[string]string{"token": hardSecret})
	t.Setenv("WSPLAN_TEST_INIT", string(init))
	t.Setenv("WSPLAN_TEST_APOSTROPHE", `{"token":"it's-`+string(init[10:]))
	dir := t.TempDir()
	stomp := startEchoSTOMP(t)
	recv := startPushReceiver(t)
	dead := "127.0.0.1:" + strconv.Itoa(freeBasePort(t, 1))
	logger := "127.0.0.1:" + strconv.Itoa(freeBasePort(t, 1))
	metrics := "127.0.0.1:" + strconv.Itoa(freeBasePort(t, 1))
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
`, freeBasePort(t, 4), recv.addr, recv.addr, logger, logger, stomp, dead, dead)
	bad := map[string]string{
		"quote.yaml":      "servers: [{name: a, url: \"ws://127.0.0.1:9/\", protocol: {name: graphql-ws, init: '{\"token\":\"${env:WSPLAN_TEST_SECRET}\"}'}}]\nphases: [{connect: {connections: 1}}]\n",
		"apostrophe.yaml": "servers: [{name: a, url: \"ws://127.0.0.1:9/\", protocol: {name: graphql-ws, init: '${env:WSPLAN_TEST_APOSTROPHE}'}}]\nphases: [{connect: {connections: 1}}]\n",
		"url.yaml":        "servers: [{name: a, url: \"ws://127.0.0.1:9/p/${env:WSPLAN_TEST_SECRET}\"}]\nphases: [{connect: {connections: 1}}]\n",
		"plan.yaml":       plan,
	}
	for name, body := range bad {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Each output, what it must show where the secret was, and how the
	// command that wrote it must end.
	outputs := map[string]string{}
	shows := map[string]string{}
	validate := func(file string, code int, want string) {
		v := startWsplan(t, dir, "validate", file)
		if got := v.wait(t, time.Minute); got != code {
			t.Errorf("validate %s: exit %d, want %d; stderr:\n%s", file, got, code, v.stderrText())
		}
		outputs["validate "+file+": stdout+stderr"] = v.stdout.String() + v.stderrText()
		shows["validate "+file+": stdout+stderr"] = want
	}
	validate("quote.yaml", ExitUsage, "quote.yaml:1: servers[0].protocol: client: graphql-ws: init must be a JSON object (connection_init's payload): its JSON is broken at byte")
	validate("apostrophe.yaml", ExitOK, "protocol: graphql-ws {init: '***'}")
	validate("url.yaml", ExitUsage, "url.yaml:1: servers[0].url: bad URL: invalid URL escape (not shown)")
	validate("plan.yaml", ExitOK, "Authorization=Bearer ***")

	scrapes := scrapeWhileRunning(t, metrics)
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "on", "--json", "r.json", "--junit", "r.xml",
		"--summary", "r.md", "--html", "r.html", "--benchfmt", "r.bench", "--metrics-listen", metrics)
	if code := r.wait(t, 3*time.Minute); code != ExitFailed {
		t.Errorf("run: exit %d, want %d (stomp, mqtt and gql fail); stderr:\n%s", code, ExitFailed, r.stderrText())
	}
	outputs["run stdout"], shows["run stdout"] = r.stdout.String(), "stomp: ERROR: ***"
	outputs["run stderr"], shows["run stderr"] = r.stderrText(), "server logs: wsplan-out/bench ***-"
	outputs["--metrics-listen"], shows["--metrics-listen"] = scrapes(), `plan="bench ***"`
	outputs["remote write"], shows["remote write"] = recv.body("/api/v1/write"), "bench ***"
	outputs["OTLP"], shows["OTLP"] = recv.body("/v1/metrics"), "bench ***"
	var logs []string
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		name := rel
		if d, f, ok := strings.Cut(rel, string(filepath.Separator)); ok && d == "wsplan-out" {
			name = "out dir " + filepath.Base(f) // the same name every run
		}
		outputs[name] = rel + "\n" + string(b) // its path too
		if strings.HasSuffix(path, ".log") {
			logs = append(logs, name)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{"r.json": "stomp: ERROR: ***", "r.xml": "stomp: ERROR: ***", "r.md": "stomp: ERROR: ***", "r.html": "stomp: ERROR: ***", "r.bench": "bench"} {
		shows[f] = want
	}
	shows["out dir server-logger.log"] = "token=***"
	if len(logs) != 1+2*2 {
		t.Errorf("logs %q: want the logger's and 2 shards' of each server that could be reached", logs)
	}

	for name, text := range outputs {
		for _, enc := range secretEncodings {
			t.Run(name+"/"+enc.name, func(t *testing.T) {
				for _, f := range enc.forms(hardSecret) {
					if i := strings.Index(text, f); i >= 0 {
						t.Errorf("shows %q at %d: …%s…", f, i, text[max(0, i-80):min(len(text), i+len(f)+80)])
					}
				}
			})
		}
		if want := shows[name]; want != "" && !strings.Contains(text, want) {
			t.Errorf("%s: no %q where the secret was:\n%s", name, want, clipText(text))
		}
	}
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
