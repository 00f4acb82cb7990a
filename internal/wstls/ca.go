package wstls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// RunCA names the files NewRunCA wrote: a throw-away certificate
// authority and a server certificate it signed, for one run.
type RunCA struct {
	CAFile   string // ca.pem: the CA certificate, the only one clients trust
	CertFile string // server.pem: the server certificate
	KeyFile  string // server.key: the server's private key (mode 0600)
}

// RunCAValidity is how long the run's certificates are valid: one day,
// starting an hour ago (clock skew between client and server hosts).
const RunCAValidity = 24 * time.Hour

// CA is a throw-away certificate authority (ECDSA P-256) that signs the
// certificates of one run: the run's servers (NewRunCA) and the remote
// shards and their orchestrator (internal/shard).
type CA struct {
	Cert *x509.Certificate
	DER  []byte // Cert, DER-encoded
	key  *ecdsa.PrivateKey
}

// NewCA makes a CA named name, valid from an hour ago (clock skew between
// hosts) for validity.
func NewCA(name string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"wsplan"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, DER: der, key: key}, nil
}

// Issue signs a new ECDSA P-256 key's certificate for tmpl's names and
// usages, with a fresh serial number and the CA's validity; it returns the
// certificate and the PKCS #8 private key, DER-encoded.
func (ca *CA) Issue(tmpl x509.Certificate) (certDER, keyDER []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore, tmpl.NotAfter = ca.Cert.NotBefore, ca.Cert.NotAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if certDER, err = x509.CreateCertificate(rand.Reader, &tmpl, ca.Cert, &key.PublicKey, ca.key); err != nil {
		return nil, nil, err
	}
	if keyDER, err = x509.MarshalPKCS8PrivateKey(key); err != nil {
		return nil, nil, err
	}
	return certDER, keyDER, nil
}

// PEM encodes a DER block ("CERTIFICATE", "PRIVATE KEY").
func PEM(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// NewRunCA makes a throw-away CA and a server certificate signed by it,
// both ECDSA P-256, and writes them into dir (created if needed; the out
// dir of a run, never the repository). The server certificate is for
// 127.0.0.1, ::1 and localhost.
func NewRunCA(dir string) (RunCA, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return RunCA{}, fmt.Errorf("tls: run CA: %w", err)
	}
	ca, err := NewCA("wsplan run CA", RunCAValidity)
	if err != nil {
		return RunCA{}, fmt.Errorf("tls: run CA: %w", err)
	}
	der, keyDER, err := ca.Issue(x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost", Organization: []string{"wsplan"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	})
	if err != nil {
		return RunCA{}, fmt.Errorf("tls: run CA: %w", err)
	}
	r := RunCA{
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "server.pem"),
		KeyFile:  filepath.Join(dir, "server.key"),
	}
	files := []struct {
		path, typ string
		der       []byte
		mode      os.FileMode
	}{
		{r.CAFile, "CERTIFICATE", ca.DER, 0o644},
		{r.CertFile, "CERTIFICATE", der, 0o644},
		{r.KeyFile, "PRIVATE KEY", keyDER, 0o600},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, PEM(f.typ, f.der), f.mode); err != nil {
			return RunCA{}, fmt.Errorf("tls: run CA: %w", err)
		}
	}
	return r, nil
}

// ServerConfig loads the run's server certificate, for a server wsplan
// starts with tls: true.
func (r RunCA) ServerConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(r.CertFile, r.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: server certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// serial returns a random 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil { // crypto/rand does not fail on Linux
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// ClientConfig returns the client TLS configuration of a wss target:
// trust only the CAs in caFile (PEM; "" = the host's roots), send
// serverName as SNI and verify the certificate against it ("" = the
// caller must set ServerName to the target's host before use),
// insecure skips verification (the handshake still runs), and resume keeps
// a session cache shared by every connection made with this config, so
// that connections after the first resume (TLS 1.2 tickets, TLS 1.3 PSK).
// TLS 1.2 is the minimum. ALPN offers http/1.1, the protocol a WebSocket
// upgrade speaks (so that a server that also serves h2 does not pick it).
func ClientConfig(caFile, serverName string, insecure, resume bool) (*tls.Config, error) {
	cfg := &tls.Config{
		ServerName:         serverName,
		InsecureSkipVerify: insecure,
		MinVersion:         tls.VersionTLS12,
		NextProtos:         []string{"http/1.1"},
	}
	if caFile != "" {
		pemBytes, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("tls: ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("tls: ca_file %s: %w", caFile, errNoCerts)
		}
		cfg.RootCAs = pool
	}
	if resume {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	}
	return cfg, nil
}

var errNoCerts = errors.New("no PEM certificate in it")
