package plan

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/pmdeflate"
)

func TestURLTargets(t *testing.T) {
	src := `defaults:
  headers: {X-Team: bench, Authorization: "Bearer default"}
  subprotocols: [chat]
servers:
  - name: prod
    urls: ["ws://127.0.0.1:9700/ws?room=1", "ws://[::1]/feed"]
    headers: {authorization: "Bearer mine"}
    pid: 1234
  - name: secure
    url: wss://localhost:9443/
    tls: {ca_file: testdata/ca.pem, server_name: example.test, session_resumption: true}
    metrics_url: http://127.0.0.1:9100/metrics
    origin: https://example.test
  - name: gws
    tls: true
  - name: gws-rsa
    framework: gws
    tls: {certificate: rsa-2048, max_version: 1.2}
  - name: gws-13
    framework: gws
    tls: {max_version: "1.3", groups: [x25519, p256]}
phases:
  - connect: {connections: 10}
`
	p, err := LoadBytes("t.yaml", []byte(src), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prod, sec, gws := p.Servers[0], p.Servers[1], p.Servers[2]
	if rsa, v13 := p.Servers[3], p.Servers[4]; !rsa.ServeTLS || rsa.TLS.Certificate != "rsa-2048" || rsa.TLS.MaxVersion != tls.VersionTLS12 || v13.TLS.MaxVersion != tls.VersionTLS13 || v13.TLS.Certificate != "" || !slices.Equal(v13.TLS.Groups, []string{"x25519", "p256"}) {
		t.Errorf("gws-rsa tls %+v, gws-13 tls %+v", rsa.TLS, v13.TLS)
	}
	if !prod.External() || prod.BuiltIn() || !gws.BuiltIn() {
		t.Errorf("External/BuiltIn wrong: %v %v %v", prod.External(), prod.BuiltIn(), gws.BuiltIn())
	}
	want := []URLTarget{
		{URL: "ws://127.0.0.1:9700/ws?room=1", Addr: "127.0.0.1:9700", Host: "127.0.0.1:9700", RequestURI: "/ws?room=1"},
		{URL: "ws://[::1]/feed", Addr: "[::1]:80", Host: "[::1]", RequestURI: "/feed"},
	}
	for i, w := range want {
		if prod.Targets[i] != w {
			t.Errorf("target %d = %+v, want %+v", i, prod.Targets[i], w)
		}
	}
	if prod.Headers["Authorization"] != "Bearer mine" || prod.Headers["X-Team"] != "bench" {
		t.Errorf("headers = %v: the server's own win over defaults, names canonical", prod.Headers)
	}
	if len(prod.Subprotocols) != 1 || prod.PID != 1234 || !prod.Resources() {
		t.Errorf("prod = %+v", prod)
	}
	if !sec.Targets[0].TLS || sec.Targets[0].Addr != "localhost:9443" || sec.TLS.ServerName != "example.test" || !sec.TLS.SessionResumption || sec.Origin != "https://example.test" {
		t.Errorf("secure = %+v, tls %+v", sec, sec.TLS)
	}
	if !gws.ServeTLS || gws.TLS != nil {
		t.Errorf("gws tls: true: ServeTLS %v, TLS %+v", gws.ServeTLS, gws.TLS)
	}
}

func TestURLTargetErrors(t *testing.T) {
	tests := []struct{ server, want string }{
		{`{name: a, url: "http://127.0.0.1:1/"}`, `servers[0].url: want a ws:// or wss:// URL`},
		{`{name: a, url: "ws://10.0.0.1:80/"}`, `servers[0].url: 10.0.0.1 is not a loopback address: set defaults.allow_remote: true`},
		{`{name: a, url: "ws://example.com/"}`, `host "example.com" is not loopback`},
		{`{name: a, url: "ws://u:p@127.0.0.1:1/"}`, `credentials in the URL are not sent`},
		{`{name: a, urls: ["ws://127.0.0.1:1/", "wss://127.0.0.1:2/"]}`, `servers[0].urls[1]: mixes ws:// and wss://`},
		{`{name: a, url: "ws://127.0.0.1:1/", command: [x]}`, `servers[0].command: give url: or command:, not both`},
		{`{name: a, url: "ws://127.0.0.1:1/", path: /x}`, `servers[0].path: with url: the path comes from the URL`},
		{`{name: a, url: "ws://127.0.0.1:1/", pid: 5, metrics_url: "http://127.0.0.1:2/m"}`, `give one of pid:, pid_file: or metrics_url:`},
		{`{name: a, url: "ws://127.0.0.1:1/", metrics_url: "ftp://x/"}`, `want an http:// or https:// URL`},
		{`{name: a, url: "ws://127.0.0.1:1/", tls: {ca_file: /nonexistent.pem}}`, `servers[0].tls.ca_file:`},
		{`{name: a, url: "ws://127.0.0.1:1/", tls: {insecure_skip_verify: true}}`, `tls settings need wss:// URLs`},
		{`{name: a, url: "wss://127.0.0.1:1/", tls: {verify: true}}`, `servers[0].tls: unknown key "verify" (known: ca_file, server_name, insecure_skip_verify, session_resumption, max_version, certificate, groups)`},
		{`{name: a, url: "wss://127.0.0.1:1/", tls: {max_version: 1.1}}`, `t.yaml:2: servers[0].tls.max_version: want "1.2" or "1.3", got 1.1`},
		{`{name: a, url: "wss://127.0.0.1:1/", tls: {certificate: rsa-2048}}`, `servers[0].tls.certificate: is the key type of the certificate wsplan makes for a preset it serves with TLS`},
		{`{name: gws, tls: {certificate: dsa}}`, `servers[0].tls.certificate: must be ecdsa-p256 or rsa-2048, got "dsa"`},
		{`{name: gws, tls: {groups: [x448]}}`, `servers[0].tls.groups: unknown group "x448": want x25519mlkem768, secp256r1mlkem768, secp384r1mlkem1024, x25519, p256, p384, p521`},
		{`{name: gws, tls: {groups: []}}`, `servers[0].tls.groups: want a list of key exchange groups (x25519mlkem768, secp256r1mlkem768, secp384r1mlkem1024, x25519, p256, p384, p521), got none`},
		{`{name: gws, tls: {max_version: "1.2", groups: [x25519mlkem768]}}`, `servers[0].tls.groups: x25519mlkem768: TLS 1.3's only, and max_version is 1.2`},
		{`{name: gws, pid: 5}`, `pid:, pid_file: and metrics_url: are for url: servers`},
		{`{name: a, url: "ws://127.0.0.1:1/", headers: {Sec-WebSocket-Protocol: x}}`, `Sec-Websocket-Protocol cannot be set here: use subprotocols:`},
		{`{name: a, url: "ws://127.0.0.1:1/", headers: {"bad name": x}}`, `bad header name "bad name"`},
		{`{name: a, url: "ws://127.0.0.1:1/", subprotocols: [chat, chat]}`, `servers[0].subprotocols[1]: duplicate subprotocol "chat"`},
		{`{name: a, url: "ws://127.0.0.1:1/", subprotocols: ["a b"]}`, `bad subprotocol "a b"`},
	}
	for _, tt := range tests {
		src := "servers:\n  - " + tt.server + "\nphases:\n  - connect: {connections: 1}\n"
		_, err := LoadBytes("t.yaml", []byte(src), LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n  err = %v\n want %q", tt.server, err, tt.want)
		}
		if err != nil && !strings.Contains(err.Error(), "t.yaml:2") {
			t.Errorf("%s: err %v does not name line 2", tt.server, err)
		}
	}
}

func TestCompressionKey(t *testing.T) {
	src := `defaults:
  compression: {server_no_context_takeover: true, client_max_window_bits: 12}
servers:
  - name: a
    url: ws://127.0.0.1:9700/
  - name: b
    url: ws://127.0.0.1:9701/
    compression: false
  - name: c
    url: ws://127.0.0.1:9702/
    compression: true
  - name: gws
    options: {compression: true}
  - name: gorilla
    compression: false
phases:
  - connect: {connections: 10}
`
	p, err := LoadBytes("t.yaml", []byte(src), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c, gws, gorilla := p.Servers[0], p.Servers[1], p.Servers[2], p.Servers[3], p.Servers[4]
	if o := a.Offer(); o == nil || !o.ServerNoContextTakeover || o.ClientMaxWindowBits != 12 {
		t.Errorf("a: offer %+v, want defaults'", o)
	}
	if b.Offer() != nil {
		t.Errorf("b: compression: false gave offer %+v", b.Offer())
	}
	if o := c.Offer(); o == nil || o.ServerNoContextTakeover || o.ClientMaxWindowBits != 0 {
		t.Errorf("c: offer %+v, want the zero params", o)
	}
	if o := gws.Offer(); o == nil || *o != (pmdeflate.Params{ServerNoContextTakeover: true, ClientMaxWindowBits: 12}) {
		t.Errorf("gws: offer %+v", o)
	}
	if gorilla.Offer() != nil {
		t.Errorf("gorilla: offer %+v, want none", gorilla.Offer())
	}
	_, err = LoadBytes("t.yaml", []byte("defaults: {compression: true}\nservers: [{name: gorilla}]\nphases: [{connect: {connections: 1}}]\n"), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "t.yaml:1: defaults.compression: the client would ask gorilla (servers[0])") {
		t.Errorf("defaults.compression on a preset without it: %v", err)
	}
}

func TestCompressionKeyErrors(t *testing.T) {
	tests := []struct{ server, want string }{
		{`{name: a, url: "ws://127.0.0.1:1/", compression: yes please}`, `want true, false or a mapping`},
		{`{name: a, url: "ws://127.0.0.1:1/", compression: {window: 9}}`, `servers[0].compression: unknown key "window" (known: client_no_context_takeover, server_no_context_takeover, client_max_window_bits, server_max_window_bits)`},
		{`{name: a, url: "ws://127.0.0.1:1/", compression: {client_max_window_bits: 7}}`, `t.yaml:2: servers[0].compression.client_max_window_bits: must be >= 8, got 7`},
		{`{name: a, url: "ws://127.0.0.1:1/", compression: {server_max_window_bits: 16}}`, `servers[0].compression.server_max_window_bits: must be <= 15, got 16`},
		{`{name: a, url: "ws://127.0.0.1:1/", compression: {client_max_window_bits: 1.5}}`, `servers[0].compression.client_max_window_bits: want an integer, got 1.5`},
		{`{name: gws, compression: true}`, `servers[0].compression: the client would ask gws (servers[0]) for permessage-deflate, but it serves without: add options: {compression: true}`},
	}
	for _, tt := range tests {
		src := "servers:\n  - " + tt.server + "\nphases:\n  - connect: {connections: 1}\n"
		_, err := LoadBytes("t.yaml", []byte(src), LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n  err = %v\n want %q", tt.server, err, tt.want)
		}
	}
}

// TestTLSConfigString: validate's print of tls: is the settings given,
// by key, in declaration order.
func TestTLSConfigString(t *testing.T) {
	c := TLSConfig{CAFile: "a.pem", InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12, Certificate: "rsa-2048", Groups: TLSGroups{"x25519", "p256"}}
	if got, want := c.String(), "ca_file=a.pem insecure_skip_verify=true max_version=1.2 certificate=rsa-2048 groups=x25519,p256"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := (TLSConfig{}).String(); got != "" {
		t.Errorf("no settings: got %q", got)
	}
}
