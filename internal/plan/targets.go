package plan

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/textproto"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/wstls"
)

// Target is how the client reaches and greets a server: the handshake
// keys of `defaults:` and of each server, and the TLS settings of a
// wss:// target or a preset served with TLS.
type Target struct {
	// Headers are, after Load, defaults' merged under the server's own,
	// names canonical.
	Headers      map[string]string `yaml:"headers" doc:"extra upgrade request headers (a server's own win over defaults.headers); values may be ${env:NAME} secrets"`
	Subprotocols []string          `yaml:"subprotocols" doc:"offered in Sec-WebSocket-Protocol; the server must pick one of them"`
	Origin       string            `yaml:"origin" doc:"the Origin header; default none"`
	Protocol     *Protocol         `yaml:"protocol" doc:"what the server speaks over its messages: socketio, graphql-ws, mqtt, stomp, jsonrpc (a name, or a mapping with name and its settings); default raw WebSocket messages"`
	// TLSKey and CompressionKey are tls: and compression: as written (a
	// switch, or a mapping); Load resolves them into TLS, Compression and
	// Server.ServeTLS, which are what the engine reads.
	TLSKey         TLSKey         `yaml:"tls" doc:"client TLS settings, a mapping of ca_file, server_name, insecure_skip_verify, session_resumption (defaults.tls: for every server); a server's tls: true (or a mapping) also serves a preset over TLS with the run's certificate"`
	CompressionKey CompressionKey `yaml:"compression" doc:"the client offers permessage-deflate: true, false, or a mapping of client_no_context_takeover, server_no_context_takeover, client_max_window_bits, server_max_window_bits (defaults.compression: to every server); default: false, or true for a preset with options: {compression: true}; a server that declines fails its rows"`

	// TLS is the client's TLS settings (a server's over defaults'); nil =
	// plain ws:// (or the run's CA for a preset with tls: true).
	TLS *TLSConfig `yaml:"-"`
	// Compression is the permessage-deflate offer (a server's
	// compression: over defaults', false included); nil = not asked. A
	// built-in server whose options say compression: true is asked with
	// the zero Params even without it (see Server.Offer).
	Compression *pmdeflate.Params `yaml:"-"`
}

// resolve sets what the engine reads from the keys as written.
func (t *Target) resolve() {
	t.TLS, t.Compression = t.TLSKey.config, t.CompressionKey.params
}

// CompressionKey is `compression:` as written: true/false, or a mapping
// of permessage-deflate offer parameters.
type CompressionKey struct {
	set    bool
	params *pmdeflate.Params // nil = false
}

// JSONSchema describes the values UnmarshalYAML takes, for package schema.
func (CompressionKey) JSONSchema() map[string]any {
	flag := map[string]any{"type": "boolean"}
	bits := map[string]any{"type": "integer", "minimum": pmdeflate.MinWindowBits, "maximum": pmdeflate.MaxWindowBits}
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "boolean"},
		map[string]any{
			"type": "object",
			"properties": map[string]any{
				"client_no_context_takeover": described(flag, "the client compresses each message on its own; default false"),
				"server_no_context_takeover": described(flag, "ask the server to compress each message on its own; default false"),
				"client_max_window_bits":     described(bits, "the client's LZ77 window, 8-15; default: offered without a value (the server may pick)"),
				"server_max_window_bits":     described(bits, "ask the server for at most this window, 8-15; default: not asked (15)"),
			},
			"additionalProperties": false,
		},
	}}
}

// UnmarshalYAML takes true, false or a mapping of offer parameters.
func (c *CompressionKey) UnmarshalYAML(n *yaml.Node) error {
	c.set = true
	known := []string{"client_no_context_takeover", "server_no_context_takeover", "client_max_window_bits", "server_max_window_bits"}
	switch n.Kind {
	case yaml.ScalarNode:
		var on bool
		if err := decodeBool(n, &on); err != nil {
			return fmt.Errorf("want true, false or a mapping (%s), got %s", strings.Join(known, ", "), describe(n))
		}
		if on {
			c.params = &pmdeflate.Params{}
		}
		return nil
	case yaml.MappingNode:
		p := &pmdeflate.Params{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			var err error
			switch k.Value {
			case "client_no_context_takeover":
				err = decodeBool(v, &p.ClientNoContextTakeover)
			case "server_no_context_takeover":
				err = decodeBool(v, &p.ServerNoContextTakeover)
			case "client_max_window_bits":
				err = decodeBits(v, &p.ClientMaxWindowBits)
			case "server_max_window_bits":
				err = decodeBits(v, &p.ServerMaxWindowBits)
			default:
				return fmt.Errorf("line %d: %s", k.Line, unknownMsg("compression key", k.Value, known))
			}
			if err != nil {
				return fmt.Errorf("%s: %w", k.Value, err)
			}
		}
		c.params = p
		return nil
	}
	return fmt.Errorf("want true, false or a mapping, got %s", describe(n))
}

