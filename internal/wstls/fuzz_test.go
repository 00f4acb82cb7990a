package wstls

import (
	"crypto/tls"
	"testing"
)

// FuzzNext feeds arbitrary bytes, in arbitrary pieces, to an established
// session: it must fail cleanly or return plaintext, never panic or read
// out of bounds.
func FuzzNext(f *testing.F) {
	good := loopSession(f, tls.VersionTLS13, tls.TLS_AES_128_GCM_SHA256)
	rec, err := good.Seal(nil, []byte("hello, records"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec, uint8(7), true)
	f.Add(rec, uint8(0), false)
	f.Add([]byte{23, 3, 3, 0, 0}, uint8(1), true)
	f.Add([]byte{23, 3, 3, 0xff, 0xff, 1, 2, 3}, uint8(3), false)
	f.Add([]byte{21, 3, 3, 0, 2, 1, 0}, uint8(2), false)
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, v13 bool) {
		s := loopSession(t, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)
		if v13 {
			s = loopSession(t, tls.VersionTLS13, tls.TLS_AES_128_GCM_SHA256)
		}
		step := int(chunk) + 1
		for off := 0; off < len(data); off += step {
			s.Feed(data[off:min(off+step, len(data))])
			for {
				p, err := s.Next()
				if err != nil {
					return
				}
				if p == nil {
					break
				}
			}
		}
	})
}
