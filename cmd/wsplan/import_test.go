package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/wsplan/wsplan/internal/testenv"
)

// The HAR import's tests: a recorded browser session (a Chromium HAR the
// browser recorded, and one in Firefox's layout) imported into a plan,
// the plan validated, then run against the server it was recorded from:
// every exchange matched.

// The test app's credentials: what the recordings hold, and what the plan
// must take from the environment.
const (
	harToken  = "har-test-token-4f2a9b"
	harCookie = "har-test-cookie-9c1e77"
)

// harApp is the server the recordings were made against: a page that sets
// a session cookie and opens a WebSocket, and the WebSocket's JSON
// protocol. The upgrade needs the token (query) and the cookie; the
// conversation is a welcome push, then requests with ids answered with the
// same id: login (with the token; answered with a session the server
// makes), subscribe (with that session), echo.
type harApp struct {
	token, cookie string
	up            websocket.Upgrader

	refused, welcomes, logins, subscribes, echoes, errors atomic.Int64
	mu                                                    sync.Mutex
	bad                                                   []string // what the errors answered
}

func newHARApp() *harApp {
	return &harApp{token: harToken, cookie: harCookie, up: websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}}
}

// start serves the app on 127.0.0.1 until the test ends.
func (a *harApp) start(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(a)
	t.Cleanup(s.Close)
	return s
}

// harPage is the recorded page: it opens the WebSocket, sends the
// requests with the pauses of a person reading the replies, and closes it.
const harPage = `<!doctype html><title>recording</title><script>
const ws = new WebSocket("ws://" + location.host + "/ws?token=TOKEN&room=lobby");
const send = (o) => ws.send(JSON.stringify(o));
ws.onmessage = (e) => {
  const m = JSON.parse(e.data);
  if (m.type === "welcome") send({op: "login", id: 1, token: "TOKEN"});
  else if (m.op === "login_ok") setTimeout(() => send({op: "subscribe", id: 2, room: "lobby", session: m.session}), 120);
  else if (m.op === "subscribed") setTimeout(() => send({op: "echo", id: 3, text: "hello"}), 80);
  else if (m.op === "reply" && m.id === 3) setTimeout(() => send({op: "echo", id: 4, text: "world"}), 50);
  else if (m.op === "reply" && m.id === 4) { ws.close(1000); document.title = "done"; }
  else { document.title = "error: " + e.data; ws.close(); }
};
</script>`

func (a *harApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/":
		http.SetCookie(w, &http.Cookie{Name: "session", Value: a.cookie, Path: "/", SameSite: http.SameSiteStrictMode})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, strings.ReplaceAll(harPage, "TOKEN", a.token))
	case "/ws":
		c, err := r.Cookie("session")
		if r.URL.Query().Get("token") != a.token || err != nil || c.Value != a.cookie {
			a.refused.Add(1)
			http.Error(w, "token or session cookie missing or wrong", http.StatusForbidden)
			return
		}
		conn, err := a.up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		a.converse(conn)
	default:
		http.NotFound(w, r)
	}
}

// harRequest is a request of the app's protocol.
type harRequest struct {
	Op      string          `json:"op"`
	ID      json.RawMessage `json:"id"`
	Token   string          `json:"token"`
	Session string          `json:"session"`
	Room    string          `json:"room"`
	Text    string          `json:"text"`
}

// converse runs one connection's conversation.
func (a *harApp) converse(conn *websocket.Conn) {
	session := ""
	write := func(v map[string]any) bool { return conn.WriteJSON(v) == nil }
	if !write(map[string]any{"type": "welcome", "server": "har-test"}) {
		return
	}
	a.welcomes.Add(1)
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		var q harRequest
		if err := json.Unmarshal(data, &q); err != nil || len(q.ID) == 0 {
			a.fail(conn, q.ID, "not a request: "+string(data))
			continue
		}
		var ok bool
		switch {
		case q.Op == "login" && q.Token == a.token:
			session = fmt.Sprintf("s-%d-%d", time.Now().UnixNano(), a.logins.Add(1))
			ok = write(map[string]any{"op": "login_ok", "id": q.ID, "session": session})
		case q.Op == "subscribe" && session != "" && q.Session == session:
			a.subscribes.Add(1)
			ok = write(map[string]any{"op": "subscribed", "id": q.ID, "room": q.Room})
		case q.Op == "echo":
			a.echoes.Add(1)
			ok = write(map[string]any{"op": "reply", "id": q.ID, "text": q.Text, "at": time.Now().UnixMilli()})
		default:
			a.fail(conn, q.ID, "refused: "+string(data))
			continue
		}
		if !ok {
			return
		}
	}
}

func (a *harApp) fail(conn *websocket.Conn, id json.RawMessage, why string) {
	a.errors.Add(1)
	a.mu.Lock()
	a.bad = append(a.bad, why)
	a.mu.Unlock()
	_ = conn.WriteJSON(map[string]any{"op": "error", "id": id, "reason": why}) // the count above is what the test reads
}

