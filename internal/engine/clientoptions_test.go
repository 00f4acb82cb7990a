package engine

import (
	"reflect"
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/plan"
)

func TestClientOptions(t *testing.T) {
	src := `servers:
  - name: prod
    urls: ["wss://127.0.0.1:9443/ws?room=1", "wss://localhost:9444/feed"]
    headers: {X-Team: bench, Authorization: "Bearer x"}
    subprotocols: [v2, v1]
    origin: https://app.test
    tls: {server_name: app.test, session_resumption: true}
    compression: {server_no_context_takeover: true}
  - name: gws
    options: {compression: true}
phases:
  - connect: {connections: 1}
`
	p, err := plan.LoadBytes("t.yaml", []byte(src), plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prod := ClientOptions(p.Servers[0], []string{"127.0.0.1:9443", "localhost:9444"})
	want := client.Options{
		Targets: []string{"127.0.0.1:9443", "localhost:9444"}, Path: "/ws",
		Hosts: []string{"127.0.0.1:9443", "localhost:9444"}, RequestURIs: []string{"/ws?room=1", "/feed"},
		Headers:      [][2]string{{"Authorization", "Bearer x"}, {"X-Team", "bench"}},
		Subprotocols: []string{"v2", "v1"}, Origin: "https://app.test",
		TLS:         &client.TLSOptions{ServerName: "app.test", SessionResumption: true},
		Compression: p.Servers[0].Compression,
	}
	if !reflect.DeepEqual(prod, want) {
		t.Errorf("url server options\n got %+v\nwant %+v", prod, want)
	}
	gws := ClientOptions(p.Servers[1], []string{"127.0.0.1:9000"})
	if gws.TLS != nil || gws.Compression == nil || len(gws.Headers) != 0 || gws.Hosts != nil {
		t.Errorf("preset options %+v: want compression offered, no TLS, no headers", gws)
	}
}
