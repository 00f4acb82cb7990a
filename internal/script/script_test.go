package script

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/units"
)

func testEnv() *Env {
	return &Env{Columns: []string{"user", "pass"}, Captures: map[string]int{"token": 0}, Set: map[string]bool{"token": true}}
}

func testVars() *Vars {
	return &Vars{Conn: 7, Seq: 42, Iter: 3, NowNs: 1_700_000_000_123_456_789,
		Row: [][]byte{[]byte("alice"), []byte(`pa"ss`)}, Captures: [][]byte{[]byte("tok123")}, Rand: rand.NewChaCha8([32]byte{1})}
}

func TestTemplate(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{"id":{{.seq}},"conn":{{.conn}},"i":{{.iter}}}`, `{"id":42,"conn":7,"i":3}`},
		{`{{.row.user}}:{{.token}}`, `alice:tok123`},
		{`{"p":{{json .row.pass}},"u":{{json .row.user}}}`, `{"p":"pa\"ss","u":"alice"}`},
		{`{{.now}}`, `1700000000123`},
		{`{{.now_ns}}`, `1700000000123456789`},
		{`plain`, `plain`},
		{``, ``},
	} {
		tm, err := ParseTemplate(tc.src, testEnv())
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		if got, ok := tm.Append(nil, testVars()); !ok || string(got) != tc.want {
			t.Errorf("%q rendered %q, want %q", tc.src, got, tc.want)
		}
	}
	tm, _ := ParseTemplate(`{{randInt 5 9}} {{randString 8}}`, testEnv())
	for range 100 {
		var n, s string
		out, _ := tm.Append(nil, testVars())
		parts := strings.Fields(string(out))
		n, s = parts[0], parts[1]
		if n < "5" || n > "9" || len(n) != 1 || len(s) != 8 {
			t.Fatalf("randInt/randString rendered %q %q", n, s)
		}
	}
}

func TestTemplateErrors(t *testing.T) {
	env := &Env{Columns: []string{"user"}, Captures: map[string]int{"token": 0}, Set: map[string]bool{}}
	for _, tc := range []struct{ src, want string }{
		{`{{.user}}`, `unknown field .user: want one of .conn, .iter, .now, .now_ns, .seq, .token or .row.COLUMN`},
		{`{{.token}}`, `.token is used before any step captures it`},
		{`{{.row.name}}`, `.row.name: no such column (columns: user)`},
		{`{{if .conn}}x{{end}}`, `is not supported`},
		{`{{printf "%d" .conn}}`, `function "printf" not defined`},
		{`{{randInt 9 5}}`, `randInt takes two integers, min <= max`},
		{`{{.conn`, `unclosed action`},
	} {
		_, err := ParseTemplate(tc.src, env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.src, err, tc.want)
		}
	}
}

func TestTemplateAllocs(t *testing.T) {
	tm, err := ParseTemplate(`{"id":{{.seq}},"op":"echo","user":{{json .row.user}},"tok":"{{.token}}","n":{{randInt 1 1000}}}`, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	v := testVars()
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(1000, func() { buf, _ = tm.Append(buf[:0], v); v.Seq++ }); n != 0 {
		t.Fatalf("Append allocates %.1f times per message, want 0", n)
	}
}

func TestPath(t *testing.T) {
	msg := []byte(`{"id":5,"op":"ok","data":{"token":"a\"b","list":[1,{"x":"y"}]},"a.b":true}`)
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{"$.id", "5", true}, {"id", "5", true}, {"$.op", "ok", true},
		{"$.data.token", `a"b`, true}, {"$.data.list[1].x", "y", true},
		{`$["a.b"]`, "true", true}, {"$.nope", "", false},
	} {
		p, err := ParsePath(tc.path)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		got, ok := p.Text(msg, nil)
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("%s: got %q %v, want %q %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
	for _, bad := range []string{"$", "$.", "$.a[", "$.a[x]", "$.a..b"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	p, _ := ParsePath("$.op")
	if n := testing.AllocsPerRun(1000, func() { p.Text(msg, nil) }); n != 0 {
		t.Errorf("Path.Text allocates %.1f times, want 0", n)
	}
}

func TestMatcher(t *testing.T) {
	env := testEnv()
	m, err := ParseMatch(&Match{JSON: map[string]string{"$.op": "reply", "$.id": "{{.seq}}"}}, env)
	if err != nil {
		t.Fatal(err)
	}
	var s Scratch
	v := testVars()
	for _, tc := range []struct {
		msg           string
		select_, full bool
	}{
		{`{"op":"reply","id":42}`, true, true},
		{`{"op":"reply","id":43}`, true, false},  // a reply to another request: a mismatch
		{`{"op":"event","id":42}`, false, false}, // not a reply at all
		{`not json`, false, false},
	} {
		if got := m.Select(&Msg{Body: []byte(tc.msg)}, &s); got != tc.select_ {
			t.Errorf("Select(%s) = %v, want %v", tc.msg, got, tc.select_)
		}
		if got := m.Matches(&Msg{Body: []byte(tc.msg)}, v, &s); got != tc.full {
			t.Errorf("Matches(%s) = %v, want %v", tc.msg, got, tc.full)
		}
	}
	if !m.Templated() {
		t.Error("Templated() = false, want true")
	}
	msg := &Msg{Body: []byte(`{"op":"reply","id":42}`)}
	if n := testing.AllocsPerRun(1000, func() { m.Matches(msg, v, &s) }); n != 0 {
		t.Errorf("Matches allocates %.1f times, want 0", n)
	}
	re, _ := ParseMatch(&Match{Regex: `^2\d*$`, Prefix: "2"}, env)
	if !re.Select(&Msg{Body: []byte("2")}, &s) || re.Select(&Msg{Body: []byte("42")}, &s) {
		t.Error("regex/prefix matcher wrong")
	}
	ex, err := ParseMatch(&Match{Expr: `msg.type == "next" && len(msg.payload.data) > 0`}, env)
	if err != nil {
		t.Fatal(err)
	}
	if !ex.Select(&Msg{Body: []byte(`{"type":"next","payload":{"data":{"a":1}}}`)}, &s) || ex.Select(&Msg{Body: []byte(`{"type":"next","payload":{"data":{}}}`)}, &s) {
		t.Error("expr matcher wrong")
	}
	for _, bad := range []Match{{Regex: "("}, {Expr: "msg.a +"}, {JSON: map[string]string{"$.a": "{{randInt 1 2}}"}}, {JSON: map[string]string{"$..a": "1"}}} {
		if _, err := ParseMatch(&bad, env); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}

func load(t *testing.T, doc string) []Step {
	t.Helper()
	var v struct {
		Steps []Step `yaml:"steps"`
	}
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	return v.Steps
}

func TestCompile(t *testing.T) {
	steps := load(t, `
steps:
  - send: '{"op":"login","user":{{json .row.user}}}'
  - expect: {json: {$.op: login_ok}, capture: {token: $.token}, as: login}
  - loop:
      count: 100
      inflight: 8
      steps:
        - send: '{"id":{{.seq}},"op":"echo","token":"{{.token}}"}'
        - expect: {correlate: $.id, as: echo}
  - think: {uniform: [10ms, 20ms]}
  - close: true
`)
	p, errs := Compile(Source{Steps: steps, Columns: []string{"user", "pass"}, Timeout: time.Second})
	if errs != nil {
		t.Fatal(errs)
	}
	ops := ""
	for _, in := range p.Instrs {
		ops += string("?SETLNC"[in.Op])
	}
	if ops != "SELSENTC" {
		t.Errorf("ops %q, want SELSENTC", ops)
	}
	if got := strings.Join(p.Exchanges, ","); got != "login,echo" {
		t.Errorf("exchanges %q", got)
	}
	echo := p.Instrs[4]
	if echo.Window != 8 || echo.Correlate == nil || echo.Send != 3 || echo.Exchange != 1 {
		t.Errorf("echo expect: %+v", echo)
	}
	if loop := p.Instrs[2]; loop.Pair != 6 || p.Instrs[5].Pair != 2 || loop.Inflight != 8 {
		t.Errorf("loop pairs: %d %d", loop.Pair, p.Instrs[5].Pair)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`steps: [{send: '{{.nope}}'}]`, `steps[0].send: template "{{.nope}}": unknown field .nope`},
		{`steps: [{send: '{{.token}}'}, {expect: {capture: {token: $.t}}}]`, `steps[0].send: template "{{.token}}": .token is used before any step captures it`},
		{`steps: [{send: '{"x":1}'}, {expect: {correlate: $.id}}]`, `steps[1].expect.correlate: steps[0].send's template never writes $.id`},
		{`steps: [{send: 'hello'}, {expect: {correlate: $.id}}]`, `steps[1].expect.correlate: steps[0].send's message is not JSON`},
		{`steps: [{expect: {correlate: $.id}}]`, `steps[0].expect.correlate: needs a send before it`},
		{`steps: [{expect: {as: a}}, {expect: {as: a}}]`, `steps[1].expect.as: exchange "a" is named twice (also steps[0].expect)`},
		{`steps: [{expect: {regex: "("}}]`, `steps[0].expect: regex "(": error parsing regexp`},
		{`steps: [{expect: {json: {"$..x": 1}}}]`, `steps[0].expect: json path "$..x": empty key`},
		{`steps: [{loop: {count: 2, inflight: 4, steps: [{send: x}, {think: 1ms}]}}]`, `steps[0].loop.inflight: with inflight > 1`},
		{`steps: [{loop: {steps: [{send: x}]}}]`, `steps[0].loop: needs count or duration`},
		{`steps: [{}]`, `steps[0]: empty step`},
		{`steps: [{close: {code: 1005}}]`, `steps[0].close.code: 1005 is reserved`},
		{`steps: [{close: {code: 999}}]`, `steps[0].close.code: must be >= 1000, got 999`},
		{`steps: [{close: {code: 5000}}]`, `steps[0].close.code: must be <= 4999, got 5000`},
		{`steps: [{expect: {as: Login}}]`, `steps[0].expect.as: an exchange's name is lower-case`},
	} {
		_, errs := Compile(Source{Steps: load(t, tc.doc), Timeout: time.Second})
		found := false
		for _, e := range errs {
			found = found || strings.Contains(e.Error(), tc.want)
		}
		if !found {
			t.Errorf("%s: got %v, want an error containing %q", tc.doc, errs, tc.want)
		}
	}
}

// TestShortForms: a step with a short form decodes it and its mapping
// (keys from its declaration; an unknown key is an error listing them)
// through yaml.v3 alone, as it does through the plan loader.
func TestShortForms(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want Step // zero: an error containing err
		err  string
	}{
		{`send: hi`, Step{Send: &Send{Text: "hi"}}, ""},
		{`send: {binary: b}`, Step{Send: &Send{Binary: "b"}}, ""},
		{`think: 5ms`, Step{Think: &Think{Fixed: units.Duration(5 * time.Millisecond)}}, ""},
		{`think: {exponential: 1s}`, Step{Think: &Think{Exponential: units.Duration(time.Second)}}, ""},
		{`close: true`, Step{Close: &Close{}}, ""},
		{`close: {code: 4000}`, Step{Close: &Close{Code: 4000}}, ""},
		{`close: false`, Step{}, `want true or {code: N}, got "false"`},
		{`close: {cod: 1000}`, Step{}, `unknown key "cod": want code`},
		{`think: {fixd: 1s}`, Step{}, `unknown key "fixd": want fixed, `},
		{`think: [1s]`, Step{}, `want a duration or a mapping of fixed, `},
		{`think: soon`, Step{}, `soon`},
		{`send: {text: a, bin: b}`, Step{}, `unknown key "bin": want text, binary`},
	} {
		var got Step
		err := yaml.Unmarshal([]byte(tc.doc), &got)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v, want an error containing %q", tc.doc, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.doc, err)
		case tc.err == "" && !reflect.DeepEqual(got, tc.want):
			t.Errorf("%s: got %+v, want %+v", tc.doc, got, tc.want)
		}
	}
}

func TestThinkDraw(t *testing.T) {
	r := rand.NewChaCha8([32]byte{})
	var sum time.Duration
	d := ThinkDist{Kind: ThinkExponential, A: 10 * time.Millisecond}
	for range 20000 {
		sum += d.Draw(r)
	}
	if mean := sum / 20000; mean < 9*time.Millisecond || mean > 11*time.Millisecond {
		t.Errorf("exponential mean %v, want ≈ 10ms", mean)
	}
	u := ThinkDist{Kind: ThinkUniform, A: time.Millisecond, B: 2 * time.Millisecond}
	for range 1000 {
		if v := u.Draw(r); v < time.Millisecond || v > 2*time.Millisecond {
			t.Fatalf("uniform drew %v", v)
		}
	}
	// A jitter around a fixed pause: uniform in [fixed - jitter, fixed + jitter].
	p, errs := Compile(Source{Steps: load(t, `steps: [{think: {fixed: 100ms, jitter: 20ms}}]`), Timeout: time.Second})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	lo, hi := time.Hour, time.Duration(0)
	for range 1000 {
		v := p.Instrs[0].Think.Draw(r)
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo < 80*time.Millisecond || hi > 120*time.Millisecond || lo > 85*time.Millisecond || hi < 115*time.Millisecond {
		t.Errorf("fixed 100ms, jitter 20ms drew from %v to %v, want [80ms, 120ms] spread over", lo, hi)
	}
}

func TestRows(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "users.csv")
	if err := os.WriteFile(csvPath, []byte("user,password\nu0,p0\nu1,p1\nu2,p2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadRows(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Columns, ",") != "user,password" || r.Total != 3 || r.Values[2][1] != "p2" {
		t.Fatalf("csv rows %+v", r)
	}
	jl := filepath.Join(dir, "users.jsonl")
	if err := os.WriteFile(jl, []byte(`{"user":"a","n":1}`+"\n"+`{"n":2,"user":"b"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r2, err := ReadRows(jl)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r2.Columns, ",") != "user,n" || r2.Values[1][0] != "b" || r2.Values[1][1] != "2" {
		t.Fatalf("jsonl rows %+v", r2)
	}
	part := r.Part(OrderUnique, 1, 2)
	if part.First != 1 || len(part.Values) != 2 || part.Row(2)[0] != "u2" || part.Row(0) != nil {
		t.Fatalf("part %+v", part)
	}
	seen := map[int]bool{}
	for u := range int64(300) {
		seen[Index(OrderRandom, u, 3, 1)] = true
		if i := Index(OrderSequential, u, 3, 1); i != int(u%3) {
			t.Fatalf("sequential user %d took row %d", u, i)
		}
	}
	if len(seen) != 3 {
		t.Errorf("random order used rows %v", seen)
	}
}

// TestCompileAnswers: a verb step waits for its answer as the server's
// protocol answers; without a protocol, a step that asks for its answer
// is taken as answered (checked again once the protocol is known).
func TestCompileAnswers(t *testing.T) {
	onlyPublish := func(verb string, _, _ bool, _ int) bool { return verb == VerbPublish }
	whenAsked := func(_ string, _, asks bool, _ int) bool { return asks }
	for _, tc := range []struct {
		name  string
		doc   string
		rule  AnswerRule
		want  string // the error; "" = none
		waits int    // expects compiled
	}{
		{"no protocol, publish with as", `steps: [{publish: {topic: t, as: pub}}]`, nil, "", 1},
		{"no protocol, plain publish", `steps: [{publish: {topic: t}}]`, nil, "", 0},
		{"default, publish qos 0 with as", `steps: [{publish: {topic: t, as: pub}}]`, DefaultAnswers, "steps[0].publish: the protocol does not answer this publish", 0},
		{"default, publish qos 1", `steps: [{publish: {topic: t, qos: 1}}]`, DefaultAnswers, "", 1},
		{"default, unsubscribe", `steps: [{unsubscribe: {topic: t}}]`, DefaultAnswers, "", 1},
		{"own rule, publish", `steps: [{publish: {topic: t}}]`, onlyPublish, "", 1},
		{"own rule, unsubscribe", `steps: [{unsubscribe: {topic: t}}]`, onlyPublish, "", 0},
		{"own rule, unsubscribe with as", `steps: [{unsubscribe: {topic: t, as: u}}]`, onlyPublish, "steps[0].unsubscribe: the protocol does not answer this unsubscribe", 0},
		{"asked, subscribe", `steps: [{subscribe: {topic: t}}]`, whenAsked, "", 0},
		{"asked, subscribe with as", `steps: [{subscribe: {topic: t, as: s}}]`, whenAsked, "", 1},
		{"own rule, pipelined publish", `steps: [{loop: {count: 2, inflight: 4, steps: [{publish: {topic: t}}]}}]`, onlyPublish, "", 1},
		{"own rule, pipelined notify", `steps: [{loop: {count: 2, inflight: 4, steps: [{notify: {method: m}}]}}]`, onlyPublish, "steps[0].loop.inflight: with inflight > 1", 0},
	} {
		p, errs := Compile(Source{Steps: load(t, tc.doc), Timeout: time.Second, Answers: tc.rule})
		switch {
		case tc.want == "" && errs != nil:
			t.Errorf("%s: %v", tc.name, errs)
		case tc.want != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.name, errs, tc.want)
		case tc.want == "":
			n := 0
			for _, in := range p.Instrs {
				if in.Op == OpExpect && in.ByID {
					n++
				}
			}
			if n != tc.waits {
				t.Errorf("%s: %d answers awaited, want %d", tc.name, n, tc.waits)
			}
		}
	}
}
