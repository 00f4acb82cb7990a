package har

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/plan"
)

const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"

// TestGenerate: what Generate infers from a recording (ids, captures,
// secrets, pauses, names) is in the plan, what it must not write is not,
// and every plan loads as wsplan validate loads it.
func TestGenerate(t *testing.T) {
	for _, c := range generateCases {
		t.Run(c.name, func(t *testing.T) { c.check(t) })
	}
}

// generateCase is a recording, what Generate is asked, and what its plan
// must and must not hold.
type generateCase struct {
	name     string
	entries  []map[string]any
	opts     Options
	want     []string // in the plan
	not      []string // not in the plan
	env      []string
	warnings []string // each warning contains one, in order
}

var generateCases = []generateCase{
	{
		name: "ids, captures and secrets",
		entries: []map[string]any{entry("ws://app.example:8080/ws?token=tok-abcdef123&room=lobby", 101,
			[]string{"Cookie", "session=cookie-secret-987654; theme=dark", "Origin", "http://app.example:8080", "User-Agent", "x", "Sec-WebSocket-Protocol", "chat.v2, chat"},
			recv(0.01, `{"type":"welcome"}`),
			sent(0.02, `{"op":"login","id":1,"token":"tok-abcdef123"}`),
			recv(0.03, `{"op":"login_ok","id":1,"session":"s-77aa88bb99"}`),
			sent(0.155, `{"op":"subscribe","id":2,"room":"lobby","session":"s-77aa88bb99"}`),
			recv(0.16, `{"op":"subscribed","id":2,"room":"lobby"}`),
			sent(0.2, `{"op":"again","id":3,"session":"s-77aa88bb99"}`),
			recv(0.21, `{"op":"done","id":3}`))},
		want: []string{
			`url: 'ws://app.example:8080/ws?token=${env:WSPLAN_HAR_TOKEN}&room=lobby'`,
			`headers: {Cookie: '${env:WSPLAN_HAR_COOKIE}'}`,
			`origin: http://app.example:8080`, `subprotocols: [chat.v2, chat]`, "name: app\n",
			"defaults:\n  allow_remote: true # app.example is not loopback",
			`- expect: {json: {$.type: welcome}}`,
			`- send: '{"op":"login","id":{{.seq}},"token":"${env:WSPLAN_HAR_TOKEN}"}'`,
			`- expect: {json: {$.op: login_ok}, correlate: $.id, capture: {session: $.session}, as: login}`,
			`- think: 130ms`,
			`- send: '{"op":"subscribe","id":{{.seq}},"room":"lobby","session":{{json .session}}}'`,
			`- send: '{"op":"again","id":{{.seq}},"session":{{json .session}}}'`,
			`- expect: {json: {$.op: done}, correlate: $.id, as: again}`,
		},
		not: []string{"tok-abcdef123", "cookie-secret-987654", "s-77aa88bb99", "User-Agent", "theme=dark"},
		env: []string{"WSPLAN_HAR_TOKEN", "WSPLAN_HAR_COOKIE"},
	},
	{
		name: "string ids",
		entries: []map[string]any{entry("wss://h/ws", 101, nil,
			sent(0, `{"reqId":"req-7","op":"a"}`), recv(0, `{"reqId":"req-7"}`),
			sent(0, `{"reqId":"abc","op":"b"}`), recv(0, `{"reqId":"abc"}`))},
		want: []string{`- send: '{"reqId":"req-{{.seq}}","op":"a"}'`, `correlate: $.reqId, as: a}`,
			`- send: '{"reqId":"abc","op":"b"}'`, `correlate: $.reqId, as: b}`},
	},
	{
		name: "no id: a reply without it, or with another value, or a key that is no id",
		entries: []map[string]any{entry("ws://h/ws", 101, nil,
			sent(0, `{"op":"a","id":1}`), recv(0, `{"op":"a_ok"}`),
			sent(0, `{"op":"b","id":2}`), recv(0, `{"op":"b_ok","id":3}`),
			sent(0, `{"op":"c","user":5}`), recv(0, `{"op":"c_ok","user":5}`))},
		want: []string{`'{"op":"a","id":1}'`, `{json: {$.op: a_ok}, as: a}`, `'{"op":"b","id":2}'`, `{json: {$.op: b_ok}, as: b}`,
			`'{"op":"c","user":5}'`, `{json: {$.op: c_ok}, as: c}`},
		not: []string{"correlate: $", `":{{.seq}}`},
	},
	{
		name: "a value the browser sent first is not captured",
		entries: []map[string]any{entry("ws://h/ws", 101, nil,
			sent(0, `{"op":"hello","nick":"browser-made-123"}`), recv(0, `{"op":"hi","nick":"browser-made-123"}`),
			sent(0, `{"op":"again","nick":"browser-made-123"}`))},
		want: []string{`'{"op":"again","nick":"browser-made-123"}'`},
		not:  []string{"capture: {", "{{json"},
	},
	{
		name: "escapes: {{ and ${ in JSON and in text",
		entries: []map[string]any{entry("ws://h/ws", 101, nil,
			sent(0, `{"t":"{{x}} ${y} {{{z"}`), sent(0, "plain ${z}"), sent(0, "plain {{z}}"), recv(0, "{{not json"))},
		want:     []string{`'{"t":"{\u007bx}} $${y} {\u007b{z"}'`, `'plain $${z}'`, "- expect: {as: reply}"},
		not:      []string{"plain {{z}}"},
		warnings: []string{"sent message 2 left out: it is not JSON and holds {{"},
	},
	{
		name: "secrets in headers, query and messages",
		entries: []map[string]any{entry("ws://h/ws?api_key=key-123456789&x=1", 101,
			[]string{"Authorization", "Bearer bearer-secret-abc", "X-Api-Key", "xkey-1234567", "X-Trace", "t1"},
			sent(0, `{"op":"auth","password":"hunter2","jwt_in_data":{"v":"`+jwt+`"},"again":"key-123456789"}`),
			recv(0, `{"op":"ok","session":"bearer-secret-abc"}`))},
		want: []string{"Authorization: 'Bearer ${env:WSPLAN_HAR_AUTHORIZATION}'", "X-Api-Key: '${env:WSPLAN_HAR_X_API_KEY}'", "X-Trace: t1",
			"api_key=${env:WSPLAN_HAR_API_KEY}&x=1",
			`"password":"${env:WSPLAN_HAR_PASSWORD}","jwt_in_data":{"v":"${env:WSPLAN_HAR_V}"},"again":"${env:WSPLAN_HAR_API_KEY}"`},
		not: []string{"bearer-secret-abc", "xkey-1234567", "key-123456789", "hunter2", jwt},
		env: []string{"WSPLAN_HAR_PASSWORD", "WSPLAN_HAR_V", "WSPLAN_HAR_API_KEY", "WSPLAN_HAR_AUTHORIZATION", "WSPLAN_HAR_X_API_KEY"},
	},
	{
		name: "pauses: rounded, short ones left out, long ones cut",
		entries: []map[string]any{entry("ws://h/ws", 101, nil,
			sent(0, "a"), sent(0.004, "b"), sent(0.127, "c"), recv(0.2, "r"), sent(30.2, "d"))},
		want: []string{"- send: 'a'\n        - send: 'b'\n        - think: 120ms\n        - send: 'c'", "- think: 10s # recorded 30s, cut to 10s\n        - send: 'd'"},
	},
	{
		name: "exchange names: the phase's own metrics, repeats, none",
		entries: []map[string]any{entry("ws://h/ws", 101, nil,
			sent(0, `{"op":"connect"}`), recv(0, `{"op":"connected"}`),
			sent(0, `{"op":"echo"}`), recv(0, `{"op":"echoed"}`), sent(0, `{"op":"echo"}`), recv(0, `{"op":"echoed"}`),
			sent(0, `[1]`), recv(0, `[2]`), sent(0, `{"op":"users"}`), recv(0, `{}`))},
		want: []string{"as: connect_exchange}", "as: echo}", "as: echo_2}", "- expect: {as: reply}", "as: users_exchange}"},
	},
	{
		name: "two WebSockets to the server, one to another, a refused one, one without messages",
		entries: []map[string]any{
			entry("ws://h/ws", 101, nil, sent(0, "one")),
			entry("ws://other/ws", 101, nil, sent(0, "other")),
			entry("ws://h/ws", 403, nil, sent(0, "refused")),
			entry("ws://h/ws", 101, nil),
			entry("ws://h/ws?v=2", 101, nil, sent(0, "two")),
		},
		opts: Options{Users: 5, Name: "mine"},
		want: []string{"name: mine\n", "# entries[0]: ws://h/ws, 1 sent", "# entries[4]: ws://h/ws?…, 1 sent", "users: 5", "- send: 'one'", "- send: 'two'"},
		not:  []string{"other", "refused"},
		warnings: []string{"entries[1] (ws://other/ws): left out: a plan's phases all run against one server, ws://h/ws (import it on its own with --match)",
			"entries[2] (ws://h/ws): the upgrade was answered 403",
			"entries[3] (ws://h/ws): no text messages recorded",
			"entries[4]: its query or headers differ from entries[0]'s"},
	},
	{
		name:    "match and url",
		entries: []map[string]any{entry("ws://h/ws?a=1", 101, nil, sent(0, "one")), entry("ws://other/x?b=2", 101, nil, sent(0, "other"))},
		opts:    Options{Match: "other", URL: "wss://staging.example/x?c=3"},
		want:    []string{"url: 'wss://staging.example/x?c=3&b=2'", "name: other\n", "- send: 'other'"},
		not:     []string{"- send: 'one'"},
	},
}