// runMain runs the CLI in this process and returns its exit code, stdout
// and stderr.
func runMain(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// importAndRun imports a HAR file with args into dir/plan.yaml, validates
// the plan and runs it against app (served at srv) with the secrets in the
// environment; it returns the plan and the run's one result.
func importAndRun(t *testing.T, app *harApp, srvURL, file string, users int, args ...string) (string, jsonRun) {
	t.Helper()
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	wsURL := "ws" + strings.TrimPrefix(srvURL, "http") + "/ws"
	args = append([]string{"import", "har", file, "-o", plan, "--url", wsURL, "--users", fmt.Sprint(users), "--name", "recorded"}, args...)
	code, _, stderr := runMain(args...)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	for _, v := range []string{"WSPLAN_HAR_TOKEN", "WSPLAN_HAR_COOKIE"} {
		if !strings.Contains(stderr, v) {
			t.Errorf("import's stderr does not name %s:\n%s", v, stderr)
		}
	}
	b, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{harToken, harCookie} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the plan holds the secret %q:\n%s", secret, b)
		}
	}
	t.Setenv("WSPLAN_HAR_TOKEN", harToken)
	t.Setenv("WSPLAN_HAR_COOKIE", "session="+harCookie)
	if code, out, errOut := runMain("validate", plan); code != 0 {
		t.Fatalf("validate: exit %d\n%s\n%s\nplan:\n%s", code, out, errOut, b)
	}
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	if code := r.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("run: exit %d\nstderr:\n%s\nstdout:\n%s\nplan:\n%s", code, r.stderrText(), r.stdout.String(), b)
	}
	t.Logf("wsplan run plan.yaml:\n%s", r.stdout.String())
	res := readJSON(t, filepath.Join(dir, "r.json"))
	if len(res.Results) != 1 {
		t.Fatalf("%d results, want 1", len(res.Results))
	}
	return string(b), res
}

// everyExchangeMatched checks a run of the imported plan: every user
// logged in, subscribed and echoed twice, each reply matched to its
// request, nothing lost, unexpected or refused.
func everyExchangeMatched(t *testing.T, app *harApp, res jsonRun, users int, exchanges []string) {
	t.Helper()
	r := res.Results[0]
	m := r.Metrics
	if !r.OK {
		t.Errorf("the phase failed: %s", r.Error)
	}
	for _, k := range []string{"mismatched", "timeouts", "failed", "unexpected", "open_failed", "users_aborted"} {
		if v := num(m, k); v != 0 {
			t.Errorf("%s = %v, want 0", k, v)
		}
	}
	if got := num(m, "iterations"); got != float64(users) {
		t.Errorf("iterations = %v, want each of %d users' one", got, users)
	}
	if got := num(m, "exchanges"); got != float64(users*len(exchanges)) {
		t.Errorf("exchanges = %v, want %d users × %d", got, users, len(exchanges))
	}
	for _, ex := range exchanges {
		if got := num(m, ex+"_count"); got != float64(users) {
			t.Errorf("%s_count = %v, want %d", ex, got, users)
		}
	}
	if n := app.logins.Load(); n != int64(users) {
		t.Errorf("the server took %d logins, want %d", n, users)
	}
	if n := app.errors.Load(); n != 0 {
		t.Errorf("the server answered %d errors: %q", n, app.bad)
	}
}

// updateHAR rewrites testdata/har/chromium.har with a new recording:
// go test ./cmd/wsplan -run TestImportHARChromium -update-har
var updateHAR = flag.Bool("update-har", false, "rewrite testdata/har/chromium.har with a new Chromium recording")

// harExchanges are the recorded conversation's exchanges, as the import
// names them (each request's op).
var harExchanges = []string{"login", "subscribe", "echo", "echo_2"}

