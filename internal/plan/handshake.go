package plan

import (
	"crypto/tls"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/wstls"
)

// tls: and compression: are a switch (true, false) or a mapping of
// settings: each a decl.Shorthand whose mapping is its declaration
// (TLSConfig, Compression), decoded, bounded and described from it like
// any other; the switch is the only form they decode themselves.

// written is implemented by the keys that must know they were written
// whatever their form: the loader calls it before decoding either.
type written interface{ markWritten() }

// toggle is the switch of tls: and compression:, and what the key was
// written as.
type toggle struct {
	set     bool // written
	on      bool // true, or a mapping
	mapping bool // a mapping
}

func (t *toggle) markWritten() { t.set, t.on, t.mapping = true, true, true }

// unmarshalSwitch decodes the switch form: true or false; keys are the
// mapping form's, for the message.
func (t *toggle) unmarshalSwitch(n *yaml.Node, keys string) error {
	t.mapping = false
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return fmt.Errorf("want true, false or a mapping (%s), got %s", keys, describe(n))
	}
	return n.Decode(&t.on)
}

// Compression is the mapping form of `compression:`: the parameters of
// the permessage-deflate offer (RFC 7692).
type Compression struct {
	ClientNoContextTakeover bool `yaml:"client_no_context_takeover" doc:"the client compresses each message on its own; default false"`
	ServerNoContextTakeover bool `yaml:"server_no_context_takeover" doc:"ask the server to compress each message on its own; default false"`
	ClientMaxWindowBits     *int `yaml:"client_max_window_bits" min:"8" max:"15" doc:"the client's LZ77 window; default: offered without a value (the server may pick)"`
	ServerMaxWindowBits     *int `yaml:"server_max_window_bits" min:"8" max:"15" doc:"ask the server for at most this window; default: not asked (15)"`
}

// CompressionKey is `compression:` as written: true, false, or a mapping
// of offer parameters.
type CompressionKey struct {
	Compression `yaml:",inline"`
	toggle
}

// UnmarshalShort implements decl.Shorthand: true or false.
func (c *CompressionKey) UnmarshalShort(n *yaml.Node) error { return c.unmarshalSwitch(n, keyList(c)) }

// Shorten implements decl.Shorthand: the switch, when no parameter is set.
func (c *CompressionKey) Shorten() (any, bool) { return c.on, decl.OnlySet(c) }

// UnmarshalYAML decodes either form (decl.Unmarshal).
func (c *CompressionKey) UnmarshalYAML(n *yaml.Node) error {
	c.markWritten()
	return decl.Unmarshal(n, c)
}

// params is the offer: nil when compression is off.
func (c *CompressionKey) params() *pmdeflate.Params {
	if !c.on {
		return nil
	}
	p := &pmdeflate.Params{ClientNoContextTakeover: c.ClientNoContextTakeover, ServerNoContextTakeover: c.ServerNoContextTakeover}
	if b := c.ClientMaxWindowBits; b != nil {
		p.ClientMaxWindowBits = *b
	}
	if b := c.ServerMaxWindowBits; b != nil {
		p.ServerMaxWindowBits = *b
	}
	return p
}

// TLSConfig is the mapping form of `tls:`: how the client verifies the
// server and what it offers. A preset given `tls: true` (or this mapping)
// is served over TLS with a certificate wsplan makes for the run, and the
// client trusts only that CA unless ca_file says otherwise.
type TLSConfig struct {
	CAFile             string     `yaml:"ca_file" doc:"PEM CA bundle to trust; default: the system roots (url targets) or the run's CA (presets)"`
	ServerName         string     `yaml:"server_name" doc:"SNI and the name verified; default: the URL's host"`
	InsecureSkipVerify bool       `yaml:"insecure_skip_verify" doc:"accept any certificate (measures TLS cost, proves nothing about identity); default false"`
	SessionResumption  bool       `yaml:"session_resumption" doc:"reuse TLS sessions across connections (tickets); default false: every handshake is full"`
	MaxVersion         TLSVersion `yaml:"max_version" doc:"the highest TLS version the client offers: \"1.2\" or \"1.3\"; default \"1.3\""`
	Certificate        CertKey    `yaml:"certificate" doc:"key type of the certificate wsplan makes for a preset it serves with TLS (and of its CA); default ecdsa-p256"`
	Groups             TLSGroups  `yaml:"groups" doc:"key exchange groups the client offers (a set: crypto/tls offers them in its own order); default crypto/tls's offer, the ML-KEM hybrids first as current browsers make it; e.g. [x25519] for clients without ML-KEM"`
}

