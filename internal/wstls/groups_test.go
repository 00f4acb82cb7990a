package wstls

import (
	"crypto/tls"
	"slices"
	"testing"
)

func TestGroups(t *testing.T) {
	for _, tc := range []struct {
		names []string
		max   uint16
		want  []tls.CurveID
		err   string
	}{
		{nil, 0, nil, ""},
		{[]string{"x25519", "p256"}, 0, []tls.CurveID{tls.X25519, tls.CurveP256}, ""},
		{[]string{"x25519mlkem768"}, tls.VersionTLS13, []tls.CurveID{tls.X25519MLKEM768}, ""},
		{[]string{"x25519mlkem768", "p521"}, tls.VersionTLS12, []tls.CurveID{tls.X25519MLKEM768, tls.CurveP521}, ""},
		{[]string{"x25519mlkem768"}, tls.VersionTLS12, nil, "groups: x25519mlkem768: TLS 1.3's only, and max_version is 1.2"},
		{[]string{"X25519"}, 0, nil, `groups: unknown group "X25519": want x25519mlkem768, secp256r1mlkem768, secp384r1mlkem1024, x25519, p256, p384, p521`},
	} {
		got, err := curvePreferences(tc.names, tc.max)
		if msg := ""; err != nil {
			msg = err.Error()
			if msg != tc.err {
				t.Errorf("%v: error %q, want %q", tc.names, msg, tc.err)
			}
		} else if tc.err != "" {
			t.Errorf("%v: no error, want %q", tc.names, tc.err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.names, got, tc.want)
		}
	}
	for id, want := range map[tls.CurveID]string{0: "", tls.X25519MLKEM768: "x25519mlkem768", tls.SecP256r1MLKEM768: "secp256r1mlkem768", tls.CurveP384: "p384", 0x1234: "CurveID(4660)"} {
		if got := GroupName(id); got != want {
			t.Errorf("GroupName(%d) = %q, want %q", id, got, want)
		}
	}
}
