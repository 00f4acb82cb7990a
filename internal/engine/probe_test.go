package engine

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/wstls"

	"github.com/wsplan/wsplan/internal/proto/graphqlws"
	"github.com/wsplan/wsplan/internal/proto/jsonrpc"
	"github.com/wsplan/wsplan/internal/proto/mqtt"
	"github.com/wsplan/wsplan/internal/proto/stomp"
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

// TestProbeProtocolSubprotocol: the probe offers what the phases'
// connections offer (client.Subprotocols): a server that refuses an
// upgrade without its protocol's subprotocol (EMQX, aedes so
// configured) passes the probe of a plan with protocol: mqtt and no
// subprotocols; the plan's own subprotocols replace the protocol's; raw
// messages offer none and are refused.
func TestProbeProtocolSubprotocol(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		need := r.URL.Query().Get("need")
		if !slices.Contains(strings.Split(r.Header.Get("Sec-WebSocket-Protocol"), ", "), need) {
			http.Error(w, "subprotocol "+need+" required", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Upgrade", "websocket")
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Sec-WebSocket-Protocol", need)
		w.WriteHeader(http.StatusSwitchingProtocols)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	cases := []struct {
		name, need string
		proto      *plan.Protocol
		offered    []string
		wantErr    string
	}{
		{"mqtt", "mqtt", &plan.Protocol{Name: mqtt.Name}, nil, ""},
		{"graphql-ws", graphqlws.Subprotocol, &plan.Protocol{Name: graphqlws.Name}, nil, ""},
		{"stomp", "v12.stomp", &plan.Protocol{Name: stomp.Name}, nil, ""},
		{"plan's own win", "mqttv3.1", &plan.Protocol{Name: mqtt.Name}, []string{"mqttv3.1"}, ""},
		{"plan's own, not the protocol's", "mqtt", &plan.Protocol{Name: mqtt.Name}, []string{"mqttv3.1"}, "status 401"},
		{"raw offers none", "mqtt", nil, nil, "status 401"},
		{"jsonrpc has none", "jsonrpc", &plan.Protocol{Name: jsonrpc.Name}, nil, "status 401"},
	}
	for _, c := range cases {
		s := plan.Server{Target: plan.Target{Protocol: c.proto, Subprotocols: c.offered}}
		h, err := targetHandshake(s, plan.URLTarget{Addr: addr, Host: addr, RequestURI: "/mqtt?need=" + c.need})
		if err != nil {
			t.Fatal(err)
		}
		want, err := client.Subprotocols(c.offered, c.proto.Options())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(h.subprotocols, want) {
			t.Errorf("%s: probe offers %v, the client %v", c.name, h.subprotocols, want)
		}
		err = probe(t.Context(), h)
		if (c.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
		}
	}
}
