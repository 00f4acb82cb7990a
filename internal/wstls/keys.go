package wstls

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"hash"

	"golang.org/x/crypto/chacha20poly1305"
)

// suite describes the record protection of a cipher suite the fast path
// implements: every AEAD suite of TLS 1.3 and the ECDHE/RSA AEAD suites of
// TLS 1.2. Any other suite (CBC) keeps crypto/tls as the record layer.
type suite struct {
	keyLen   int              // AEAD key bytes
	ivLen    int              // TLS 1.2 fixed IV bytes (4 for GCM, 12 for ChaCha20); TLS 1.3 always 12
	hash     func() hash.Hash // HKDF (1.3) or PRF (1.2) hash
	hashLen  int              // hash's output bytes: TLS 1.3 traffic secrets' length
	chacha   bool             // ChaCha20-Poly1305, else AES-GCM
	explicit bool             // TLS 1.2 GCM: an 8-byte explicit nonce leads each record
}

// The suites of the fast path; sessions point at them.
var (
	suiteAES128SHA256 = suite{keyLen: 16, ivLen: 12, hash: sha256.New, hashLen: 32}
	suiteAES256SHA384 = suite{keyLen: 32, ivLen: 12, hash: sha512.New384, hashLen: 48}
	suiteChaChaSHA256 = suite{keyLen: 32, ivLen: 12, hash: sha256.New, hashLen: 32, chacha: true}
	suite12AES128GCM  = suite{keyLen: 16, ivLen: 4, hash: sha256.New, hashLen: 32, explicit: true}
	suite12AES256GCM  = suite{keyLen: 32, ivLen: 4, hash: sha512.New384, hashLen: 48, explicit: true}
	suite12ChaCha     = suite{keyLen: 32, ivLen: 12, hash: sha256.New, hashLen: 32, chacha: true}
)

// suiteFor returns the fast-path description of a negotiated cipher suite.
func suiteFor(version, id uint16) (*suite, bool) {
	switch id {
	case tls.TLS_AES_128_GCM_SHA256:
		return &suiteAES128SHA256, version == tls.VersionTLS13
	case tls.TLS_AES_256_GCM_SHA384:
		return &suiteAES256SHA384, version == tls.VersionTLS13
	case tls.TLS_CHACHA20_POLY1305_SHA256:
		return &suiteChaChaSHA256, version == tls.VersionTLS13
	case tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_128_GCM_SHA256:
		return &suite12AES128GCM, version == tls.VersionTLS12
	case tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, tls.TLS_RSA_WITH_AES_256_GCM_SHA384:
		return &suite12AES256GCM, version == tls.VersionTLS12
	case tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256:
		return &suite12ChaCha, version == tls.VersionTLS12
	}
	return nil, false
}