// check generates c's plan and checks it, then loads it as wsplan
// validate would (its secrets set in the environment).
func (c *generateCase) check(t *testing.T) {
	a, err := Parse(harOf(t, c.entries...))
	if err != nil {
		t.Fatal(err)
	}
	o := c.opts
	o.Source = "dir/rec.har"
	res, err := Generate(a, o)
	if err != nil {
		t.Fatal(err)
	}
	p := string(res.Plan)
	for _, w := range c.want {
		if !strings.Contains(p, w) {
			t.Errorf("the plan has no %q:\n%s", w, p)
		}
	}
	for _, w := range c.not {
		if strings.Contains(p, w) {
			t.Errorf("the plan has %q:\n%s", w, p)
		}
	}
	if strings.Join(res.Env, ",") != strings.Join(c.env, ",") {
		t.Errorf("env %q, want %q", res.Env, c.env)
	}
	if len(res.Warnings) != len(c.warnings) {
		t.Errorf("warnings %q, want %d", res.Warnings, len(c.warnings))
	}
	for i, w := range c.warnings {
		if i < len(res.Warnings) && !strings.Contains(res.Warnings[i], w) {
			t.Errorf("warning %q, want %q", res.Warnings[i], w)
		}
	}
	for _, v := range res.Env {
		t.Setenv(v, "value-of-"+v)
	}
	if _, err := plan.LoadBytes("rec.yaml", res.Plan, plan.LoadOptions{}); err != nil {
		t.Errorf("the plan does not load: %v\n%s", err, p)
	}
}

