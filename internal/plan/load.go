package plan

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/wsplan/wsplan/sysctl"
	"io"
	"net/netip"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/frameworks"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// The file's syntax, decoded strictly before it is turned into a Plan. The
// tags other than yaml declare each key for people and for the JSON Schema
// (package schema): doc (one line), default (as a user would write it; the
// loader applies it in setDefaults), min and max (inclusive, written as the
// value; for a list, its length), required. Validation is done by the
// check* functions below; TestSyntaxTags holds the two together.
type fileDoc struct {
	Name        string      `yaml:"name" doc:"plan name shown in reports; default: the file's base name without extension"`
	Description string      `yaml:"description" doc:"one line shown with the results"`
	Vars        yaml.Node   `yaml:"vars" doc:"variables: name → scalar value, referenced as ${name} in any value; override with --set name=value"` // resolved before anything else
	Host        hostDoc     `yaml:"host" doc:"what the host must look like"`
	Defaults    defaultsDoc `yaml:"defaults" doc:"settings for every server"`
	Client      clientDoc   `yaml:"client" doc:"the load-generating client"`
	Servers     []serverDoc `yaml:"servers" required:"true" min:"1" doc:"the servers to benchmark, each through every phase in turn"`
	Phases      []yaml.Node `yaml:"phases" required:"true" min:"1" doc:"what to run against each server, in order; each item has one key, its kind"` // two-pass: kind key, then body
	Assert      []assertDoc `yaml:"assert" doc:"boolean expressions checked against each result; a failure exits 1"`
	Repeat      int         `yaml:"repeat" default:"1" min:"1" max:"1000" doc:"run every server's phases this many times, each on a fresh server process, servers interleaved; tables show the median (--count wins)"`
	Matrix      yaml.Node   `yaml:"matrix" doc:"declared vars → lists of values: the plan runs for every combination (--set fixes a var, --only-matrix VAR=VALUE picks values)"`
}

type hostDoc struct {
	Sysctl     map[string]string `yaml:"sysctl" doc:"sysctl name → value as sysctl -w takes it; checked before a run, applied by wsplan tune"`
	NoFile     int               `yaml:"nofile" default:"0" min:"0" doc:"RLIMIT_NOFILE for every process; 0 = raise the soft limit to the hard limit"`
	ServerCPUs string            `yaml:"server_cpus" doc:"CPU list for the servers (0, 0-1, 0,2); default: the first half of the online CPUs"`
	ClientCPUs string            `yaml:"client_cpus" doc:"CPU list for the client; default: the other half (all CPUs on a 1-CPU host)"`
	IdlePoll   *units.Duration   `yaml:"idle_poll" min:"0s" max:"10ms" doc:"how long an idle CPU polls before it halts (the haltpoll cpuidle driver of KVM guests); checked before a run, applied by --tune; default: leave the host as it is"`
}

type defaultsDoc struct {
	NoDelay        *bool             `yaml:"nodelay" default:"true" doc:"TCP_NODELAY on the client and, when written, on every built-in server"`
	Options        map[string]string `yaml:"options" doc:"framework options for every built-in server (each server's options: win)"`
	ReadyTimeout   units.Duration    `yaml:"ready_timeout" default:"20s" min:"1ns" doc:"how long a server may take to accept its first upgrade"`
	StopGrace      units.Duration    `yaml:"stop_grace" default:"3s" min:"1ns" doc:"time between SIGTERM and SIGKILL when a server stops"`
	Ports          int               `yaml:"ports" default:"1" min:"1" max:"1000" doc:"listen ports per server"`
	BasePort       int               `yaml:"base_port" default:"9000" min:"1" max:"65534" doc:"first listen port; server i listens on base_port + i × ports …, up to 65535"`
	Listen         string            `yaml:"listen" default:"127.0.0.1" doc:"IP address servers listen on; loopback unless allow_remote"`
	SampleInterval units.Duration    `yaml:"sample_interval" default:"1s" min:"1ns" doc:"CPU and RSS sampling interval (shorter for short phases)"`
	AllowRemote    bool              `yaml:"allow_remote" default:"false" doc:"permit non-loopback listen, source and target addresses"`

	Headers      map[string]string `yaml:"headers" doc:"extra upgrade request headers for every server (a server's own win); values may be ${env:NAME} secrets"`
	Subprotocols []string          `yaml:"subprotocols" doc:"offered in Sec-WebSocket-Protocol; the server must pick one of them"`
	Origin       string            `yaml:"origin" doc:"the Origin header; default none"`
	TLS          tlsDoc            `yaml:"tls" doc:"client TLS settings for every server: true, false, or a mapping of ca_file, server_name, insecure_skip_verify, session_resumption"`
	Compression  compressionDoc    `yaml:"compression" doc:"permessage-deflate for every server: true, false, or a mapping of client_no_context_takeover, server_no_context_takeover, client_max_window_bits, server_max_window_bits; a server that declines fails its rows"`
}

