package wstls

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// group is a key exchange group a client may offer, by the name plans use.
type group struct {
	name  string
	id    tls.CurveID
	tls13 bool // TLS 1.3 only
}

// groups are the groups ClientOptions.Groups takes, in crypto/tls's own
// order of preference. Groups is a set: crypto/tls ignores the order it is
// given (tls.Config.CurvePreferences) and sends its key share for the
// first group of this order that it offers. The default offer is
// crypto/tls's (Go 1.26: the ML-KEM hybrids, which current browsers offer,
// then x25519, p256, p384, p521). Offering fewer models a client
// population (TLS stacks from before 2024 offer no ML-KEM) and changes
// both sides' cost per handshake: the server does the key exchange chosen
// (BenchmarkHandshakeCrypto).
var groups = []group{
	{"x25519mlkem768", tls.X25519MLKEM768, true},
	{"secp256r1mlkem768", tls.SecP256r1MLKEM768, true},
	{"secp384r1mlkem1024", tls.SecP384r1MLKEM1024, true},
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
	if i := slices.IndexFunc(groups, func(g group) bool { return g.id == id }); i >= 0 {
		return groups[i].name
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
// preferences; nil for none (crypto/tls's default). A TLS 1.2 client
// (maxVersion) needs a group TLS 1.2 has.
func curvePreferences(names []string, maxVersion uint16) ([]tls.CurveID, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out := make([]tls.CurveID, 0, len(names))
	tls12 := false
	for _, n := range names {
		i := slices.IndexFunc(groups, func(g group) bool { return g.name == n })
		if i < 0 {
			return nil, fmt.Errorf("groups: unknown group %q: want %s", n, strings.Join(GroupNames(), ", "))
		}
		out = append(out, groups[i].id)
		tls12 = tls12 || !groups[i].tls13
	}
	if maxVersion == tls.VersionTLS12 && !tls12 {
		return nil, fmt.Errorf("groups: %s: TLS 1.3's only, and max_version is 1.2", strings.Join(names, ", "))
	}
	return out, nil
}