// TestGenerateManyExchanges: a phase names at most MaxExchanges replies;
// the others are expects all the same, and a warning counts them.
func TestGenerateManyExchanges(t *testing.T) {
	var msgs []map[string]any
	for i := range MaxExchanges + 2 {
		msgs = append(msgs, sent(float64(i), `{"op":"get","id":`+strconv.Itoa(i+1)+`}`), recv(float64(i), `{"op":"got","id":`+strconv.Itoa(i+1)+`}`))
	}
	c := generateCase{
		entries:  []map[string]any{entry("ws://127.0.0.1/ws", 101, nil, msgs...)},
		want:     []string{"as: get}", "as: get_2}", "as: get_100}", "- expect: {json: {$.op: got}, correlate: $.id}\n"},
		not:      []string{"as: get_101}"},
		warnings: []string{"entries[0]: 2 replies are not named exchanges (a phase names at most 100)"},
	}
	c.check(t)
}

// TestGenerateRefuses: the recordings Generate cannot make a plan of.
func TestGenerateRefuses(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []map[string]any
		opts    Options
		want    string
	}{
		{"no WebSocket", []map[string]any{entry("http://h/", 200, nil)}, Options{},
			"no WebSocket to import: none of the 1 entries is a WebSocket (record the page with its WebSocket open, then save the HAR)"},
		{"no messages", []map[string]any{entry("https://h/ws", 101, []string{"Upgrade", "websocket"})}, Options{},
			"no WebSocket to import: entries[0] (wss://h/ws): no text messages recorded (Firefox's own HAR export writes none of a WebSocket's messages: record with Chromium's DevTools, or a tool that keeps them as _webSocketMessages)"},
		{"binary only", []map[string]any{entry("ws://h/ws", 101, nil, map[string]any{"type": "send", "opcode": 2, "data": "AA=="})}, Options{},
			"no WebSocket to import: entries[0] (ws://h/ws): no text messages recorded"},
		{"refused", []map[string]any{entry("ws://h/ws", 401, nil, sent(0, "x"))}, Options{},
			"no WebSocket to import: entries[0] (ws://h/ws): the upgrade was answered 401"},
		{"match", []map[string]any{entry("ws://h/ws", 101, nil, sent(0, "x"))}, Options{Match: "nope"},
			`no WebSocket to import: none of the 1 WebSockets' URLs contains "nope"`},
		{"url", []map[string]any{entry("ws://h/ws", 101, nil, sent(0, "x"))}, Options{URL: "http://h/"},
			`url "http://h/": want a ws:// or wss:// URL`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := Parse(harOf(t, c.entries...))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Generate(a, c.opts)
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error %v, want %s", err, c.want)
			}
			if c.name != "url" && !errors.Is(err, ErrNothing) {
				t.Errorf("%v is not ErrNothing", err)
			}
		})
	}
}
