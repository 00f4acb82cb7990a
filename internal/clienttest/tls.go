package clienttest

import (
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/wstls"
)

// TLSServer starts a test server speaking TLS with a run CA's certificate
// (opts.TLS is set here) until the test ends, and returns it with the
// client's TLS options that trust that CA alone.
func TLSServer(t *testing.T, opts testserver.Options) (*testserver.Server, *client.TLSOptions) {
	t.Helper()
	ca, err := wstls.NewRunCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if opts.TLS, err = ca.ServerConfig(); err != nil {
		t.Fatal(err)
	}
	return testserver.Start(t, opts), &client.TLSOptions{CAFile: ca.CAFile}
}
