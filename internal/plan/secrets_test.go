package plan

import (
	"strings"
	"testing"
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
	if len(p.Secrets) != 1 || p.Secrets[0] != "s3cret-value-42" {
		t.Errorf("Secrets = %q", p.Secrets)
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
