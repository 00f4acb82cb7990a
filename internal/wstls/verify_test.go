package wstls

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// issueCert makes a server certificate of ca for names (DNS names or IP
// addresses).
func issueCert(t *testing.T, ca *CA, names ...string) *tls.Certificate {
	t.Helper()
	tmpl := x509.Certificate{Subject: pkix.Name{CommonName: names[0]}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, keyDER, err := ca.Issue(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	key, err := x509.ParsePKCS8PrivateKey(keyDER)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// swapServer is a test server whose certificate the test replaces, as a
// server restarted with another certificate would present it.
func swapServer(t *testing.T) (*testServer, *atomic.Pointer[tls.Certificate]) {
	var cur atomic.Pointer[tls.Certificate]
	srv := newTestServer(t, false, func(c *tls.Config) {
		c.Certificates = nil
		c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cur.Load(), nil }
	})
	return srv, &cur
}

func TestVerifierChainChanged(t *testing.T) {
	srv, cur := swapServer(t)
	trusted, err := NewCA("trusted", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	a := issueCert(t, trusted, "localhost")
	pool := x509.NewCertPool()
	pool.AddCert(trusted.Cert)
	v := NewVerifier(pool, "localhost")
	cfg := &tls.Config{ServerName: "localhost", MinVersion: tls.VersionTLS12}
	v.install(cfg)
	dial := func() error {
		c, err := net.Dial("tcp", srv.addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return handshake(NewClient(cfg), c)
	}
	steps := []struct {
		name             string
		cert             *tls.Certificate // nil = keep the last
		wantErr          string
		verified, reused int64
	}{
		{"first chain, verified", a, "", 1, 0},
		{"same chain, verdict reused", nil, "", 1, 1},
		{"again", nil, "", 1, 2},
		{"restarted with an untrusted chain", issueCert(t, other, "localhost"), "x509: certificate signed by unknown authority", 2, 2},
		{"trusted CA, another name", issueCert(t, trusted, "example.com"), "x509: certificate is valid for example.com, not localhost", 3, 2},
		{"trusted CA, new key and certificate", issueCert(t, trusted, "localhost"), "", 4, 2},
		{"that chain reused", nil, "", 4, 3},
		{"the first chain again, its verdict kept", a, "", 4, 4},
	}
	for _, st := range steps {
		if st.cert != nil {
			cur.Store(st.cert)
		}
		err := dial()
		switch {
		case st.wantErr == "" && err != nil:
			t.Fatalf("%s: %v", st.name, err)
		case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
			t.Fatalf("%s: got %v, want %q", st.name, err, st.wantErr)
		}
		if verified, reused := v.Stats(); verified != st.verified || reused != st.reused {
			t.Fatalf("%s: verified %d, reused %d; want %d, %d", st.name, verified, reused, st.verified, st.reused)
		}
	}
	// A verdict ends with its chain's validity: past it, the chain is
	// verified again (and fails: expired).
	cur.Store(a)
	v.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if err := dial(); err == nil || !strings.Contains(err.Error(), "certificate has expired or is not yet valid") {
		t.Fatalf("past the chain's validity: got %v, want expired", err)
	}
	if verified, _ := v.Stats(); verified != 5 {
		t.Fatalf("past the chain's validity: verified %d times, want 5", verified)
	}
}

// TestVerifierResumed: a resumed handshake carries the first one's chain
// and goes through the verifier too (crypto/tls's own check of a resumed
// session is off with the verifier installed).
func TestVerifierResumed(t *testing.T) {
	for _, ver := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		t.Run(tls.VersionName(ver), func(t *testing.T) {
			srv := newTestServer(t, false, func(c *tls.Config) { c.MaxVersion = ver })
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(readPEM(t, srv.ca.CAFile)) {
				t.Fatal("no CA")
			}
			v := NewVerifier(pool, "localhost")
			cfg := &tls.Config{ServerName: "localhost", ClientSessionCache: tls.NewLRUClientSessionCache(0)}
			v.install(cfg)
			s1, c1 := dialSession(t, srv, cfg, false)
			if err := echo(s1, c1, []byte("ticket"), 4096); err != nil {
				t.Fatal(err)
			}
			s2, _ := dialSession(t, srv, cfg, false)
			if !s2.State().DidResume {
				t.Fatal("not resumed")
			}
			if verified, reused := v.Stats(); verified != 1 || reused != 1 {
				t.Fatalf("verified %d, reused %d; want 1, 1", verified, reused)
			}
			// The verdict gone stale, the resumed chain is checked again.
			v.now = func() time.Time { return time.Now().Add(48 * time.Hour) }
			c, err := net.Dial("tcp", srv.addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := handshake(NewClient(cfg), c); err == nil || !strings.Contains(err.Error(), "expired") {
				t.Fatalf("stale resumed chain: got %v, want expired", err)
			}
		})
	}
}

func TestVerifierName(t *testing.T) {
	srv := newTestServer(t, false, nil)
	cfg := clientConfig(t, srv, false)
	other := cfg.Clone()
	other.ServerName = "127.0.0.1" // the verifier still checks localhost: refused
	c, err := net.Dial("tcp", srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := handshake(NewClient(other), c); err == nil || !strings.Contains(err.Error(), "checked by the verifier of localhost") {
		t.Fatalf("got %v, want the verifier's name refused", err)
	}
	noName, err := ClientConfig(ClientOptions{CAFile: srv.ca.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := net.Dial("tcp", srv.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := handshake(NewClient(noName), c2); err == nil || !strings.Contains(err.Error(), "no server name to verify") {
		t.Fatalf("got %v, want no server name", err)
	}
}

func TestChainKey(t *testing.T) {
	cert := func(raw string) *x509.Certificate { return &x509.Certificate{Raw: []byte(raw)} }
	keys := map[string]string{}
	for name, k := range map[string][]byte{
		"a|bc":           chainKey(nil, "n", []*x509.Certificate{cert("a"), cert("bc")}),
		"ab|c":           chainKey(nil, "n", []*x509.Certificate{cert("ab"), cert("c")}),
		"abc":            chainKey(nil, "n", []*x509.Certificate{cert("abc")}),
		"a|bc other":     chainKey(nil, "m", []*x509.Certificate{cert("a"), cert("bc")}),
		"name in chain":  chainKey(nil, "", []*x509.Certificate{cert("n"), cert("a"), cert("bc")}),
		"one byte other": chainKey(nil, "n", []*x509.Certificate{cert("a"), cert("bd")}),
	} {
		if prev, dup := keys[string(k)]; dup {
			t.Errorf("%s and %s share a key", name, prev)
		}
		keys[string(k)] = name
	}
}

func readPEM(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
