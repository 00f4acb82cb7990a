package wstls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNewRunCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out", "tls")
	ca, err := NewRunCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{ca.CAFile, 0o644}, {ca.CertFile, 0o644}, {ca.KeyFile, 0o600}} {
		st, err := os.Stat(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(f.path) != dir || st.Mode().Perm() != f.mode {
			t.Errorf("%s: mode %v, want %v in %s", f.path, st.Mode().Perm(), f.mode, dir)
		}
	}
	caCert := readCert(t, ca.CAFile)
	leaf := readCert(t, ca.CertFile)
	if !caCert.IsCA {
		t.Error("ca.pem is not a CA")
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	for _, name := range []string{"localhost", "127.0.0.1", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "example.com"}); err == nil {
		t.Error("certificate valid for example.com")
	}
	if d := time.Until(leaf.NotAfter); d > RunCAValidity || d < RunCAValidity-time.Minute {
		t.Errorf("valid for %v more, want about %v", d, RunCAValidity)
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("server key %T, want ECDSA P-256", leaf.PublicKey)
	}
	if _, err := ca.ServerConfig(); err != nil {
		t.Fatal(err)
	}
	// A second run gets a different CA.
	ca2, err := NewRunCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if readCert(t, ca2.CAFile).Equal(caCert) {
		t.Fatal("two runs share a CA")
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientConfig(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, caFile, wantErr string
	}{
		{name: "missing", caFile: filepath.Join(dir, "nope.pem"), wantErr: "tls: ca_file: open " + filepath.Join(dir, "nope.pem") + ": no such file or directory"},
		{name: "no certificate", caFile: junk, wantErr: "tls: ca_file " + junk + ": no PEM certificate in it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ClientConfig(ClientOptions{CAFile: tt.caFile, ServerName: "localhost"})
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
	cfg, err := ClientConfig(ClientOptions{ServerName: "example.com", InsecureSkipVerify: true, SessionResumption: true})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ServerName != "example.com" || !cfg.InsecureSkipVerify || cfg.ClientSessionCache == nil || cfg.RootCAs != nil || cfg.MinVersion != 0x0303 {
		t.Fatalf("config %+v", cfg)
	}
	if !strings.HasPrefix(errNoCerts.Error(), "no PEM") {
		t.Fatal(errNoCerts)
	}
}
