package plan

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/wsplan/wsplan/internal/pmdeflate"
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
	t.TLS, t.Compression = t.TLSKey.config(), t.CompressionKey.params()
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

// URLTarget is one parsed `url:`.
type URLTarget struct {
	URL        string // as written
	TLS        bool   // wss://
	Addr       string // host:port dialed (the port defaulted from the scheme)
	Host       string // the Host header: host[:port] as written
	RequestURI string // path and query of the upgrade request
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
	l.checkTLS(t.TLS, path+".tls")
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
