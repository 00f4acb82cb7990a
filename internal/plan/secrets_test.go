package plan

import (
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/secret"
)

func TestEnvSecrets(t *testing.T) {
	t.Setenv("WSPLAN_TEST_TOKEN", "s3cret-value-42")
	t.Setenv("WSPLAN_TEST_SHORT", "abc")
	src := `vars:
  token: ${env:WSPLAN_TEST_TOKEN}
  bearer: "Bearer ${token}"
  conns: 10
servers:
  - name: gws
    command: [./srv, "--auth=${env:WSPLAN_TEST_TOKEN}", "${bearer}"]
    addrs: [127.0.0.1:7000]
phases:
  - connect: {connections: ${conns}}
`
	p, err := LoadBytes("s.yaml", []byte(src), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Servers[0].Command; got[1] != "--auth=s3cret-value-42" || got[2] != "Bearer s3cret-value-42" {
		t.Errorf("command = %q: the secret must reach what it configures", got)
	}
	if got := p.Secrets.Values(); len(got) != 1 || got[0] != "s3cret-value-42" {
		t.Errorf("Secrets = %q", got)
	}
	if p.Vars["token"] != "***" || p.Vars["bearer"] != "Bearer ***" || p.Vars["conns"] != "10" {
		t.Errorf("Vars = %v: secrets must be redacted, the rest kept", p.Vars)
	}
	if got := p.Redact("x s3cret-value-42 y"); got != "x *** y" {
		t.Errorf("Redact = %q", got)
	}

	bad := []struct{ src, want string }{
		{"vars: {a: ${env:WSPLAN_TEST_UNSET_XYZ}}\nphases: [{connect: {connections: 1}}]\n", "s.yaml:1: vars.a: environment variable WSPLAN_TEST_UNSET_XYZ is not set"},
		{"vars: {a: ${env:WSPLAN_TEST_SHORT}}\nphases: [{connect: {connections: 1}}]\n", "shorter than 4 bytes"},
		{"vars:\n  a: \"${env:1X}\"\nphases: [{connect: {connections: 1}}]\n", "bad variable reference"},
	}
	for _, b := range bad {
		_, err := LoadBytes("s.yaml", []byte(b.src), LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: err = %v, want %q", b.src, err, b.want)
		}
		if err != nil && strings.Contains(err.Error(), "abc") {
			t.Errorf("an error shows the secret value: %v", err)
		}
	}
}

// TestLiteralSecrets: the credentials a plan writes itself are secrets
// too, and only those: a protocol's password, a credential header's value
// and its credential, a URL's credential query parameter, a graphql-ws
// init's credential members, and the same in a script phase's headers,
// query and sent JSON at any depth; not a username, an origin, another
// header, or a value a template renders at run time.
func TestLiteralSecrets(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("bob:basic-pass"))
	src := `defaults:
  allow_remote: true
  headers: {Authorization: "Bearer bearer-cred", X-Team: team-name, Cookie: "sid=cookie-value"}
metrics:
  remote_write: "http://127.0.0.1:9/write?access_token=push-token&db=metrics-db"
  headers: {Proxy-Authorization: "Basic ` + basic + `"}
servers:
  - name: a
    url: "ws://127.0.0.1:9/ws?token=query-token&room=room-name"
    origin: https://origin-name.example
    protocol: {name: mqtt, username: user-name, password: mqtt-pass}
  - name: b
    url: ws://127.0.0.1:9/graphql
    protocol: {name: graphql-ws, init: '{"authToken":"init-token","payload":{"headers":{"Authorization":"Bearer nested-cred"}},"room":"init-room"}'}
phases:
  - connect: {connections: 1}
  - script:
      users: 1
      headers: {Authorization: "Bearer phase-cred", X-Trace: trace-name, X-Api-Key: "key-{{.conn}}"}
      query: "room=phase-room&token=phase-token"
      steps:
        - send: '{"password":"send-pass","user":"send-user"}'
        - loop: {count: 2, steps: [{send: '{"token":"loop-token","id":"t-{{.seq}}"}'}, {send: '{"token":"t-{{.seq}}"}'}]}
`
	p, err := LoadBytes("s.yaml", []byte(src), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := p.Secrets.Values()
	for _, want := range []string{"bearer-cred", "sid=cookie-value", "push-token", "basic-pass", "query-token", "mqtt-pass", "init-token", "nested-cred",
		"phase-cred", "phase-token", "send-pass", "loop-token"} {
		if !slices.Contains(got, want) {
			t.Errorf("%q is not a secret (secrets %q)", want, got)
		}
	}
	for _, not := range []string{"team-name", "metrics-db", "room-name", "origin-name", "user-name", "init-room",
		"trace-name", "phase-room", "send-user", "{{"} {
		if slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, not) }) {
			t.Errorf("%q is taken for a secret (secrets %q)", not, got)
		}
	}
}