type clientDoc struct {
	Shards      shards   `yaml:"shards" default:"0" doc:"client processes: 0 = inside wsplan, N, or auto (the engine decides)"`
	SourceAddrs []string `yaml:"source_addrs" doc:"local IP addresses the client binds, round-robin; default: the kernel picks"`
	Loops       int      `yaml:"loops" default:"0" min:"0" doc:"event loops per client process; 0 = one per client CPU"`

	Remote   []string       `yaml:"remote" doc:"host:port of remote shards (wsplan shard --listen) that run the client instead of this host"`
	Weights  []int          `yaml:"weights" doc:"with remote: each shard's share of the connections; default: 1,000 per CPU of its host, at most its fd hard limit"`
	Certs    string         `yaml:"certs" doc:"with remote: directory of the run's certificates (wsplan shard certs DIR) the shards were started with; relative to the plan's directory"`
	IdleExit units.Duration `yaml:"idle_exit" default:"30s" min:"1ns" doc:"with remote or kubernetes: how long a shard waits for the next orchestrator after this one leaves before it exits"`

	Kubernetes *kubeDoc `yaml:"kubernetes" doc:"run the client as remote shards in a Kubernetes cluster (an Indexed Job wsplan creates and deletes)"`
}

type kubeDoc struct {
	Namespace      string            `yaml:"namespace" doc:"namespace of the Job, Service and Secret; default: default"`
	Image          string            `yaml:"image" doc:"the wsplan image the shard pods run (see Dockerfile); default ghcr.io/wsplan/wsplan:<this version>"`
	Shards         int               `yaml:"shards" min:"1" doc:"shard pods; default 2"`
	NodeSelector   map[string]string `yaml:"node_selector" doc:"node labels the pods must run on"`
	Resources      kubeResources     `yaml:"resources" doc:"each pod's CPU and memory, as request and limit"`
	Spread         *bool             `yaml:"spread" doc:"spread the pods over nodes (topology spread + anti-affinity); default true"`
	Kubeconfig     string            `yaml:"kubeconfig" doc:"kubeconfig file; default: in-cluster, else $KUBECONFIG or ~/.kube/config"`
	Port           int               `yaml:"port" min:"1" max:"65535" doc:"the shards' listen port; default 7070"`
	ReadyTimeout   units.Duration    `yaml:"ready_timeout" min:"1ns" doc:"how long the pods may take to be ready; default 5m"`
	ActiveDeadline units.Duration    `yaml:"active_deadline" min:"1s" doc:"the Job's activeDeadlineSeconds, so nothing outlives a killed orchestrator for long; default 2h"`
	TTL            units.Duration    `yaml:"ttl_after_finished" min:"0s" doc:"the Job's ttlSecondsAfterFinished (its Service and Secret go with it); default 10m"`
}

type kubeResources struct {
	CPU    string `yaml:"cpu" doc:"CPU request and limit, a Kubernetes quantity such as 2 or 1500m"`
	Memory string `yaml:"memory" doc:"memory request and limit, a Kubernetes quantity such as 4Gi"`
}

