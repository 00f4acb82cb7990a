package wstls

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
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

// Key is the key type of a run's certificates (the plan's tls:
// certificate): it sets what each side's handshake signs and verifies.
type Key string

// The key types a run's certificates can have.
const (
	KeyECDSAP256 Key = "ecdsa-p256" // ECDSA on P-256: the default
	KeyRSA2048   Key = "rsa-2048"   // RSA, 2048-bit modulus
)

// Keys lists every Key, the default first.
var Keys = []Key{KeyECDSAP256, KeyRSA2048}

// generate makes a new private key of type k.
func (k Key) generate() (crypto.Signer, error) {
	switch k {
	case KeyECDSAP256, "":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case KeyRSA2048:
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	return nil, fmt.Errorf("unknown key type %q (want one of %v)", k, Keys)
}

// CA is a throw-away certificate authority that signs the certificates of
// one run: the run's servers (NewRunCA) and the remote shards and their
// orchestrator (internal/shard).
type CA struct {
	Cert *x509.Certificate
	DER  []byte // Cert, DER-encoded
	key  crypto.Signer
	typ  Key
}

// NewCA makes an ECDSA P-256 CA named name, valid from an hour ago (clock
// skew between hosts) for validity.
func NewCA(name string, validity time.Duration) (*CA, error) {
	return newCA(name, validity, KeyECDSAP256)
}

// newCA is NewCA with a key of type typ; the certificates it issues have
// keys of the same type.
func newCA(name string, validity time.Duration, typ Key) (*CA, error) {
	key, err := typ.generate()
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, DER: der, key: key, typ: typ}, nil
}

// Issue signs a new key's certificate for tmpl's names and usages, with a
// fresh serial number and the CA's validity; it returns the certificate
// and the PKCS #8 private key, DER-encoded. The key is of the CA's type
// (ECDSA P-256 for NewCA's).
func (ca *CA) Issue(tmpl x509.Certificate) (certDER, keyDER []byte, err error) {
	key, err := ca.typ.generate()
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore, tmpl.NotAfter = ca.Cert.NotBefore, ca.Cert.NotAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if _, isRSA := key.(*rsa.PrivateKey); isRSA {
		tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment // TLS 1.2's RSA key exchange suites
	}
	if certDER, err = x509.CreateCertificate(rand.Reader, &tmpl, ca.Cert, key.Public(), ca.key); err != nil {
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
func NewRunCA(dir string) (RunCA, error) { return NewRunCAKey(dir, KeyECDSAP256) }

// NewRunCAKey is NewRunCA with keys of type key, CA and server alike (an
// RSA server certificate signed by an RSA CA, as public CAs chain them).
func NewRunCAKey(dir string, key Key) (RunCA, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return RunCA{}, fmt.Errorf("tls: run CA: %w", err)
	}
	ca, err := newCA("wsplan run CA ("+string(key)+")", RunCAValidity, key)
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

// ClientOptions are how a client's TLS connections to one target verify
// the server and what they offer. They are plain data: a client shard
// gets them as JSON.
type ClientOptions struct {
	// CAFile is a PEM bundle of the CAs to trust; "" = the host's roots.
	CAFile string `json:",omitempty"`
	// ServerName is the SNI sent and the name verified; required unless
	// InsecureSkipVerify (the event-loop client, internal/client, fills in
	// the target's host). An IP literal is verified against the
	// certificate's IP SANs and sends no SNI.
	ServerName string `json:",omitempty"`
	// InsecureSkipVerify accepts any certificate (the handshake still
	// runs); default false.
	InsecureSkipVerify bool `json:",omitempty"`
	// SessionResumption shares one session cache over every connection
	// made with the config (TLS 1.2 tickets, TLS 1.3 PSK), so that later
	// handshakes resume; default false: every handshake is a full one.
	SessionResumption bool `json:",omitempty"`
	// MaxVersion is the highest TLS version offered (tls.VersionTLS12 or
	// tls.VersionTLS13); 0 = TLS 1.3.
	MaxVersion uint16 `json:",omitempty"`
	// Groups are the key exchange groups offered (GroupNames), a set:
	// crypto/tls offers them in its own order; nil = crypto/tls's default
	// offer.
	Groups []string `json:",omitempty"`
}

// ClientConfig returns the client TLS configuration of a wss target. TLS
// 1.2 is the minimum. ALPN offers http/1.1, the protocol a WebSocket
// upgrade speaks (so that a server that also serves h2 does not pick it).
// Unless o.InsecureSkipVerify, the server's certificate chain is verified
// against o.CAFile's CAs for o.ServerName by a Verifier shared by every
// connection made with the config: each distinct chain is verified once
// and its verdict reused for the exact same bytes (see Verifier).
func ClientConfig(o ClientOptions) (*tls.Config, error) {
	cfg := &tls.Config{
		ServerName:         o.ServerName,
		InsecureSkipVerify: o.InsecureSkipVerify,
		MinVersion:         tls.VersionTLS12,
		MaxVersion:         o.MaxVersion,
		NextProtos:         []string{"http/1.1"},
	}
	if o.MaxVersion != 0 && o.MaxVersion != tls.VersionTLS12 && o.MaxVersion != tls.VersionTLS13 {
		return nil, fmt.Errorf("tls: max version %#04x: want TLS 1.2 or 1.3", o.MaxVersion)
	}
	prefs, err := curvePreferences(o.Groups, o.MaxVersion)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	cfg.CurvePreferences = prefs
	if o.CAFile != "" {
		pemBytes, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("tls: ca_file %s: %w", o.CAFile, errNoCerts)
		}
		cfg.RootCAs = pool
	}
	if o.SessionResumption {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	}
	if !o.InsecureSkipVerify {
		NewVerifier(cfg.RootCAs, o.ServerName).install(cfg)
	}
	return cfg, nil
}

var errNoCerts = errors.New("no PEM certificate in it")
