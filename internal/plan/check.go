package plan

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/wsplan/wsplan/frameworks"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/sysctl"
)

// The checks of the plan's sections, run after defaults are applied. Each
// reports every problem it finds (fieldErr names the field and the line
// of its key) and goes on. A key's own bounds are its declaration's
// (declared.go); these are what a tag cannot say: a name's form, a
// relation between keys, a name that must exist.

var sysctlName = regexp.MustCompile(`^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*(\.[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*)*$`)

// checkHost checks host: and notes the line of each sysctl key.
func (l *loader) checkHost(h *Host) {
	keys := make([]string, 0, len(h.Sysctl))
	for k := range h.Sysctl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := keyPath("host.sysctl", k)
		if h.SysctlLine == nil {
			h.SysctlLine = map[string]int{}
		}
		h.SysctlLine[k] = l.lineOf(path)
		if !sysctlName.MatchString(k) {
			l.fieldErr(path, "bad sysctl name %q: want dotted names such as net.core.somaxconn", k)
			continue
		}
		if strings.TrimSpace(h.Sysctl[k]) == "" {
			l.fieldErr(path, "has no value: write the value as `sysctl -w` takes it")
		} else if k == sysctl.ReservedPortsKey {
			if _, err := sysctl.ParsePortList(h.Sysctl[k]); err != nil {
				l.fieldErr(path, "%s", err)
			}
		} else if k == sysctl.PortRangeKey {
			if _, _, err := sysctl.ParsePortRange(h.Sysctl[k]); err != nil {
				l.fieldErr(path, "%s: want the first and last ephemeral port, such as \"1024 65535\"", err)
			}
		}
	}
	for _, f := range []struct{ key, v string }{{"server_cpus", h.ServerCPUs}, {"client_cpus", h.ClientCPUs}} {
		if f.v == "" {
			continue
		}
		if _, err := sysctl.ParseCPUList(f.v); err != nil {
			l.fieldErr("host."+f.key, "%s", err)
		}
	}
}

func (l *loader) checkDefaults(d *Defaults, servers int) {
	// Out of their bounds (declared.go), ports and base_port say nothing
	// of the ports the servers take.
	inBounds := len(decl.Check(d)) == 0
	switch {
	case inBounds && d.BasePort+d.Ports*servers > MaxPort:
		l.fieldErr("defaults.base_port", "base_port + ports × servers must be <= %d, got %d + %d × %d = %d: lower base_port or ports",
			MaxPort, d.BasePort, d.Ports, servers, d.BasePort+d.Ports*servers)
	}
	addr, err := netip.ParseAddr(d.Host)
	switch {
	case err != nil:
		l.fieldErr("defaults.listen", "want an IP address such as 127.0.0.1, got %q", d.Host)
	case !addr.IsLoopback() && !d.AllowRemote:
		l.fieldErr("defaults.listen", "%s is not a loopback address: set defaults.allow_remote: true to listen on it", d.Host)
	}
}

func (l *loader) checkClient(c *Client, allowRemote bool) {
	l.checkReconnect(&c.Reconnect)
	l.checkRemote(c)
	for i, a := range c.SourceAddrs {
		path := indexPath("client.source_addrs", i)
		addr, err := netip.ParseAddr(a)
		switch {
		case err != nil:
			l.fieldErr(path, "want an IP address such as 127.0.0.2, got %q", a)
		case !addr.IsLoopback() && !allowRemote:
			l.fieldErr(path, "%s is not a loopback address: set defaults.allow_remote: true to use it", a)
		}
	}
}