func decodeBits(n *yaml.Node, b *int) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return fmt.Errorf("want an integer between %d and %d, got %s", pmdeflate.MinWindowBits, pmdeflate.MaxWindowBits, describe(n))
	}
	if err := n.Decode(b); err != nil {
		return err
	}
	if *b < pmdeflate.MinWindowBits || *b > pmdeflate.MaxWindowBits {
		return fmt.Errorf("want an integer between %d and %d, got %d", pmdeflate.MinWindowBits, pmdeflate.MaxWindowBits, *b)
	}
	return nil
}

// Offer is the permessage-deflate offer the client makes to this server:
// its `compression:` (or defaults'), else the zero Params when the
// server is a built-in one whose options turn compression on, else nil.
func (s Server) Offer() *pmdeflate.Params {
	if s.Compression != nil {
		return s.Compression
	}
	if s.BuiltIn() && s.Values["compression"] == "true" {
		return &pmdeflate.Params{}
	}
	return nil
}

// TLSConfig is the mapping form of `tls:`: how the client verifies the
// server and what it offers. A preset given `tls: true` (or this mapping)
// is served over TLS with a certificate wsplan makes for the run, and the
// client trusts only that CA unless ca_file says otherwise.
type TLSConfig struct {
	CAFile             string   // `ca_file:` PEM CA bundle to trust; default: the system roots (url targets) or the run's CA (presets)
	ServerName         string   // `server_name:` SNI and the name verified; default: the URL's host
	InsecureSkipVerify bool     // `insecure_skip_verify:` accept any certificate (measures TLS cost, proves nothing about identity); default false
	SessionResumption  bool     // `session_resumption:` reuse TLS sessions across connections (tickets); default false: every handshake is full
	MaxVersion         uint16   // `max_version:` the highest TLS version offered, "1.2" or "1.3" (tls.VersionTLS12, 13); 0 = 1.3
	Certificate        string   // `certificate:` key type of the certificate wsplan makes for a preset: ecdsa-p256 (default) or rsa-2048
	Groups             []string // `groups:` key exchange groups offered, a set (wstls.GroupNames); default crypto/tls's offer
}

// String lists the settings given, as key=value in the mapping's order
// (wsplan validate prints it).
func (c TLSConfig) String() string {
	var parts []string
	add := func(key, value string, set bool) {
		if set {
			parts = append(parts, key+"="+value)
		}
	}
	add("ca_file", c.CAFile, c.CAFile != "")
	add("server_name", c.ServerName, c.ServerName != "")
	add("insecure_skip_verify", "true", c.InsecureSkipVerify)
	add("session_resumption", "true", c.SessionResumption)
	add("max_version", strings.TrimPrefix(tls.VersionName(c.MaxVersion), "TLS "), c.MaxVersion != 0)
	add("certificate", c.Certificate, c.Certificate != "")
	add("groups", strings.Join(c.Groups, ","), len(c.Groups) > 0)
	return strings.Join(parts, " ")
}