// TestSecretErrors: an error about a value that holds a secret names the
// key and what is wrong, and shows the secret in no form and no piece;
// the same mistake without a secret still shows its value.
func TestSecretErrors(t *testing.T) {
	const hard = `x.Q7"y.W3'z.L9\k.R5%j.H2 é✓m.F4`
	t.Setenv("WSPLAN_TEST_HARD", hard)
	t.Setenv("WSPLAN_TEST_INIT", `{"token":"s3cr3t-t0ken"`)
	// A template names the token it cannot parse: the secret's word.
	const word = "abcdefgh12345 xyz.uvw"
	t.Setenv("WSPLAN_TEST_WORD", word)
	script := "servers: [{name: gws}]\nphases:\n  - script:\n      users: 1\n"
	head := "servers:\n  - name: a\n    url: "
	tail := "\nphases: [{connect: {connections: 1}}]\n"
	for _, c := range []struct{ name, src, want string }{
		{"init breaks its JSON", head + "ws://127.0.0.1:9/\n    protocol: {name: graphql-ws, init: '{\"token\":\"${env:WSPLAN_TEST_HARD}\"}'}" + tail,
			"s.yaml:4: servers[0].protocol: graphql-ws: init: must be a JSON object (connection_init's payload): its JSON is broken at byte 16 of 46"},
		{"init from the environment", head + "ws://127.0.0.1:9/\n    protocol: {name: graphql-ws, init: '${env:WSPLAN_TEST_INIT}'}" + tail,
			"s.yaml:4: servers[0].protocol: graphql-ws: init: must be a JSON object (connection_init's payload): its JSON ends early"},
		{"url path", head + `"ws://127.0.0.1:9/p${env:WSPLAN_TEST_HARD}"` + tail,
			"s.yaml:3: servers[0].url: bad URL: invalid URL escape (not shown)"},
		{"url scheme", head + `"http://127.0.0.1:9/?token=${env:WSPLAN_TEST_HARD}"` + tail,
			"s.yaml:3: servers[0].url: want a ws:// or wss:// URL, got http:"},
		{"a number", "servers: [{name: gws}]\nphases: [{connect: {connections: ${env:WSPLAN_TEST_HARD}}}]\n",
			"s.yaml:2: phases[0].connect.connections: want an integer, got a value that holds a secret (not shown)"},
		{"a string in a number", "servers: [{name: gws}]\nphases: [{connect: {connections: \"n ${env:WSPLAN_TEST_HARD}\"}}]\n",
			"s.yaml:2: phases[0].connect.connections: want an integer"},
		{"a template's token", script + "      query: 'a={{ ${env:WSPLAN_TEST_WORD}'\n      steps: [{send: x}]\n",
			"s.yaml:5: phases[0].script.query: template (not shown): function (not shown) not defined"},
		{"a step's template", script + "      steps:\n        - send: '{{json ${env:WSPLAN_TEST_WORD}}}'\n",
			"s.yaml:6: phases[0].script.steps[0].send: template (not shown): function (not shown) not defined"},
		{"a metrics url", "metrics: {otlp: \"ftp://h/${env:WSPLAN_TEST_HARD}\"}\nservers: [{name: gws}]" + tail,
			"s.yaml:1: metrics.otlp: want an http:// or https:// URL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadBytes("s.yaml", []byte(c.src), LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			for _, secret := range []string{hard, "s3cr3t-t0ken", word} {
				if leak := showsSecret(err.Error(), secret); leak != "" {
					t.Errorf("%v\nshows %s", err, leak)
				}
			}
		})
	}
	// Without a secret, the same URL mistake quotes its piece.
	_, err := LoadBytes("s.yaml", []byte(head+`"ws://127.0.0.1:9/p%zz"`+tail), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), `invalid URL escape "%zz"`) {
		t.Errorf("err = %v, want the bad escape quoted", err)
	}
}

// showsSecret returns what of s text shows: a form of it (secret.Forms)
// or one of its pieces between the characters encoders change; "" when
// none.
func showsSecret(text, s string) string {
	pieces := strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(`"'\% `, r) || r > 127 })
	for _, f := range append(secret.Forms(s), pieces...) {
		if strings.Contains(text, f) {
			return strconv.Quote(f)
		}
	}
	return ""
}