type serverDoc struct {
	Name      string            `yaml:"name" required:"true" doc:"row label: a preset (wsplan frameworks), or any label with framework:, command: or url:"`
	Framework string            `yaml:"framework" doc:"adapter or preset to start from; default: name"`
	Options   map[string]string `yaml:"options" doc:"framework options over the preset's and defaults.options (wsplan frameworks lists them)"`
	Command   argv              `yaml:"command" doc:"your own server instead of a built-in one: a list of arguments, or a string split on white space"`
	Addrs     []string          `yaml:"addrs" doc:"with command: where it listens, host:port (required then)"`
	Path      string            `yaml:"path" default:"/ws" doc:"upgrade path"`

	URL          string            `yaml:"url" doc:"a running server wsplan never starts, signals or stops: its ws:// or wss:// URL"`
	URLs         []string          `yaml:"urls" doc:"several URLs of one running server; the connections spread over them"`
	Headers      map[string]string `yaml:"headers" doc:"extra upgrade request headers, over defaults.headers; values may be ${env:NAME} secrets"`
	Subprotocols []string          `yaml:"subprotocols" doc:"offered in Sec-WebSocket-Protocol; the server must pick one of them"`
	Origin       string            `yaml:"origin" doc:"the Origin header; default none"`
	TLS          tlsDoc            `yaml:"tls" doc:"true (or a mapping): a preset serves TLS with the run's certificate; a mapping of ca_file, server_name, insecure_skip_verify, session_resumption sets how the client verifies"`
	Compression  compressionDoc    `yaml:"compression" doc:"the client offers permessage-deflate: true, false, or a mapping of client_no_context_takeover, server_no_context_takeover, client_max_window_bits, server_max_window_bits; default: false, or true for a preset with options: {compression: true}; a server that declines fails its rows"`
	PID          int               `yaml:"pid" min:"0" doc:"with url: the server's process on this host, sampled from /proc with its descendants"`
	PIDFile      string            `yaml:"pid_file" doc:"with url: a file holding that process id, read when the server's run starts"`
	MetricsURL   string            `yaml:"metrics_url" doc:"with url: a Prometheus endpoint exporting process_cpu_seconds_total and process_resident_memory_bytes"`
}

type assertDoc struct {
	Name   string     `yaml:"name" doc:"shown instead of the expression"`
	Expr   string     `yaml:"expr" required:"true" doc:"an expr-lang boolean expression over the phase's metrics, e.g. failed == 0"`
	Phase  string     `yaml:"phase" doc:"phase name or kind it applies to; default: every phase that has the metrics it uses"`
	Server stringList `yaml:"server" doc:"a server name or a list of names it applies to; default: all"`
	Abort  bool       `yaml:"abort" default:"false" doc:"stop the run at the first failure"`
}

// shards is `client.shards`: an integer, or "auto" (-1).
type shards int

// JSONSchema describes the values UnmarshalYAML takes, for package schema.
func (shards) JSONSchema() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "integer", "minimum": 0},
		map[string]any{"const": "auto"},
	}}
}

func (s *shards) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "auto" {
		*s = -1
		return nil
	}
	var v int
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil || n.ShortTag() != "!!int" {
		return fmt.Errorf("want an integer or \"auto\", got %s", describe(n))
	}
	*s = shards(v)
	return nil
}

// argv is `command:`: a list of arguments, or one string split on white
// space (no shell quoting: use the list form for arguments with spaces).
type argv []string

// JSONSchema describes the values UnmarshalYAML takes, for package schema.
func (argv) JSONSchema() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string"},
		map[string]any{"type": "array", "items": map[string]any{"type": []any{"string", "number", "boolean"}}},
	}}
}

func (a *argv) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*a = strings.Fields(n.Value)
		return nil
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c = deref(c); c == nil || c.Kind != yaml.ScalarNode {
				return fmt.Errorf("want a list of arguments, got an item that is not a string")
			}
			out = append(out, c.Value)
		}
		*a = out
		return nil
	}
	return fmt.Errorf("want a command line or a list of arguments, got %s", describe(n))
}

// stringList is a string or a list of strings.
type stringList []string

// JSONSchema describes the values UnmarshalYAML takes, for package schema.
func (stringList) JSONSchema() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string"},
		map[string]any{"type": "array", "items": map[string]any{"type": []any{"string", "number", "boolean"}}},
	}}
}

