package wstls

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha512"
	"hash"
	"testing"
)

// refExpandLabel is HKDF-Expand-Label (RFC 8446 §7.1, empty context)
// through crypto/hkdf.
func refExpandLabel(h func() hash.Hash, secret []byte, label string, n int) []byte {
	full := "tls13 " + label
	info := append([]byte{byte(n >> 8), byte(n), byte(len(full))}, full...)
	info = append(info, 0)
	out, err := hkdf.Expand(h, secret, string(info), n)
	if err != nil {
		panic(err)
	}
	return out
}

// TestExpandLabel: the one-block HKDF-Expand-Label the record layer uses
// gives crypto/hkdf's bytes for every suite's key, IV and KeyUpdate
// secret, and differs for another secret or label.
func TestExpandLabel(t *testing.T) {
	for _, st := range []*suite{&suiteAES128SHA256, &suiteAES256SHA384, &suiteChaChaSHA256} {
		secret := bytes.Repeat([]byte{0x5a}, st.hashLen)
		key, iv, err := trafficKeys13(st, secret)
		if err != nil {
			t.Fatal(err)
		}
		next, err := nextSecret13(st, secret)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			label string
			n     int
			got   []byte
		}{{"key", st.keyLen, key}, {"iv", 12, iv}, {"traffic upd", st.hashLen, next}} {
			want := refExpandLabel(st.hash, secret, tc.label, tc.n)
			if !bytes.Equal(tc.got, want) {
				t.Errorf("hash %d, %s: %x, want %x", st.hashLen, tc.label, tc.got, want)
			}
			other := refExpandLabel(st.hash, append([]byte{1}, secret[1:]...), tc.label, tc.n)
			if bytes.Equal(tc.got, other) {
				t.Errorf("hash %d, %s: the same for another secret", st.hashLen, tc.label)
			}
		}
		if bytes.Equal(key[:12], iv) {
			t.Errorf("hash %d: key and IV agree", st.hashLen)
		}
	}
	// Two labels of one HMAC: the second is not disturbed by the first.
	mac := hmac.New(sha512.New384, make([]byte, 48))
	_ = expandLabel(mac, labelKey, 32)
	if got, want := expandLabel(mac, labelIV, 12), refExpandLabel(sha512.New384, make([]byte, 48), "iv", 12); !bytes.Equal(got, want) {
		t.Errorf("second label %x, want %x", got, want)
	}
}
