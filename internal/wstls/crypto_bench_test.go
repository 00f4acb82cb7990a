package wstls

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/mlkem"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"testing"
)

// BenchmarkHandshakeCrypto measures the public-key operations each side
// of a full TLS handshake must do with crypto/tls's defaults — the floor
// under any client that does what real clients do (a fresh key share per
// handshake, the server's handshake signature checked every time):
//
//   - key exchange, TLS 1.3 (X25519MLKEM768, Go's and browsers' default):
//     the client makes an ML-KEM-768 key and an X25519 key, then
//     decapsulates and computes the X25519 secret; the server parses the
//     encapsulation key, encapsulates, and makes and uses its own X25519
//     key. TLS 1.2: X25519 on both sides.
//   - authentication: the server signs the handshake (ECDSA P-256 or
//     RSA-PSS 2048), the client verifies that signature; verifying the
//     certificate chain is a second verification the client's Verifier
//     does once per distinct chain.
//
// go test ./internal/wstls -run '^$' -bench HandshakeCrypto
func BenchmarkHandshakeCrypto(b *testing.B) {
	dk, err := mlkem.GenerateKey768()
	if err != nil {
		b.Fatal(err)
	}
	ek := dk.EncapsulationKey().Bytes()
	_, ct := dk.EncapsulationKey().Encapsulate()
	peer, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	h := sha256.Sum256([]byte("transcript"))
	ecSig, err := ecdsa.SignASN1(rand.Reader, ec, h[:])
	if err != nil {
		b.Fatal(err)
	}
	pss := &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: crypto.SHA256}
	rsaSig, err := rsa.SignPSS(rand.Reader, rk, crypto.SHA256, h[:], pss)
	if err != nil {
		b.Fatal(err)
	}
	var (
		xk, _  = ecdh.X25519().GenerateKey(rand.Reader)
		pk, _  = ecdh.P256().GenerateKey(rand.Reader)
		ppk, _ = ecdh.P256().GenerateKey(rand.Reader)
	)
	must := func(_ any, err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name string
		op   func()
	}{
		// Every operation on its own, so that what a client could skip by
		// reusing its key shares (the key generations) shows apart from
		// what it cannot (decapsulating, the shared secrets, verifying).
		{"client/mlkem768-keygen", func() { must(mlkem.GenerateKey768()) }},
		{"client/mlkem768-decaps", func() { must(dk.Decapsulate(ct)) }},
		{"server/mlkem768-encaps", func() {
			k, err := mlkem.NewEncapsulationKey768(ek)
			if err != nil {
				b.Fatal(err)
			}
			k.Encapsulate()
		}},
		{"both/x25519-keygen", func() { must(ecdh.X25519().GenerateKey(rand.Reader)) }},
		{"both/x25519-ecdh", func() { must(xk.ECDH(peer.PublicKey())) }},
		{"both/p256-keygen", func() { must(ecdh.P256().GenerateKey(rand.Reader)) }},
		{"both/p256-ecdh", func() { must(pk.ECDH(ppk.PublicKey())) }},
		{"client/ecdsa-p256-verify", func() {
			if !ecdsa.VerifyASN1(&ec.PublicKey, h[:], ecSig) {
				b.Fatal("bad signature")
			}
		}},
		{"server/ecdsa-p256-sign", func() {
			if _, err := ecdsa.SignASN1(rand.Reader, ec, h[:]); err != nil {
				b.Fatal(err)
			}
		}},
		{"client/rsa2048-pss-verify", func() {
			if err := rsa.VerifyPSS(&rk.PublicKey, crypto.SHA256, h[:], rsaSig, pss); err != nil {
				b.Fatal(err)
			}
		}},
		{"server/rsa2048-pss-sign", func() {
			if _, err := rsa.SignPSS(rand.Reader, rk, crypto.SHA256, h[:], pss); err != nil {
				b.Fatal(err)
			}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.op()
			}
		})
	}
}