// tlsKeys are the keys of the `tls:` mapping, in the order errors and the
// schema list them.
var tlsKeys = []struct {
	name, doc string
	schema    map[string]any
	decode    func(n *yaml.Node, c *TLSConfig) error
}{
	{"ca_file", "PEM CA bundle to trust; default: the system roots (url targets) or the run's CA (presets)", schemaString,
		func(n *yaml.Node, c *TLSConfig) error { return n.Decode(&c.CAFile) }},
	{"server_name", "SNI and the name verified; default: the URL's host", schemaString,
		func(n *yaml.Node, c *TLSConfig) error { return n.Decode(&c.ServerName) }},
	{"insecure_skip_verify", "accept any certificate (measures TLS cost, proves nothing about identity); default false", schemaBool,
		func(n *yaml.Node, c *TLSConfig) error { return decodeBool(n, &c.InsecureSkipVerify) }},
	{"session_resumption", "reuse TLS sessions across connections (tickets); default false: every handshake is full", schemaBool,
		func(n *yaml.Node, c *TLSConfig) error { return decodeBool(n, &c.SessionResumption) }},
	{"max_version", `the highest TLS version the client offers: "1.2" or "1.3"; default "1.3"`, map[string]any{"enum": []any{"1.2", "1.3", 1.2, 1.3}},
		decodeTLSVersion},
	{"certificate", "key type of the certificate wsplan makes for a preset it serves with TLS (and of its CA): " + strings.Join(wstlsKeys(), " or ") + "; default ecdsa-p256", map[string]any{"enum": anySlice(wstlsKeys())},
		func(n *yaml.Node, c *TLSConfig) error {
			if err := n.Decode(&c.Certificate); err != nil {
				return err
			}
			if !slices.Contains(wstlsKeys(), c.Certificate) {
				return fmt.Errorf("want %s, got %q", strings.Join(wstlsKeys(), " or "), c.Certificate)
			}
			return nil
		}},
	{"groups", "key exchange groups the client offers (a set: crypto/tls offers them in its own order): " + strings.Join(wstls.GroupNames(), ", ") + "; default crypto/tls's offer, the ML-KEM hybrids first as current browsers make it; e.g. [x25519] for clients without ML-KEM",
		map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"enum": anySlice(wstls.GroupNames())}},
		decodeTLSGroups},
}

// decodeTLSGroups takes a list of group names (or one name) into Groups;
// wstls.CheckGroups checks them once the mapping is read.
func decodeTLSGroups(n *yaml.Node, c *TLSConfig) error {
	if n.Kind == yaml.ScalarNode {
		c.Groups = []string{n.Value}
		return nil
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return fmt.Errorf("want a list of key exchange groups (%s), got %s", strings.Join(wstls.GroupNames(), ", "), describe(n))
	}
	return n.Decode(&c.Groups)
}

var (
	schemaString = map[string]any{"type": []any{"string", "number"}}
	schemaBool   = map[string]any{"type": "boolean"}
)

// tlsKeyNames lists the `tls:` mapping's keys, for messages.
func tlsKeyNames() []string {
	names := make([]string, len(tlsKeys))
	for i, k := range tlsKeys {
		names[i] = k.name
	}
	return names
}

// wstlsKeys are the certificate key types a run's CA makes.
func wstlsKeys() []string {
	out := make([]string, len(wstls.Keys))
	for i, k := range wstls.Keys {
		out[i] = string(k)
	}
	return out
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// decodeTLSVersion takes "1.2" or "1.3" (quoted or not) into MaxVersion.
func decodeTLSVersion(n *yaml.Node, c *TLSConfig) error {
	if n.Kind == yaml.ScalarNode {
		switch n.Value {
		case "1.2":
			c.MaxVersion = tls.VersionTLS12
			return nil
		case "1.3":
			c.MaxVersion = tls.VersionTLS13
			return nil
		}
	}
	return fmt.Errorf(`want "1.2" or "1.3", got %s`, describe(n))
}

// URLTarget is one parsed `url:`.
type URLTarget struct {
	URL        string // as written
	TLS        bool   // wss://
	Addr       string // host:port dialed (the port defaulted from the scheme)
	Host       string // the Host header: host[:port] as written
	RequestURI string // path and query of the upgrade request
}

// TLSKey is `tls:` as written: true/false, or a mapping of TLSConfig's
// keys.
type TLSKey struct {
	set    bool
	on     bool
	config *TLSConfig
}

// JSONSchema describes the values UnmarshalYAML takes, for package schema.
func (TLSKey) JSONSchema() map[string]any {
	props := map[string]any{}
	for _, k := range tlsKeys {
		props[k.name] = described(k.schema, k.doc)
	}
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "boolean"},
		map[string]any{"type": "object", "properties": props, "additionalProperties": false},
	}}
}

// described returns a copy of s with a description.
func described(s map[string]any, doc string) map[string]any {
	out := map[string]any{"description": doc}
	for k, v := range s {
		out[k] = v
	}
	return out
}

// UnmarshalYAML takes true, false or a mapping of TLSConfig's keys.
func (t *TLSKey) UnmarshalYAML(n *yaml.Node) error {
	t.set = true
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() != "!!bool" {
			return fmt.Errorf("want true, false or a mapping (%s), got %s", strings.Join(tlsKeyNames(), ", "), describe(n))
		}
		return n.Decode(&t.on)
	case yaml.MappingNode:
		t.on = true
		c := &TLSConfig{}
	keys:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			for _, key := range tlsKeys {
				if key.name == k.Value {
					if err := key.decode(v, c); err != nil {
						return fmt.Errorf("%s: %w", k.Value, err)
					}
					continue keys
				}
			}
			return fmt.Errorf("line %d: %s", k.Line, unknownMsg("tls key", k.Value, tlsKeyNames()))
		}
		if err := wstls.CheckGroups(c.Groups, c.MaxVersion); err != nil {
			return err
		}
		t.config = c
		return nil
	}
	return fmt.Errorf("want true, false or a mapping, got %s", describe(n))
}