// newAEAD returns the record cipher for key.
func (s *suite) newAEAD(key []byte) (cipher.AEAD, error) {
	if s.chacha {
		return chacha20poly1305.New(key)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// The labels of TLS 1.3's HKDF-Expand-Label that the record layer uses,
// with their "tls13 " prefix.
var (
	labelKey    = []byte("tls13 key")
	labelIV     = []byte("tls13 iv")
	labelUpdate = []byte("tls13 traffic upd")
)

// expandLabel is TLS 1.3's HKDF-Expand-Label (RFC 8446 §7.1) with an empty
// context, for n at most the hash's size: HKDF-Expand's first block,
// HMAC(secret, info || 0x01), cut to n bytes. mac is an HMAC keyed with
// the secret; one serves every label of a secret.
func expandLabel(mac hash.Hash, label []byte, n int) []byte {
	mac.Reset()
	hdr := [3]byte{byte(n >> 8), byte(n), byte(len(label))}
	mac.Write(hdr[:])
	mac.Write(label)
	tail := [2]byte{0, 1} // empty context; HKDF's block counter
	mac.Write(tail[:])
	return mac.Sum(nil)[:n]
}

// trafficKeys13 derives a TLS 1.3 record key and IV from a traffic secret.
func trafficKeys13(s *suite, secret []byte) (key, iv []byte, err error) {
	mac := hmac.New(s.hash, secret)
	return expandLabel(mac, labelKey, s.keyLen), expandLabel(mac, labelIV, 12), nil
}

// nextSecret13 is the KeyUpdate step: application_traffic_secret_N+1.
func nextSecret13(s *suite, secret []byte) ([]byte, error) {
	return expandLabel(hmac.New(s.hash, secret), labelUpdate, s.hashLen), nil
}

// prf12 is the TLS 1.2 PRF (RFC 5246 §5): P_hash(secret, label + seed).
func prf12(h func() hash.Hash, secret []byte, label string, seed []byte, n int) []byte {
	ls := append([]byte(label), seed...)
	out := make([]byte, 0, n)
	mac := hmac.New(h, secret)
	mac.Write(ls)
	a := mac.Sum(nil) // A(1)
	for len(out) < n {
		mac.Reset()
		mac.Write(a)
		mac.Write(ls)
		out = mac.Sum(out)
		mac.Reset()
		mac.Write(a)
		a = mac.Sum(a[:0])
	}
	return out[:n]
}

// keyBlock12 derives the TLS 1.2 client and server write keys and IVs
// (RFC 5246 §6.3; AEAD suites have no MAC keys).
func keyBlock12(s *suite, master, clientRandom, serverRandom []byte) (ck, sk, civ, siv []byte) {
	seed := append(append([]byte{}, serverRandom...), clientRandom...)
	kb := prf12(s.hash, master, "key expansion", seed, 2*s.keyLen+2*s.ivLen)
	ck, kb = kb[:s.keyLen], kb[s.keyLen:]
	sk, kb = kb[:s.keyLen], kb[s.keyLen:]
	civ, kb = kb[:s.ivLen], kb[s.ivLen:]
	siv = kb[:s.ivLen]
	return
}

// keyLog collects the secrets crypto/tls logs for one handshake, in NSS key
// log format ("LABEL <client random> <secret>\n"), passing every line on to
// a KeyLogWriter the caller configured. The secrets are decoded into its
// own arrays: a handshake's key log allocates nothing.
type keyLog struct {
	next                 interface{ Write([]byte) (int, error) }
	master               []byte // TLS 1.2
	clientApp, serverApp []byte // TLS 1.3 *_TRAFFIC_SECRET_0
	buf                  [3][maxSecret]byte
}

// maxSecret is the longest secret a key log line carries: a TLS 1.2
// master secret, a TLS 1.3 secret of SHA-384.
const maxSecret = 48

// Write parses one key log line.
func (k *keyLog) Write(line []byte) (int, error) {
	if k.next != nil {
		if _, err := k.next.Write(line); err != nil {
			return 0, err
		}
	}
	label, rest, _ := bytes.Cut(bytes.TrimSpace(line), []byte{' '})
	_, secretHex, ok := bytes.Cut(rest, []byte{' '})
	var dst *[]byte
	var buf *[maxSecret]byte
	switch string(label) {
	case "CLIENT_RANDOM":
		dst, buf = &k.master, &k.buf[0]
	case "CLIENT_TRAFFIC_SECRET_0":
		dst, buf = &k.clientApp, &k.buf[1]
	case "SERVER_TRAFFIC_SECRET_0":
		dst, buf = &k.serverApp, &k.buf[2]
	default:
		return len(line), nil // a handshake secret: not needed
	}
	n := hex.DecodedLen(len(secretHex))
	if !ok || n == 0 || n > maxSecret {
		return 0, errors.New("wstls: bad key log line")
	}
	if _, err := hex.Decode(buf[:n], secretHex); err != nil {
		return 0, errors.New("wstls: bad key log line")
	}
	*dst = buf[:n]
	return len(line), nil
}
