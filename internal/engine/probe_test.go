package engine

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/wstls"
)

// TestProbe: the probe handshake of a url: server carries the plan's
// headers, subprotocols, origin and request URI; a refused upgrade, a
// subprotocol not offered and a closed port each fail with their reason,
// which never quotes a header value.
func TestProbe(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		switch r.URL.Path {
		case "/ws":
			w.Header().Set("Upgrade", "websocket")
			w.Header().Set("Connection", "Upgrade")
			if r.URL.Query().Get("pick") != "" {
				w.Header().Set("Sec-WebSocket-Protocol", r.URL.Query().Get("pick"))
			}
			w.WriteHeader(http.StatusSwitchingProtocols)
		default:
			http.Error(w, "no", http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close()

	srvPlan := plan.Server{Target: plan.Target{
		Headers:      map[string]string{"Authorization": "Bearer sekret-value"},
		Subprotocols: []string{"chat.v2", "chat.v1"},
		Origin:       "https://bench.example",
	}}
	cases := []struct {
		name, addr, uri, wantErr string
	}{
		{"upgrade", addr, "/ws?tenant=a", ""},
		{"picked offered", addr, "/ws?pick=chat.v1", ""},
		{"picked other", addr, "/ws?pick=chat.v9", `the server picked subprotocol "chat.v9", not one offered (chat.v2, chat.v1)`},
		{"refused", addr, "/other", "no 101 response: status 401 Unauthorized"},
		{"closed", deadAddr, "/ws", "connection refused"},
	}
	for _, c := range cases {
		h, err := targetHandshake(srvPlan, plan.URLTarget{Addr: c.addr, Host: c.addr, RequestURI: c.uri})
		if err != nil {
			t.Fatal(err)
		}
		err = probe(context.Background(), h)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.wantErr)
		case err != nil && strings.Contains(err.Error(), "sekret"):
			t.Errorf("%s: error quotes a header value: %v", c.name, err)
		}
		if c.name == "upgrade" {
			if got.Header.Get("Authorization") != "Bearer sekret-value" || got.Header.Get("Origin") != "https://bench.example" ||
				got.Header.Get("Sec-WebSocket-Protocol") != "chat.v2, chat.v1" || got.URL.RawQuery != "tenant=a" || got.Host != addr {
				t.Errorf("upgrade request: %v %v host %s", got.URL, got.Header, got.Host)
			}
		}
	}
}

// TestProbeTLS: a wss:// target is probed over TLS, trusting the CA of
// tls.ca_file; a certificate from another CA fails the probe.
func TestProbeTLS(t *testing.T) {
	ca, err := wstls.NewRunCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := wstls.NewRunCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ca.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Upgrade", "websocket")
		w.WriteHeader(http.StatusSwitchingProtocols)
	}))
	srv.TLS = cfg
	srv.StartTLS()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "https://")
	target := plan.URLTarget{Addr: addr, Host: addr, RequestURI: "/ws", TLS: true}
	for _, c := range []struct {
		caFile  string
		wantErr string
	}{
		{ca.CAFile, ""},
		{other.CAFile, "tls handshake: tls: failed to verify certificate"},
	} {
		h, err := targetHandshake(plan.Server{Target: plan.Target{TLS: &plan.TLSConfig{CAFile: c.caFile}}}, target)
		if err != nil {
			t.Fatal(err)
		}
		err = probe(context.Background(), h)
		if (c.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("ca %s: error %v, want %q", c.caFile, err, c.wantErr)
		}
	}
}