func decodeBool(n *yaml.Node, b *bool) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return fmt.Errorf("want true or false, got %s", describe(n))
	}
	return n.Decode(b)
}

// External reports whether the server is a url target: wsplan neither
// starts, signals nor stops it.
func (s Server) External() bool { return len(s.URLs) > 0 }

// Handshake headers wsplan writes itself: a plan sets them through their
// own keys (subprotocols:, origin:, compression) or not at all.
var reservedHeaders = map[string]string{
	"Host":                     "it comes from the URL",
	"Upgrade":                  "the client sets it",
	"Connection":               "the client sets it",
	"Sec-Websocket-Key":        "the client sets it",
	"Sec-Websocket-Version":    "the client sets it",
	"Sec-Websocket-Protocol":   "use subprotocols:",
	"Sec-Websocket-Extensions": "use compression",
	"Origin":                   "use origin:",
	"Content-Length":           "an upgrade request has no body",
	"Transfer-Encoding":        "an upgrade request has no body",
}

// checkTarget checks the handshake options of a server or of defaults
// (path is where they were written).
func (l *loader) checkTarget(t *Target, path string) {
	for k, v := range t.Headers {
		f := keyPath(path+".headers", k)
		switch {
		case !httpguts.ValidHeaderFieldName(k):
			l.fieldErr(f, "bad header name %q", k)
		case reservedHeaders[textproto.CanonicalMIMEHeaderKey(k)] != "":
			l.fieldErr(f, "%s cannot be set here: %s", textproto.CanonicalMIMEHeaderKey(k), reservedHeaders[textproto.CanonicalMIMEHeaderKey(k)])
		case !httpguts.ValidHeaderFieldValue(v):
			l.fieldErr(f, "bad header value: no line breaks or control characters")
		}
	}
	seen := map[string]bool{}
	for i, sp := range t.Subprotocols {
		f := indexPath(path+".subprotocols", i)
		switch {
		case !httpguts.ValidHeaderFieldName(sp): // a subprotocol is an HTTP token
			l.fieldErr(f, "bad subprotocol %q: want a token (letters, digits, ! # $ %% & ' * + - . ^ _ ` | ~)", sp)
		case seen[sp]:
			l.fieldErr(f, "duplicate subprotocol %q", sp)
		}
		seen[sp] = true
	}
	if t.Origin != "" && !httpguts.ValidHeaderFieldValue(t.Origin) {
		l.fieldErr(path+".origin", "bad origin %q", t.Origin)
	}
	if c := t.TLS; c != nil && c.CAFile != "" {
		if _, err := os.Stat(c.CAFile); err != nil {
			l.fieldErr(path+".tls.ca_file", "%v", err)
		}
	}
}

// mergeTarget puts the defaults under a server's own handshake options.
func mergeTarget(d Target, s Target) Target {
	out := s
	if len(d.Headers) > 0 {
		h := make(map[string]string, len(d.Headers)+len(s.Headers))
		for k, v := range d.Headers {
			h[textproto.CanonicalMIMEHeaderKey(k)] = v
		}
		for k, v := range s.Headers {
			h[textproto.CanonicalMIMEHeaderKey(k)] = v
		}
		out.Headers = h
	}
	if out.Subprotocols == nil {
		out.Subprotocols = d.Subprotocols
	}
	if out.Origin == "" {
		out.Origin = d.Origin
	}
	if out.Protocol == nil {
		out.Protocol = d.Protocol
	}
	if out.TLS == nil {
		out.TLS = d.TLS
	}
	if !s.CompressionKey.set {
		out.Compression = d.Compression
	}
	return out
}

