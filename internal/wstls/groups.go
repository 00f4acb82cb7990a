package wstls

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// Key exchange groups a client may offer (ClientOptions.Groups), by the
// names plans use. The default offer is crypto/tls's: x25519mlkem768
// (TLS 1.3 only, what current browsers offer), x25519, p256, p384.
// Offering fewer models a client population (older clients and most
// mobile TLS stacks offer x25519 first, with no ML-KEM) and changes both
// sides' cost per handshake: the server does the key exchange the client
// chose (BenchmarkHandshakeCrypto).
var groups = []struct {
	name  string
	id    tls.CurveID
	tls13 bool // TLS 1.3 only
}{
	{"x25519mlkem768", tls.X25519MLKEM768, true},
	{"x25519", tls.X25519, false},
	{"p256", tls.CurveP256, false},
	{"p384", tls.CurveP384, false},
	{"p521", tls.CurveP521, false},
}

// GroupNames lists the group names ClientOptions.Groups takes.
func GroupNames() []string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = g.name
	}
	return out
}

// GroupName is the name of a negotiated key exchange group ("" for none:
// a resumed TLS 1.2 session makes no key exchange).
func GroupName(id tls.CurveID) string {
	if id == 0 {
		return ""
	}
	for _, g := range groups {
		if g.id == id {
			return g.name
		}
	}
	return id.String()
}

// CheckGroups reports whether names are groups a client of at most
// maxVersion (0 = TLS 1.3) can offer.
func CheckGroups(names []string, maxVersion uint16) error {
	_, err := curvePreferences(names, maxVersion)
	return err
}

// curvePreferences turns the names of groups into crypto/tls's
// preferences, in the order given; nil for none (crypto/tls's default).
// A TLS 1.2 client (maxVersion) needs a group TLS 1.2 has.
func curvePreferences(names []string, maxVersion uint16) ([]tls.CurveID, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out := make([]tls.CurveID, 0, len(names))
	tls12 := false
next:
	for _, n := range names {
		for _, g := range groups {
			if g.name == n {
				out = append(out, g.id)
				tls12 = tls12 || !g.tls13
				continue next
			}
		}
		return nil, fmt.Errorf("groups: unknown group %q: want %s", n, strings.Join(GroupNames(), ", "))
	}
	if maxVersion == tls.VersionTLS12 && !tls12 {
		return nil, fmt.Errorf("groups: %s: TLS 1.3's only, and max_version is 1.2", strings.Join(names, ", "))
	}
	return out, nil
}
