package servers

import (
	"bytes"
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	gorilla "github.com/gorilla/websocket"

	"github.com/wsplan/wsplan/frameworks"
	"github.com/wsplan/wsplan/internal/wstls"
)

// TestTLS serves every preset and adapter over TLS with a run CA's
// certificate, as `wsplan serve --tls-cert --tls-key` does, and echoes a
// message through a client that trusts only that CA; the ones whose Limits
// refuse TLS are refused by Serve with that reason.
func TestTLS(t *testing.T) {
	srvCfg, cliCfg := testTLS(t)
	names := []string{}
	for _, p := range frameworks.Presets() {
		names = append(names, p.Name)
	}
	for _, a := range frameworks.Adapters() {
		if _, isPreset := frameworks.LookupPreset(a.Name); !isPreset {
			names = append(names, a.Name)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			a, vals, errs := frameworks.Resolve(name, "", nil)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			addrs := freeAddrs(t, 1)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- Serve(ctx, name, nil, addrs, testPath, testPayload, srvCfg) }()
			defer func() {
				cancel()
				if err := <-done; err != nil && a.TLSRefusal(vals) == "" {
					t.Errorf("Serve: %v", err)
				}
			}()
			if why := a.TLSRefusal(vals); why != "" {
				select {
				case err := <-done:
					done <- nil
					if err == nil || !strings.Contains(err.Error(), "cannot serve TLS: "+why) {
						t.Fatalf("Serve with TLS on %s: %v, want the refusal %q", name, err, why)
					}
				case <-time.After(ioTimeout):
					t.Fatalf("Serve with TLS on %s started, want the refusal %q", name, why)
				}
				return
			}
			c := dialTLS(t, addrs[0], cliCfg)
			defer c.Close()
			typ := gorilla.BinaryMessage
			if a.Limits.OneMessageType != nil && a.Limits.OneMessageType(vals) == "text" {
				typ = gorilla.TextMessage
			}
			msg := bytes.Repeat([]byte("wss "), 1024)
			if err := c.WriteMessage(typ, msg); err != nil {
				t.Fatal(err)
			}
			gotTyp, got, err := c.ReadMessage()
			if err != nil || gotTyp != typ || !bytes.Equal(got, msg) {
				t.Fatalf("echo over TLS: type %d, %d bytes, err %v; want type %d, %d bytes", gotTyp, len(got), err, typ, len(msg))
			}
			if st, ok := c.NetConn().(*tls.Conn); !ok || !st.ConnectionState().HandshakeComplete {
				t.Fatalf("connection is not TLS: %T", c.NetConn())
			}
		})
	}
}

// dialTLS upgrades over TLS to addr, retrying while the server starts.
func dialTLS(t *testing.T, addr string, cfg *tls.Config) *gorilla.Conn {
	t.Helper()
	d := gorilla.Dialer{TLSClientConfig: cfg, HandshakeTimeout: ioTimeout}
	deadline := time.Now().Add(ioTimeout)
	for {
		c, _, err := d.Dial("wss://"+addr+testPath, nil)
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("wss dial %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testTLS returns the server and client TLS configurations of a new run
// CA: the server's certificate is for 127.0.0.1, and the client trusts
// that CA only.
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	ca, err := wstls.NewRunCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if server, err = ca.ServerConfig(); err != nil {
		t.Fatal(err)
	}
	if client, err = wstls.ClientConfig(wstls.ClientOptions{CAFile: ca.CAFile, ServerName: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	return server, client
}