func (s *stringList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*s = []string{n.Value}
		return nil
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c = deref(c); c == nil || c.Kind != yaml.ScalarNode {
				return fmt.Errorf("want a name or a list of names, got a list with %s in it", describe(c))
			}
			out = append(out, c.Value)
		}
		*s = out
		return nil
	}
	return fmt.Errorf("want a name or a list of names, got %s", describe(n))
}

// Load reads, resolves, defaults and validates the plan at path. Any
// error means the plan is unusable. When the file could be read, the
// error is an Errors listing every problem found, one per line, in the
// form `file:line: field.path: message`.
func Load(path string, opts LoadOptions) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	return LoadBytes(path, data, opts)
}

// LoadBytes is Load for a plan already in memory; name is the file name
// used in messages and for the default plan name.
func LoadBytes(name string, data []byte, opts LoadOptions) (*Plan, error) {
	l := newLoader(name)
	p := l.load(data, opts)
	if len(l.errs) > 0 {
		// A message may quote a value taken from the environment.
		red := &Plan{Secrets: sortSecrets(l.secrets)}
		for _, e := range l.errs {
			e.Msg = red.Redact(e.Msg)
		}
		return nil, l.errs.sorted()
	}
	return p, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parse reads the one YAML document. It returns its top mapping (nil when
// the document is empty) and false when the YAML itself is broken.
func (l *loader) parse(data []byte) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(protectRefs(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, true
		}
		l.syntaxErr(err)
		return nil, false
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		l.errf(extra.Line, "", "a plan is one YAML document; a second one starts here (remove the ---)")
	case !errors.Is(err, io.EOF):
		l.syntaxErr(err)
		return nil, false
	}
	restoreRefs(&doc, map[*yaml.Node]bool{})
	if len(doc.Content) == 0 {
		return nil, true
	}
	root := deref(doc.Content[0])
	if isNull(root) {
		return nil, true
	}
	if root.Kind != yaml.MappingNode {
		l.errf(root.Line, "", "want a mapping of sections (name:, servers:, phases:, …) at the top, got %s", describe(root))
		return nil, false
	}
	return root, true
}

func (l *loader) syntaxErr(err error) {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1]) // the pattern guarantees digits; overflow leaves 0, no line
		l.errf(line, "", "bad YAML: %s", m[2])
		return
	}
	l.errf(0, "", "bad YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

func (l *loader) load(data []byte, opts LoadOptions) *Plan {
	root, ok := l.parse(data)
	if !ok {
		return nil
	}
	var varsNode *yaml.Node
	if root != nil {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if k := root.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "vars" {
				varsNode = root.Content[i+1]
				l.lines["vars"] = k.Line
				break
			}
		}
	}
	vt := l.resolveVars(varsNode, opts.Sets)

	var doc fileDoc
	if root != nil {
		l.substitute(root, "", vt, map[*yaml.Node]bool{}, true)
		l.decode(root, "", reflect.ValueOf(&doc).Elem())
	}

	p := &Plan{
		File:        l.file,
		Name:        doc.Name,
		Description: doc.Description,
		Vars:        vt.resolved(),
		Secrets:     sortSecrets(l.secrets),
		Host: Host{
			Sysctl:     doc.Host.Sysctl,
			NoFile:     doc.Host.NoFile,
			ServerCPUs: doc.Host.ServerCPUs,
			ClientCPUs: doc.Host.ClientCPUs,
			IdlePoll:   doc.Host.IdlePoll,
		},
		Defaults: Defaults{
			NoDelay:     doc.Defaults.NoDelay,
			Options:     doc.Defaults.Options,
			ReadyTime:   doc.Defaults.ReadyTimeout,
			StopGrace:   doc.Defaults.StopGrace,
			Ports:       doc.Defaults.Ports,
			BasePort:    doc.Defaults.BasePort,
			Host:        doc.Defaults.Listen,
			Sample:      doc.Defaults.SampleInterval,
			AllowRemote: doc.Defaults.AllowRemote,
			Target: Target{
				Headers:      doc.Defaults.Headers,
				Subprotocols: doc.Defaults.Subprotocols,
				Origin:       doc.Defaults.Origin,
				TLS:          doc.Defaults.TLS.config,

				Compression:    doc.Defaults.Compression.params,
				compressionSet: doc.Defaults.Compression.set,
			},
		},
		Client: Client{
			Shards:      int(doc.Client.Shards),
			SourceAddrs: doc.Client.SourceAddrs,
			Loops:       doc.Client.Loops,
			Remote:      doc.Client.Remote,
			Weights:     doc.Client.Weights,
			Certs:       doc.Client.Certs,
			IdleExit:    doc.Client.IdleExit,
			Kubernetes:  kubeOf(doc.Client.Kubernetes),
		},
	}
	if len(p.Host.Sysctl) > 0 {
		p.Host.SysctlLine = map[string]int{}
		for k := range p.Host.Sysctl {
			p.Host.SysctlLine[k] = l.lineOf(keyPath("host.sysctl", k))
		}
	}
	if doc.Defaults.TLS.set && doc.Defaults.TLS.config == nil {
		l.fieldErr("defaults.tls", "want a mapping of client TLS settings (ca_file, server_name, insecure_skip_verify, session_resumption); tls: true is a server's")
	}
	l.checkTarget(&p.Defaults.Target, "defaults")
	for i, s := range doc.Servers {
		srv := Server{
			Name:      s.Name,
			Framework: s.Framework,
			Options:   s.Options,
			Command:   s.Command,
			Addrs:     s.Addrs,
			Path:      s.Path,
			Line:      l.lineOf(indexPath("servers", i)),
			Target: Target{
				Headers:      s.Headers,
				Subprotocols: s.Subprotocols,
				Origin:       s.Origin,
				TLS:          s.TLS.config,

				Compression:    s.Compression.params,
				compressionSet: s.Compression.set,
			},
			ServeTLS:   s.TLS.on,
			PID:        s.PID,
			PIDFile:    s.PIDFile,
			MetricsURL: s.MetricsURL,
		}
		switch {
		case s.URL != "" && len(s.URLs) > 0:
			l.fieldErr(indexPath("servers", i)+".urls", "give url: or urls:, not both")
		case s.URL != "":
			srv.URLs = []string{s.URL}
		case len(s.URLs) > 0:
			srv.URLs, srv.urlList = s.URLs, true
		}
		if len(srv.URLs) > 0 && s.Path != "" {
			l.fieldErr(indexPath("servers", i)+".path", "with url: the path comes from the URL")
		}
		l.checkTarget(&srv.Target, indexPath("servers", i))
		srv.Target = mergeTarget(p.Defaults.Target, srv.Target)
		p.Servers = append(p.Servers, srv)
	}
	for k, v := range p.Vars {
		p.Vars[k] = p.Redact(v)
	}
	nodelaySet := p.Defaults.NoDelay != nil
	p.setDefaults()

	l.checkHost(&p.Host)
	l.checkDefaults(&p.Defaults, len(p.Servers))
	l.checkClient(&p.Client, p.Defaults.AllowRemote)
	l.checkServers(p, nodelaySet)
	p.Phases = l.phases(doc.Phases)
	if len(doc.Phases) == 0 {
		l.fieldErr("phases", "a plan needs at least one phase, e.g. - connect: {connections: 1000}")
	}
	p.Assert = l.asserts(doc.Assert, p)
	p.Servers = l.only(p.Servers, opts.Only)
	p.Repeat = doc.Repeat
	if p.Repeat == 0 {
		p.Repeat = 1
	}
	if p.Repeat < 1 || p.Repeat > MaxRepeat {
		l.fieldErr("repeat", "must be in [1, %d], got %d", MaxRepeat, doc.Repeat)
	}
	p.Matrix = l.matrix(&doc.Matrix, vt, opts.Sets, opts.OnlyMatrix)
	return p
}