// checkMetrics checks metrics:'s URLs and header names.
func (l *loader) checkMetrics(m *Metrics) {
	for _, u := range []struct{ field, url string }{{"metrics.remote_write", m.RemoteWrite}, {"metrics.otlp", m.OTLP}} {
		if u.url == "" {
			continue
		}
		if x, err := url.Parse(u.url); err != nil || (x.Scheme != "http" && x.Scheme != "https") || x.Host == "" {
			l.fieldErr(u.field, "want an http:// or https:// URL, got %q", u.url)
		}
	}
	for k := range m.Headers {
		if !httpguts.ValidHeaderFieldName(k) {
			l.fieldErr(keyPath("metrics.headers", k), "%q is not a valid header name", k)
		}
	}
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

func (l *loader) checkServers(p *Plan, nodelaySet bool) {
	if len(p.Servers) == 0 {
		l.fieldErr("servers", "a plan needs at least one server, e.g. - name: gorilla (wsplan frameworks lists them)")
	}
	first := map[string]int{} // name -> index
	for i := range p.Servers {
		s := &p.Servers[i]
		base := indexPath("servers", i)
		nameOK := false
		switch {
		case s.Name == "":
			l.fieldErr(base+".name", "is required: a preset (wsplan frameworks lists them), or a label with framework:")
		case !serverName.MatchString(s.Name):
			l.fieldErr(base+".name", "bad server name %q: use letters, digits, _, - and .", s.Name)
		default:
			nameOK = true
			if j, dup := first[s.Name]; dup {
				l.fieldErr(base+".name", "duplicate server %q (also servers[%d], line %d): give each server its own name", s.Name, j, p.Servers[j].Line)
			} else {
				first[s.Name] = i
			}
		}
		if s.TLS != nil && s.TLS.Certificate != "" && (s.External() || !s.BuiltIn()) {
			l.fieldErr(base+".tls.certificate", "is the key type of the certificate wsplan makes for a preset it serves with TLS; this server serves its own certificate")
		}
		if s.External() {
			l.checkURLServer(s, base, p.Defaults.AllowRemote)
			continue
		}
		l.checkNotExternal(s, base)
		if !strings.HasPrefix(s.Path, "/") {
			l.fieldErr(base+".path", "want a path starting with /, got %q", s.Path)
		}
		if !s.BuiltIn() {
			l.checkCommandServer(s, base, p.Defaults.AllowRemote)
			continue
		}
		if len(s.Addrs) > 0 {
			l.fieldErr(base+".addrs", "only with command:; built-in servers listen on defaults.listen from defaults.base_port")
		}
		if !nameOK && s.Framework == "" {
			continue // nothing to resolve
		}
		l.resolveServer(s, base, p.Defaults, nodelaySet)
		if s.Compression != nil && s.Values != nil && s.Values["compression"] != "true" {
			field := base + ".compression"
			if !s.CompressionKey.set {
				field = "defaults.compression"
			}
			l.fieldErr(field, "the client would ask %s (servers[%d]) for permessage-deflate, but it serves without: add options: {compression: true}", s.Name, i)
		}
	}
}

func (l *loader) checkCommandServer(s *Server, base string, allowRemote bool) {
	if s.Framework != "" {
		l.fieldErr(base+".framework", "a server with command: is your own: remove framework:")
	}
	if len(s.Options) > 0 {
		l.fieldErr(base+".options", "a server with command: takes no options: pass them in its command")
	}
	if len(s.Addrs) == 0 {
		l.fieldErr(base+".addrs", "is required with command: list where the server listens, e.g. [127.0.0.1:9000]")
	}
	if s.ServeTLS && s.TLS == nil {
		l.fieldErr(base+".tls", "wsplan hands no certificate to your command: serve TLS yourself and give tls: {ca_file: YOUR-CA.pem} (or insecure_skip_verify: true)")
	}
	for j, a := range s.Addrs {
		if msg := checkHostPort(a, allowRemote); msg != "" {
			l.fieldErr(indexPath(base+".addrs", j), "%s", msg)
		}
	}
}

// checkHostPort checks a host:port a client dials.
func checkHostPort(a string, allowRemote bool) string {
	ap, err := netip.ParseAddrPort(a)
	if err != nil {
		host, port, ok := strings.Cut(a, ":")
		if !ok || host != "localhost" {
			return fmt.Sprintf("want an IP address and port such as 127.0.0.1:9000, got %q", a)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > MaxPort {
			return fmt.Sprintf("want a port between 1 and %d, got %q", MaxPort, a)
		}
		return ""
	}
	if ap.Port() == 0 {
		return fmt.Sprintf("want a port between 1 and %d, got %q", MaxPort, a)
	}
	if !ap.Addr().IsLoopback() && !allowRemote {
		return fmt.Sprintf("%s is not a loopback address: set defaults.allow_remote: true to use it", ap.Addr())
	}
	return ""
}

// resolveServer checks a built-in server's framework and options with the
// frameworks registry and fills Adapter, Options and Values. Problems with
// an option are reported at the key that set it: the server's options, or
// defaults.options / defaults.nodelay.
func (l *loader) resolveServer(s *Server, base string, d Defaults, nodelaySet bool) {
	key, keyField := s.Framework, base+".framework"
	if key == "" {
		key, keyField = s.Name, base+".name"
	}
	a, _, errs := frameworks.Resolve(s.Name, s.Framework, nil)
	if len(errs) > 0 {
		if l.frameworkNames == nil {
			l.frameworkNames = frameworks.Names()
		}
		if _, isPreset := frameworks.LookupPreset(key); !isPreset && suggest(key, l.frameworkNames) != "" {
			l.fieldErr(keyField, "%s", unknownMsg("framework", key, l.frameworkNames))
			return
		}
		for _, err := range errs {
			l.fieldErr(keyField, "%s", err)
		}
		return
	}

	// The options the plan sets, and where each was set.
	merged := map[string]string{}
	from := map[string]string{}
	if nodelaySet {
		merged["nodelay"] = strconv.FormatBool(*d.NoDelay)
		from["nodelay"] = "defaults.nodelay"
	}
	for k, v := range d.Options {
		merged[k], from[k] = v, keyPath("defaults.options", k)
	}
	for k, v := range s.Options {
		merged[k], from[k] = v, keyPath(base+".options", k)
	}
	known := map[string]bool{}
	var optNames []string
	for _, o := range a.AllOptions() {
		known[o.Name] = true
		optNames = append(optNames, o.Name)
	}
	keys := make([]string, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	good := map[string]string{}
	for _, k := range keys {
		field := from[k]
		// An option from defaults applies to every server: say which one
		// it does not fit.
		prefix := ""
		if !strings.HasPrefix(field, base+".") {
			prefix = "server " + s.Name + ": "
		}
		if !known[k] {
			if c := suggest(k, optNames); c != "" {
				l.fieldErr(field, "%sframework %s has no option %q (did you mean %q?)", prefix, a.Name, k, c)
			} else {
				l.fieldErr(field, "%sframework %s has no option %q (options: %s)", prefix, a.Name, k, strings.Join(optNames, ", "))
			}
			continue
		}
		if err := a.CheckOption(k, merged[k]); err != nil {
			l.fieldErr(field, "%s%s", prefix, err)
			continue
		}
		good[k] = merged[k]
	}
	a, vals, errs := frameworks.Resolve(s.Name, s.Framework, good)
	if len(good) == len(merged) {
		// Each value is good: what is left are bounds between options
		// (the adapter's Check), reported at the server's options.
		for _, err := range errs {
			l.fieldErr(base+".options", "%s", err)
		}
	}
	if why := a.TLSRefusal(vals); s.ServeTLS && why != "" && a.Name != "" {
		l.fieldErr(base+".tls", "%s cannot serve TLS: %s", a.Name, why)
	}
	s.Adapter, s.Options, s.Values = a.Name, merged, vals
}

// checkAsserts checks that each assertion has an expression and names
// phases and servers of the plan, and notes the line of its expression.
func (l *loader) checkAsserts(p *Plan) {
	phaseNames := map[string]bool{}
	var candidates []string
	for _, ph := range p.Phases {
		for _, n := range []string{ph.Name, ph.Kind} {
			if !phaseNames[n] {
				phaseNames[n] = true
				candidates = append(candidates, n)
			}
		}
	}
	servers := map[string]bool{}
	var serverNames []string
	for _, s := range p.Servers {
		if s.Name != "" && !servers[s.Name] {
			servers[s.Name] = true
			serverNames = append(serverNames, s.Name)
		}
	}
	for i := range p.Assert {
		a := &p.Assert[i]
		base := indexPath("assert", i)
		a.Line = l.lineOf(base + ".expr")
		if strings.TrimSpace(a.Expr) == "" {
			l.fieldErr(base+".expr", "is required: a boolean expression such as failed == 0")
		}
		if a.Phase != "" && !phaseNames[a.Phase] && len(p.Phases) > 0 {
			l.fieldErr(base+".phase", "%s", unknownMsg("phase", a.Phase, candidates))
		}
		for j, s := range a.Servers {
			if !servers[s] {
				field := base + ".server"
				if len(a.Servers) > 1 {
					field = indexPath(field, j)
				}
				l.fieldErr(field, "%s", unknownMsg("server", s, serverNames))
			}
		}
	}
}

// only keeps the servers named by --only, in plan order.
func (l *loader) only(servers []Server, only []string) []Server {
	want := map[string]bool{}
	for _, n := range only {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	if len(want) == 0 {
		return servers
	}
	have := map[string]bool{}
	var names []string
	for _, s := range servers {
		have[s.Name] = true
		names = append(names, s.Name)
	}
	var unknown []string
	for n := range want {
		if !have[n] {
			unknown = append(unknown, n)
		}
	}
	sort.Strings(unknown)
	for _, n := range unknown {
		l.errf(0, "--only", "%s", unknownMsg("server", n, names))
	}
	var out []Server
	for _, s := range servers {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	return out
}
