package engine

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/scenarios"
)

// envTarget is the server as a phase that dials it itself sees it
// (scenarios.Env.Target): its first url: target, else the first listen
// address with the server's path; the plan's upgrade headers; the client
// TLS settings of tls:.
func envTarget(srv plan.Server, addrs []string) (scenarios.Target, error) {
	t := scenarios.Target{Header: http.Header{}}
	secure := srv.ServeTLS
	switch {
	case len(srv.Targets) > 0:
		u := srv.Targets[0]
		t.URL, t.Addr, secure = u.URL, u.Addr, u.TLS
	case len(addrs) > 0:
		scheme := "ws"
		if secure {
			scheme = "wss"
		}
		t.URL = scheme + "://" + addrs[0] + srv.Path
	default:
		return t, fmt.Errorf("server %s has no address", srv.Name)
	}
	for k, v := range srv.Headers {
		t.Header.Set(k, v)
	}
	if srv.Origin != "" {
		t.Header.Set("Origin", srv.Origin)
	}
	if len(srv.Subprotocols) > 0 {
		t.Header.Set("Sec-WebSocket-Protocol", strings.Join(srv.Subprotocols, ", "))
	}
	if c := srv.TLS; secure && c != nil {
		t.TLS = &tls.Config{ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify} //nolint:gosec // the plan asked for it
		if c.CAFile != "" {
			pem, err := os.ReadFile(c.CAFile)
			if err != nil {
				return t, fmt.Errorf("tls.ca_file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return t, fmt.Errorf("tls.ca_file %s: no PEM certificate in it", c.CAFile)
			}
			t.TLS.RootCAs = pool
		}
	}
	t.Compression, _ = strconv.ParseBool(srv.Values["compression"]) // validated by the plan loader; absent = false
	return t, nil
}
