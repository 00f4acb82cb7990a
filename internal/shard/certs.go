package shard

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wsplan/wsplan/internal/wstls"
)

// ShardName is the name in every shard's certificate and the one the
// orchestrator verifies: shards are reached by whatever address the plan
// or a Kubernetes Service gives, so the certificate names the role, not
// the host.
const ShardName = "wsplan-shard"

// CertsValidity is how long a run's shard certificates are valid: one day,
// starting an hour ago (clock skew between hosts).
const CertsValidity = 24 * time.Hour

// Cert file names inside a certificates directory (NewCerts writes them,
// ShardTLS and OrchestratorTLS read them).
const (
	CAFile           = "ca.pem"           // the run's CA, the only one either side trusts
	ShardCertFile    = "shard.pem"        // server certificate of every shard (ShardName)
	ShardKeyFile     = "shard.key"        // its key
	OrchCertFile     = "orchestrator.pem" // client certificate of the orchestrator
	OrchKeyFile      = "orchestrator.key" // its key
	orchestratorName = "wsplan-orchestrator"
)

// NewCerts makes a throw-away CA and two certificates it signs, all ECDSA
// P-256: the shards' server certificate (for ShardName) and the
// orchestrator's client certificate. It writes them into dir (created,
// keys mode 0600) and returns the files' contents by name, for a
// Kubernetes Secret. A shard accepts only a peer whose certificate this CA
// signed; the orchestrator accepts only a shard whose certificate it did.
func NewCerts(dir string) (map[string][]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("shard certificates: %w", err)
	}
	ca, err := wstls.NewCA("wsplan shard CA", CertsValidity)
	if err != nil {
		return nil, fmt.Errorf("shard certificates: %w", err)
	}
	files := map[string][]byte{CAFile: wstls.PEM("CERTIFICATE", ca.DER)}
	for _, c := range []struct {
		cert, key, name string
		usage           x509.ExtKeyUsage
	}{
		{ShardCertFile, ShardKeyFile, ShardName, x509.ExtKeyUsageServerAuth},
		{OrchCertFile, OrchKeyFile, orchestratorName, x509.ExtKeyUsageClientAuth},
	} {
		der, keyDER, err := ca.Issue(x509.Certificate{
			Subject:     pkix.Name{CommonName: c.name, Organization: []string{"wsplan"}},
			ExtKeyUsage: []x509.ExtKeyUsage{c.usage},
			DNSNames:    []string{c.name},
		})
		if err != nil {
			return nil, fmt.Errorf("shard certificates: %w", err)
		}
		files[c.cert] = wstls.PEM("CERTIFICATE", der)
		files[c.key] = wstls.PEM("PRIVATE KEY", keyDER)
	}
	for name, b := range files {
		mode := os.FileMode(0o644)
		if filepath.Ext(name) == ".key" {
			mode = 0o600
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, mode); err != nil {
			return nil, fmt.Errorf("shard certificates: %w", err)
		}
	}
	return files, nil
}

// ShardTLS is the TLS configuration of `wsplan shard --listen`: its
// certificate from dir, and only clients with a certificate the run's CA
// signed (TLS 1.3).
func ShardTLS(dir string) (*tls.Config, error) {
	cert, pool, err := loadPair(dir, ShardCertFile, ShardKeyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// OrchestratorTLS is the orchestrator's TLS configuration: its client
// certificate from dir, and only shards with the run's shard certificate.
func OrchestratorTLS(dir string) (*tls.Config, error) {
	cert, pool, err := loadPair(dir, OrchCertFile, OrchKeyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ServerName:   ShardName,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

func loadPair(dir, certFile, keyFile string) (tls.Certificate, *x509.CertPool, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, certFile), filepath.Join(dir, keyFile))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("shard certificates: %w (make them with `wsplan shard certs DIR`)", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("shard certificates: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return tls.Certificate{}, nil, fmt.Errorf("shard certificates: %s: %w", filepath.Join(dir, CAFile), errors.New("no PEM certificate in it"))
	}
	return cert, pool, nil
}