// String lists the settings given, as key=value in the mapping's order
// (wsplan validate prints it).
func (c TLSConfig) String() string {
	var parts []string
	for _, f := range decl.Fields(reflect.ValueOf(&c)) {
		if f.Value.IsZero() {
			continue
		}
		v := decl.Show(f.Value)
		if g, ok := f.Value.Interface().(TLSGroups); ok {
			v = strings.Join(g, ",")
		}
		parts = append(parts, f.Key+"="+v)
	}
	return strings.Join(parts, " ")
}

// TLSKey is `tls:` as written: true, false, or a mapping of TLSConfig's
// keys.
type TLSKey struct {
	TLSConfig `yaml:",inline"`
	toggle
}

// UnmarshalShort implements decl.Shorthand: true or false.
func (t *TLSKey) UnmarshalShort(n *yaml.Node) error { return t.unmarshalSwitch(n, keyList(t)) }

// Shorten implements decl.Shorthand: the switch, when no setting is given.
func (t *TLSKey) Shorten() (any, bool) { return t.on, decl.OnlySet(t) }

// UnmarshalYAML decodes either form (decl.Unmarshal).
func (t *TLSKey) UnmarshalYAML(n *yaml.Node) error {
	t.markWritten()
	return decl.Unmarshal(n, t)
}

// config is the client's TLS settings: nil unless written as a mapping.
func (t *TLSKey) config() *TLSConfig {
	if !t.mapping {
		return nil
	}
	c := t.TLSConfig
	return &c
}

// keyList lists the keys of a mapping form, for messages.
func keyList(v any) string { return strings.Join(decl.Keys(reflect.TypeOf(v)), ", ") }

// TLSVersion is `tls.max_version`: "1.2" or "1.3" (quoted or not), as
// crypto/tls's version number; 0 = 1.3.
type TLSVersion uint16

// tlsVersions are the versions max_version takes, by name.
var tlsVersions = []struct {
	name string
	v    TLSVersion
}{{"1.2", tls.VersionTLS12}, {"1.3", tls.VersionTLS13}}

// UnmarshalYAML takes a version's name.
func (v *TLSVersion) UnmarshalYAML(n *yaml.Node) error {
	for _, x := range tlsVersions {
		if n.Kind == yaml.ScalarNode && n.Value == x.name {
			*v = x.v
			return nil
		}
	}
	return fmt.Errorf(`want "1.2" or "1.3", got %s`, describe(n))
}

// String is the version's name.
func (v TLSVersion) String() string { return strings.TrimPrefix(tls.VersionName(uint16(v)), "TLS ") }

// JSONSchema states the names, for package schema.
func (TLSVersion) JSONSchema() map[string]any {
	return map[string]any{"enum": []any{"1.2", "1.3", 1.2, 1.3}}
}

// CertKey is `tls.certificate`: a key type of the run's CA (wstls.Keys).
type CertKey string

// Values implements decl.Enum.
func (CertKey) Values() []string {
	out := make([]string, len(wstls.Keys))
	for i, k := range wstls.Keys {
		out[i] = string(k)
	}
	return out
}

// TLSGroups is `tls.groups`: a list of key exchange groups, or one;
// checked against max_version once the mapping is read (checkTLS).
type TLSGroups []string

// UnmarshalYAML takes a group's name or a list of them.
func (g *TLSGroups) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*g = TLSGroups{n.Value}
		return nil
	}
	var names []string
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 || n.Decode(&names) != nil {
		got := describe(n)
		if n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
			got = "none"
		}
		return fmt.Errorf("want a list of key exchange groups (%s), got %s", strings.Join(wstls.GroupNames(), ", "), got)
	}
	*g = names
	return nil
}

// JSONSchema states the names, for package schema.
func (TLSGroups) JSONSchema() map[string]any {
	names := make([]any, 0, len(wstls.GroupNames()))
	for _, n := range wstls.GroupNames() {
		names = append(names, n)
	}
	item := map[string]any{"enum": names}
	return map[string]any{"anyOf": []any{item, map[string]any{"type": "array", "minItems": 1, "items": item}}}
}

// checkTLS checks what the declaration of tls: cannot say: the groups
// against max_version.
func (l *loader) checkTLS(c *TLSConfig, path string) {
	if c == nil || len(c.Groups) == 0 {
		return
	}
	if err := wstls.CheckGroups(c.Groups, uint16(c.MaxVersion)); err != nil {
		l.fieldErr(path+".groups", "%s", strings.TrimPrefix(err.Error(), "groups: "))
	}
}