// parseURLTarget parses one `url:` of a server. Its messages never quote
// the whole URL, which may hold a secret (the caller hides the pieces
// they quote when it does).
func parseURLTarget(raw string, allowRemote bool) (URLTarget, string) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the error without the URL
		}
		return URLTarget{}, "bad URL: " + err.Error()
	}
	t := URLTarget{URL: raw, Host: u.Host}
	switch u.Scheme {
	case "ws":
	case "wss":
		t.TLS = true
	default:
		return t, fmt.Sprintf("want a ws:// or wss:// URL, got %s:", u.Scheme)
	}
	if u.User != nil {
		return t, "credentials in the URL are not sent: use headers: {Authorization: ...} with ${env:NAME}"
	}
	if u.Fragment != "" {
		return t, "a WebSocket URL has no #fragment"
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return t, "no host"
	}
	if port == "" {
		port = "80"
		if t.TLS {
			port = "443"
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > MaxPort {
		return t, fmt.Sprintf("want a port between 1 and %d, got %q", MaxPort, port)
	}
	t.Addr = net.JoinHostPort(host, port)
	if a, err := netip.ParseAddr(host); err == nil {
		if !a.IsLoopback() && !allowRemote {
			return t, fmt.Sprintf("%s is not a loopback address: set defaults.allow_remote: true to use it", a)
		}
	} else if host != "localhost" && !allowRemote {
		return t, fmt.Sprintf("host %q is not loopback: set defaults.allow_remote: true to use it", host)
	}
	t.RequestURI = u.EscapedPath()
	if t.RequestURI == "" {
		t.RequestURI = "/"
	}
	if u.RawQuery != "" {
		t.RequestURI += "?" + u.RawQuery
	}
	return t, ""
}

// checkURLServer checks a url target: what it may not have (wsplan does not
// start it), its URLs and how its resources are read.
func (l *loader) checkURLServer(s *Server, base string, allowRemote bool) {
	if s.Framework != "" {
		l.fieldErr(base+".framework", "a url: server is already running: remove framework:")
	}
	if len(s.Options) > 0 {
		l.fieldErr(base+".options", "a url: server is already running: it takes no options")
	}
	if len(s.Command) > 0 {
		l.fieldErr(base+".command", "give url: or command:, not both")
	}
	if len(s.Addrs) > 0 {
		l.fieldErr(base+".addrs", "with url: the addresses come from the URLs")
	}
	if s.ServeTLS && s.TLS == nil {
		l.fieldErr(base+".tls", "tls: true serves a preset over TLS: for a url target use a wss:// URL (and tls: {ca_file: ...} to trust its CA)")
	}
	scheme := ""
	for i, raw := range s.URLs {
		f := base + ".url"
		if s.urlList {
			f = indexPath(base+".urls", i)
		}
		t, msg := parseURLTarget(raw, allowRemote)
		if msg != "" && l.secrets.Holds(raw) {
			msg = unquoted(msg)
		}
		if msg != "" {
			l.fieldErr(f, "%s", msg)
			continue
		}
		sch := map[bool]string{false: "ws", true: "wss"}[t.TLS]
		if scheme != "" && sch != scheme {
			l.fieldErr(f, "mixes ws:// and wss://: give one scheme per server")
		}
		scheme = sch
		s.Targets = append(s.Targets, t)
	}
	if scheme == "ws" && s.TLS != nil {
		l.fieldErr(base+".tls", "tls settings need wss:// URLs")
	}
	n := 0
	for _, set := range []bool{s.PID != 0, s.PIDFile != "", s.MetricsURL != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		l.fieldErr(base+".pid", "give one of pid:, pid_file: or metrics_url:")
	}
	if s.PID < 0 {
		l.fieldErr(base+".pid", "want a process id > 0, got %d", s.PID)
	}
	if s.MetricsURL != "" {
		u, err := url.Parse(s.MetricsURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			l.fieldErr(base+".metrics_url", "want an http:// or https:// URL of a Prometheus endpoint, got %q", s.MetricsURL)
		} else if a, err := netip.ParseAddr(u.Hostname()); !allowRemote && ((err == nil && !a.IsLoopback()) || (err != nil && u.Hostname() != "localhost")) {
			l.fieldErr(base+".metrics_url", "%s is not loopback: set defaults.allow_remote: true to use it", u.Hostname())
		}
	}
}

// checkNotExternal rejects the keys that only a url target has.
func (l *loader) checkNotExternal(s *Server, base string) {
	if s.PID != 0 || s.PIDFile != "" || s.MetricsURL != "" {
		l.fieldErr(base+".pid", "pid:, pid_file: and metrics_url: are for url: servers; wsplan measures the servers it starts itself")
	}
}

// ReadPIDFile reads a pid file: one decimal process id.
func ReadPIDFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s: want one process id, got %q", path, strings.TrimSpace(string(b)))
	}
	return pid, nil
}