var sysctlName = regexp.MustCompile(`^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*(\.[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*)*$`)

func (l *loader) checkHost(h *Host) {
	keys := make([]string, 0, len(h.Sysctl))
	for k := range h.Sysctl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := keyPath("host.sysctl", k)
		if !sysctlName.MatchString(k) {
			l.fieldErr(path, "bad sysctl name %q: want dotted names such as net.core.somaxconn", k)
			continue
		}
		if strings.TrimSpace(h.Sysctl[k]) == "" {
			l.fieldErr(path, "has no value: write the value as `sysctl -w` takes it")
		}
	}
	if h.NoFile < 0 {
		l.fieldErr("host.nofile", "must be >= 0, got %d", h.NoFile)
	}
	if d := h.IdlePoll; d != nil && (*d < 0 || d.D() > MaxIdlePoll) {
		l.fieldErr("host.idle_poll", "must be between 0s and %v, got %s", MaxIdlePoll, *d)
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
	if d.ReadyTime <= 0 {
		l.fieldErr("defaults.ready_timeout", "must be > 0, got %s", d.ReadyTime)
	}
	if d.StopGrace <= 0 {
		l.fieldErr("defaults.stop_grace", "must be > 0, got %s", d.StopGrace)
	}
	if d.Sample <= 0 {
		l.fieldErr("defaults.sample_interval", "must be > 0, got %s", d.Sample)
	}
	portsOK := true
	if d.Ports < 1 || d.Ports > MaxPorts {
		l.fieldErr("defaults.ports", "must be between 1 and %d, got %d", MaxPorts, d.Ports)
		portsOK = false
	}
	switch {
	case d.BasePort < 1 || d.BasePort > MaxPort:
		l.fieldErr("defaults.base_port", "must be between 1 and %d, got %d", MaxPort, d.BasePort)
	case portsOK && d.BasePort+d.Ports*servers > MaxPort:
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
	if c.Shards < -1 {
		l.fieldErr("client.shards", "must be >= 0 or \"auto\", got %d", c.Shards)
	}
	if c.Loops < 0 {
		l.fieldErr("client.loops", "must be >= 0 (0 = one per client CPU), got %d", c.Loops)
	}
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
			if !s.compressionSet {
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
		if _, isPreset := frameworks.LookupPreset(key); !isPreset && suggest(key, frameworks.Names()) != "" {
			l.fieldErr(keyField, "%s", unknownMsg("framework", key, frameworks.Names()))
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

// phases decodes every phase (kind key first, then its body strictly into
// that kind's config), applies each kind's defaults and validates it.
//
// Each phase is validated with a scenarios.Context: Conns is the sum of
// the connections the phases before it open (scenarios.Opener). A phase
// whose body has errors is not validated, nor is any phase after an
// opening phase whose body has errors or that opens no connection because
// of an error, since their context would be a guess (that phase's own
// error says what to fix).
func (l *loader) phases(items []yaml.Node) []Phase {
	type decoded struct {
		Phase
		path string // phases[i].kind
		ok   bool   // decoded without a problem
	}
	var ds []decoded
	named := map[string]string{} // explicit names -> path, for duplicates
	count := map[string]int{}
	for i := range items {
		n := &items[i]
		path := indexPath("phases", i)
		before := l.problems()
		ph, ok := l.phase(n, path)
		if !ok {
			continue
		}
		bodyOK := l.problems() == before
		count[ph.Kind]++
		kp := keyPath(path, ph.Kind)
		if ph.Name == "" {
			ph.Name = ph.Kind
			if c := count[ph.Kind]; c > 1 {
				ph.Name = fmt.Sprintf("%s#%d", ph.Kind, c)
			}
		} else {
			if other, dup := named[ph.Name]; dup {
				l.fieldErr(kp+".name", "duplicate phase name %q (also %s)", ph.Name, other)
			}
			named[ph.Name] = kp
			if _, isKind := scenarios.Lookup(ph.Name); isKind && ph.Name != ph.Kind {
				l.fieldErr(kp+".name", "%q is a phase kind: give this %s phase another name", ph.Name, ph.Kind)
			}
		}
		ds = append(ds, decoded{Phase: ph, path: kp, ok: bodyOK})
	}
	// A default name may collide with an explicit one ("echo#2").
	for _, d := range ds {
		if other, dup := named[d.Name]; dup && other != d.path {
			l.fieldErr(other+".name", "duplicate phase name %q (also %s)", d.Name, d.path)
		}
	}

	conns := 0
	connsKnown := true
	out := make([]Phase, 0, len(ds))
	for _, d := range ds {
		ctx := scenarios.Context{Conns: conns}
		scenarios.Defaults(d.Spec, ctx)
		var errs []scenarios.FieldError
		if d.ok && connsKnown {
			errs = scenarios.Check(d.Spec, ctx)
			for _, fe := range errs {
				field := d.path
				if fe.Field != "" {
					field += "." + fe.Field
				}
				l.fieldErr(field, "%s", fe.Msg)
			}
		}
		if o, opens := d.Spec.(scenarios.Opener); opens {
			n, _ := o.Opens()
			conns += n
			// An opener that opens none without an error (a search that
			// varies the rate) leaves the count known.
			if !d.ok || (n <= 0 && (len(errs) > 0 || !connsKnown)) {
				connsKnown = false
			}
		}
		out = append(out, d.Phase)
	}
	return out
}

// phase reads one item of `phases:`: a mapping with one key, the kind,
// whose value is the body. It reports false when there is no usable kind.
func (l *loader) phase(n *yaml.Node, path string) (Phase, bool) {
	known := scenarios.Names()
	if isNull(n) {
		l.fieldErr(path, "empty phase: want one key naming its kind (%s)", strings.Join(known, ", "))
		return Phase{}, false
	}
	if n.Kind != yaml.MappingNode {
		l.errf(n.Line, path, "want a mapping with one key naming the phase kind (%s), got %s", strings.Join(known, ", "), describe(n))
		return Phase{}, false
	}
	ps := l.pairs(n, path)
	if len(ps) != 1 {
		var keys []string
		for _, p := range ps {
			keys = append(keys, p.key.Value)
		}
		l.errf(n.Line, path, "want one key naming the phase kind, got %d (%s): put settings inside the kind's mapping, and start each phase with its own -", len(ps), strings.Join(keys, ", "))
		return Phase{}, false
	}
	k, body := ps[0].key, ps[0].value
	if k.Kind != yaml.ScalarNode {
		l.errf(k.Line, path, "want a phase kind (%s) as the key, got %s", strings.Join(known, ", "), describe(k))
		return Phase{}, false
	}
	kind, ok := scenarios.Lookup(k.Value)
	if !ok {
		l.errf(k.Line, path, "%s", unknownMsg("phase kind", k.Value, known))
		return Phase{}, false
	}
	kp := keyPath(path, k.Value)
	l.lines[kp] = k.Line
	ph := Phase{Kind: kind.Name, Spec: kind.New(), Line: k.Line}

	body = deref(body)
	if isNull(body) {
		return ph, true
	}
	if l.bad[body] {
		l.badHits++
		return ph, true
	}
	if body.Kind != yaml.MappingNode {
		l.errf(body.Line, kp, "want a mapping of the phase's settings, got %s", describe(body))
		return ph, true
	}
	// `name:` belongs to the plan, not to the kind: strip it.
	stripped := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: body.Line, Column: body.Column}
	for _, p := range l.pairs(body, kp) {
		if p.key.Kind == yaml.ScalarNode && p.key.Value == "name" {
			l.lines[kp+".name"] = p.key.Line
			if l.decode(p.value, kp+".name", reflect.ValueOf(&ph.Name).Elem()) && ph.Name == "" {
				l.fieldErr(kp+".name", "must not be empty (leave name: out for the default, %s)", kind.Name)
			}
			continue
		}
		stripped.Content = append(stripped.Content, p.key, p.value)
	}
	v := reflect.ValueOf(ph.Spec)
	if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		l.decodeStruct(stripped, kp, v.Elem())
	} else if err := stripped.Decode(ph.Spec); err != nil {
		l.fieldErr(kp, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return ph, true
}

func (l *loader) asserts(docs []assertDoc, p *Plan) []Assertion {
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
	out := make([]Assertion, 0, len(docs))
	for i, d := range docs {
		base := indexPath("assert", i)
		a := Assertion{Name: d.Name, Expr: d.Expr, Phase: d.Phase, Servers: d.Server, Abort: d.Abort, Line: l.lineOf(base + ".expr")}
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
		out = append(out, a)
	}
	return out
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