// TestImportHARChromium records the app's page in the Chromium the
// browser tests use (the DevTools protocol over its pipe: see
// import_chromium_test.go), imports the HAR, and runs the plan against
// the app: 3 users, every exchange matched, the server's session captured
// and sent back, the token and the cookie taken from the environment.
func TestImportHARChromium(t *testing.T) {
	testenv.Slow(t, "3 s: a HAR recorded by Chromium")
	bin := chromiumBinary(t)
	rec := newHARApp()
	srv := rec.start(t)
	har := recordHAR(t, bin, srv.URL+"/")
	if rec.logins.Load() != 1 || rec.echoes.Load() != 2 || rec.errors.Load() != 0 || rec.refused.Load() != 0 {
		t.Fatalf("the recorded page did not run its conversation: logins %d, echoes %d, errors %d %q, refused %d",
			rec.logins.Load(), rec.echoes.Load(), rec.errors.Load(), rec.bad, rec.refused.Load())
	}
	file := filepath.Join(t.TempDir(), "chromium.har")
	if err := os.WriteFile(file, har, 0o644); err != nil {
		t.Fatal(err)
	}
	if *updateHAR {
		if err := os.WriteFile(filepath.Join("testdata", "har", "chromium.har"), har, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	app := newHARApp()
	run := app.start(t)
	plan, res := importAndRun(t, app, run.URL, file, 3)
	for _, want := range []string{`"id":{{.seq}}`, "correlate: $.id", "capture: {session: $.session}", "{{json .session}}"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan has no %q:\n%s", want, plan)
		}
	}
	// The page waits 120 ms, 80 ms and 50 ms before its next requests: a
	// browser's timer fires late, never early (on a loaded host, late by
	// tens of ms), and the import rounds to 10 ms. TestImportHAR checks
	// the exact pauses of the committed recordings.
	// A browser slow to answer the welcome adds a pause before the login:
	// the page's three are the last.
	thinks := regexp.MustCompile(`think: (\d+)ms`).FindAllStringSubmatch(plan, -1)
	if len(thinks) < 3 {
		t.Errorf("%d pauses, want the page's 3:\n%s", len(thinks), plan)
	} else {
		for i, wait := range []int{120, 80, 50} {
			if ms, _ := strconv.Atoi(thinks[len(thinks)-3+i][1]); ms < wait-10 || ms > wait+1000 {
				t.Errorf("pause %d is %d ms, want the page's %d ms or a little later:\n%s", i+1, ms, wait, plan)
			}
		}
	}
	everyExchangeMatched(t, app, res, 3, harExchanges)
	t.Logf("recorded HAR:\n%s\nplan:\n%s", har, plan)
}

// TestImportHAR imports the committed recordings — Chromium's, and one in
// Firefox's layout (http:// URL, no _resourceType, local-offset times,
// string ids, a ping) — and runs each plan against the app.
func TestImportHAR(t *testing.T) {
	testenv.Slow(t, "3 s: HAR files imported and their plans run")
	for _, c := range []struct {
		file string
		want []string // in the plan
	}{
		{"chromium.har", []string{`"id":{{.seq}}`, "correlate: $.id", "{{json .session}}", "think: 120ms"}},
		{"firefox.har", []string{`"id":"r{{.seq}}"`, "correlate: $.id", "{{json .session}}", "think: 1.5s"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			app := newHARApp()
			srv := app.start(t)
			plan, res := importAndRun(t, app, srv.URL, filepath.Join("testdata", "har", c.file), 4)
			for _, w := range c.want {
				if !strings.Contains(plan, w) {
					t.Errorf("the plan has no %q:\n%s", w, plan)
				}
			}
			everyExchangeMatched(t, app, res, 4, harExchanges)
		})
	}
}

// TestImportHARRefused: the same plan with a wrong token in the
// environment is refused at the upgrade (exit 1), and a HAR that cannot be
// imported exits 2 naming why.
func TestImportHARRefused(t *testing.T) {
	app := newHARApp()
	srv := app.start(t)
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	if code, _, stderr := runMain("import", "har", filepath.Join("testdata", "har", "chromium.har"), "-o", plan, "--url", wsURL); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	t.Setenv("WSPLAN_HAR_TOKEN", "not-the-token")
	t.Setenv("WSPLAN_HAR_COOKIE", "session="+harCookie)
	r := startWsplan(t, dir, "run", "plan.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
	if code := r.wait(t, time.Minute); code != 1 {
		t.Fatalf("run with a wrong token: exit %d, want 1\n%s", code, r.stderrText())
	}
	if app.refused.Load() == 0 || app.logins.Load() != 0 {
		t.Errorf("refused %d, logins %d: want the upgrade refused", app.refused.Load(), app.logins.Load())
	}
	if r := readJSON(t, filepath.Join(dir, "r.json")).Results[0]; r.OK || !strings.Contains(r.Error, "403 Forbidden") {
		t.Errorf("result ok %v, error %q: want the server's 403", r.OK, r.Error)
	}

	for _, c := range []struct {
		name, har, want string
	}{
		{"not JSON", "GET / HTTP/1.1", "not a HAR file"},
		{"no log", `{"entries": []}`, "no log object"},
		{"no WebSocket", `{"log": {"entries": [{"request": {"url": "http://x/"}, "response": {"status": 200}}]}}`, "none of the 1 entries is a WebSocket"},
		{"bad message", `{"log": {"entries": [{"request": {"url": "http://x/"}}, {"_resourceType": "websocket", "request": {"url": "ws://x/"}, "_webSocketMessages": [{"type": "sent", "time": 1, "opcode": 1, "data": "x"}]}]}}`, `entries[1]._webSocketMessages[0].type: want send or receive, got "sent"`},
		{"Firefox without frames", `{"log": {"creator": {"name": "Firefox"}, "entries": [{"request": {"url": "https://x/ws", "headers": [{"name": "Upgrade", "value": "websocket"}]}, "response": {"status": 101}}]}}`, "entries[0] (wss://x/ws): no text messages recorded (Firefox's own HAR export writes none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, "in.har")
			if err := os.WriteFile(file, []byte(c.har), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, stderr := runMain("import", "har", file)
			if code != 2 || out != "" || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q: want 2, nothing, %q", code, out, stderr, c.want)
			}
		})
	}
}
