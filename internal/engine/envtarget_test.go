package engine

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/plan"
)

func TestEnvTarget(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	preset := plan.Server{Name: "gws", Path: "/ws", Values: map[string]string{"compression": "true"},
		Target: plan.Target{Headers: map[string]string{"X-Token": "t"}, Origin: "http://o", Subprotocols: []string{"a", "b"}}}
	tlsPreset := plan.Server{Name: "gws", Path: "/p", ServeTLS: true}
	url := plan.Server{Name: "u", URLs: []string{"wss://example.com/q?x=1"},
		Targets: []plan.URLTarget{{URL: "wss://example.com/q?x=1", TLS: true, Addr: "example.com:443"}},
		Target:  plan.Target{TLS: &plan.TLSConfig{ServerName: "srv", InsecureSkipVerify: true}}}
	badCA := url
	badCA.Target = plan.Target{TLS: &plan.TLSConfig{CAFile: bad}}

	got, err := envTarget(preset, []string{"127.0.0.1:9000", "127.0.0.1:9001"})
	if err != nil {
		t.Fatal(err)
	}
	wantHeader := http.Header{"X-Token": {"t"}, "Origin": {"http://o"}, "Sec-Websocket-Protocol": {"a, b"}}
	if got.URL != "ws://127.0.0.1:9000/ws" || got.Addr != "" || got.TLS != nil || !got.Compression || !equalHeader(got.Header, wantHeader) {
		t.Errorf("preset: %+v", got)
	}
	if got, err := envTarget(tlsPreset, []string{"127.0.0.1:9000"}); err != nil || got.URL != "wss://127.0.0.1:9000/p" || got.Compression {
		t.Errorf("tls preset: %+v, %v", got, err)
	}
	got, err = envTarget(url, nil)
	if err != nil || got.URL != "wss://example.com/q?x=1" || got.Addr != "example.com:443" || got.TLS == nil ||
		got.TLS.ServerName != "srv" || !got.TLS.InsecureSkipVerify {
		t.Errorf("url: %+v, %v", got, err)
	}
	if _, err := envTarget(badCA, nil); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("bad ca_file: %v", err)
	}
	if _, err := envTarget(plan.Server{Name: "x"}, nil); err == nil {
		t.Error("no address: no error")
	}
}

func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b[k], "\n") {
			return false
		}
	}
	return true
}
