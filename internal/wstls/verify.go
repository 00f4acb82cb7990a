package wstls

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxVerdicts bounds a Verifier's cache: a server that rotates through
// more chains than this (it should not) empties it and starts again.
const maxVerdicts = 64

// Verifier verifies the server certificate chains of every connection
// made with one client tls.Config (ClientConfig installs it as the
// config's VerifyConnection): crypto/x509's verification against the
// config's roots for its server name, as crypto/tls does it, done once
// per distinct chain. Its verdict is reused for a chain of exactly the
// same bytes, for the same server name, while the current time is within
// every certificate's validity of the verified chain — the inputs of
// x509.Certificate.Verify are then the same, so its answer would be.
// A chain that differs in any byte (a server restarted with another
// certificate, an intermediate changed) is verified on its own; failures
// are not cached. Every handshake still checks the server's signature
// over it (CertificateVerify in TLS 1.3, ServerKeyExchange in 1.2):
// proof that the server holds the certificate's key.
//
// A Verifier is safe for concurrent use (loops share a config).
type Verifier struct {
	roots *x509.CertPool // nil = the host's roots
	name  string         // the name verified (the config's ServerName)
	now   func() time.Time

	mu       sync.Mutex
	verdicts map[string]verdict // key: chainKey
	key      []byte             // scratch for chainKey, under mu

	verified atomic.Int64 // chains verified (cache misses, failures included)
	reused   atomic.Int64 // connections whose chain's verdict was reused
}

// verdict is a verified chain's validity: the verdict holds between the
// latest NotBefore and the earliest NotAfter of its certificates.
type verdict struct {
	notBefore, notAfter time.Time
}

// NewVerifier returns a Verifier of chains for name against roots (nil =
// the host's roots).
func NewVerifier(roots *x509.CertPool, name string) *Verifier {
	return &Verifier{roots: roots, name: name, now: time.Now, verdicts: map[string]verdict{}}
}

// install makes cfg verify servers through v instead of crypto/tls's own
// verification, which it replaces (InsecureSkipVerify only turns that
// off: v still runs for every handshake, resumed ones too).
func (v *Verifier) install(cfg *tls.Config) {
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = v.VerifyConnection
}

// Stats returns how many chains v verified and how many connections
// reused a verdict.
func (v *Verifier) Stats() (verified, reused int64) {
	return v.verified.Load(), v.reused.Load()
}

// VerifyConnection is the tls.Config hook: it verifies cs's peer chain
// (see Verifier), with crypto/tls's error types and messages.
func (v *Verifier) VerifyConnection(cs tls.ConnectionState) error {
	certs := cs.PeerCertificates
	if len(certs) == 0 {
		return errors.New("tls: server sent no certificate")
	}
	if err := v.sameName(cs.ServerName); err != nil {
		return err
	}
	now := v.now()
	v.mu.Lock()
	v.key = chainKey(v.key[:0], v.name, certs)
	d, ok := v.verdicts[string(v.key)]
	v.mu.Unlock()
	if ok && !now.Before(d.notBefore) && !now.After(d.notAfter) {
		v.reused.Add(1)
		return nil
	}
	v.verified.Add(1)
	opts := x509.VerifyOptions{Roots: v.roots, CurrentTime: now, DNSName: v.name, Intermediates: x509.NewCertPool()}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	chains, err := certs[0].Verify(opts)
	if err != nil {
		return &tls.CertificateVerificationError{UnverifiedCertificates: certs, Err: err}
	}
	d = verdict{notAfter: chains[0][0].NotAfter}
	for _, c := range chains[0] {
		if c.NotBefore.After(d.notBefore) {
			d.notBefore = c.NotBefore
		}
		if c.NotAfter.Before(d.notAfter) {
			d.notAfter = c.NotAfter
		}
	}
	v.mu.Lock()
	if len(v.verdicts) >= maxVerdicts {
		clear(v.verdicts)
	}
	v.key = chainKey(v.key[:0], v.name, certs)
	v.verdicts[string(v.key)] = d
	v.mu.Unlock()
	return nil
}

// sameName checks that the handshake is for v's name: the SNI crypto/tls
// sent is the name, or nothing for an IP address (a config cloned with
// another ServerName would otherwise be verified for v's name).
func (v *Verifier) sameName(sni string) error {
	if v.name == "" {
		return errors.New("tls: no server name to verify: set server_name or insecure_skip_verify")
	}
	want := strings.TrimSuffix(v.name, ".")
	if net.ParseIP(want) != nil {
		want = ""
	}
	if !strings.EqualFold(sni, want) {
		return errors.New("tls: handshake for " + sni + " checked by the verifier of " + v.name)
	}
	return nil
}

// chainKey appends the cache key of a chain for name: the name, then
// each certificate's DER bytes, each with its length.
func chainKey(b []byte, name string, certs []*x509.Certificate) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(name)))
	b = append(b, name...)
	for _, c := range certs {
		b = binary.BigEndian.AppendUint32(b, uint32(len(c.Raw)))
		b = append(b, c.Raw...)
	}
	return b
}
