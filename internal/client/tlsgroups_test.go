package client

import (
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
)

// TestTLSGroups: the client offers the key exchange groups it is given
// and the connect result says which one each server chose; with none
// given it offers crypto/tls's default, ML-KEM first.
func TestTLSGroups(t *testing.T) {
	for _, tc := range []struct {
		groups  []string
		version uint16
		want    string
	}{
		{nil, 0, "x25519mlkem768"},
		{[]string{"x25519"}, 0, "x25519"},
		{[]string{"p256"}, 0, "p256"},
		{[]string{"secp256r1mlkem768"}, 0, "secp256r1mlkem768"},
		// Groups is a set: crypto/tls offers them in its own order,
		// x25519 before p256, with its key share for x25519.
		{[]string{"p256", "x25519"}, 0, "x25519"},
		{[]string{"x25519mlkem768", "p384"}, tls.VersionTLS12, "p384"}, // ML-KEM is TLS 1.3's only
		{[]string{"p256"}, tls.VersionTLS12, "p256"},
	} {
		t.Run(fmt.Sprintf("%v/%#x", tc.groups, tc.version), func(t *testing.T) {
			cfg, caFile := runCA(t, tc.version)
			addr := serveHTTP(t, cfg, gorillaEcho(false, nil, nil))
			c := newClient(t, Options{Targets: []string{addr}, Loops: 1, NoDelay: true, TLS: &TLSOptions{CAFile: caFile, Groups: tc.groups}})
			cr, er := connectRounds(t, c, 4, roundsParams{Rounds: 10, Payload: payloadOf(t, "random", 64)})
			if er.Success != 40 {
				t.Fatalf("echo %d of 40: %v", er.Success, er.Errors)
			}
			if cr.TLSGroup != tc.want {
				t.Errorf("group %q, want %q", cr.TLSGroup, tc.want)
			}
		})
	}
	if _, err := New(Options{Targets: []string{"127.0.0.1:1"}, TLS: &TLSOptions{Groups: []string{"x448"}, InsecureSkipVerify: true}}); err == nil || !strings.Contains(err.Error(), `unknown group "x448"`) {
		t.Errorf("an unknown group: %v", err)
	}
}
