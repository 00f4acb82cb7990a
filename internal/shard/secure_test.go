package shard

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsplan/wsplan/scenarios/echo"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// TestGroupTLS: two shards speak TLS with compression and a secret header
// (sent over stdin, not argv) to a TLS echo server; the results merge.
func TestGroupTLS(t *testing.T) {
	const secret = "Bearer shard-s3cret"
	var bad atomic.Int64
	srv, tlsOpts := clienttest.TLSServer(t, testserver.Options{Compression: true, Check: func(r *http.Request) error {
		if r.Header.Get("Authorization") != secret {
			bad.Add(1)
		}
		return nil
	}})
	defer srv.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts := client.Options{Targets: []string{srv.Listener.Addr().String()}, Path: "/ws",
		Headers: [][2]string{{"Authorization", secret}}, TLS: tlsOpts,
		Compression: &pmdeflate.Params{}}
	g, err := Start(Spec{Exe: exe, N: 2, Client: opts, Name: "tls", Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := g.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	res, err := g.Run(context.Background(), &client.ConnectParams{Connections: 20, Concurrency: 20, Timeout: units.Duration(5 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cr := res.(*client.ConnectResult)
	if cr.Success != 20 || cr.TLS.TotalCount() != 20 || cr.TLSVersion != "TLS 1.3" || cr.Extensions == "" {
		t.Fatalf("connect %+v", cr)
	}
	res, err = g.Run(context.Background(), &echo.Params{Total: 2000, Concurrency: 20, Payload: new(units.Size(1024)), Verify: new(true), Text: true, PayloadKind: "text"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	er := res.(*echo.Result)
	if er.Success != 2000 || er.Failed != 0 || er.BytesWire*2 > er.BytesPayload {
		t.Fatalf("echo %d ok %d failed %v; payload %d wire %d", er.Success, er.Failed, er.Errors, er.BytesPayload, er.BytesWire)
	}
	if bad.Load() != 0 {
		t.Errorf("%d upgrades without the header", bad.Load())
	}
	for _, pid := range g.Pids() {
		argv, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && bytes.Contains(argv, []byte(secret)) {
			t.Errorf("shard %d's argv holds the secret", pid)
		}
	}
}
