package plan

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// LoadOptions are the command-line inputs that change a plan.
type LoadOptions struct {
	// Sets overrides variables: --set VAR=VALUE. Each VAR must be declared
	// in the plan's `vars:`; VALUE is typed as if written unquoted in YAML.
	Sets map[string]string
	// Only keeps the servers with these names, in plan order: --only a,b.
	// Empty = every server. Each name must be a server of the plan.
	Only []string
	// OnlyMatrix keeps only these values of matrix vars: --only-matrix
	// payload=64 (repeatable). Each var must be in the matrix and each
	// value in its list.
	OnlyMatrix map[string][]string
}

// Plan-level defaults, applied by setDefaults (the one place) to zero
// fields. Phase defaults belong to each phase kind (scenarios).
const (
	DefaultNoDelay        = true
	DefaultReadyTimeout   = 20 * time.Second
	DefaultStopGrace      = 3 * time.Second
	DefaultPorts          = 1
	DefaultBasePort       = 9000
	DefaultListen         = "127.0.0.1"
	DefaultSampleInterval = time.Second
	DefaultPath           = "/ws"
	DefaultIdleExit       = 30 * time.Second // client.idle_exit

	// MaxIdlePoll bounds host.idle_poll: a CPU that polls longer burns
	// its time for wake-ups that are no longer coming.
	MaxIdlePoll = 10 * time.Millisecond

	// client.kubernetes defaults.
	DefaultKubeNamespace      = "default"
	DefaultKubeShards         = 2
	DefaultKubePort           = 7070
	DefaultKubeReadyTimeout   = 5 * time.Minute
	DefaultKubeActiveDeadline = 2 * time.Hour
	DefaultKubeTTL            = 10 * time.Minute
)

// Limits checked by validation.
const (
	MaxPorts = 1000  // defaults.ports
	MaxPort  = 65535 // highest listen port
)

// Syntax returns the zero value of the struct a plan file is strictly
// decoded into (phase bodies excepted: those are each kind's, in
// scenarios). Its yaml, doc, default, min, max and required tags declare
// every key; package schema generates the plan's JSON Schema from them.
func Syntax() any { return fileDoc{} }

// Plan is a loaded, defaulted and validated plan.
type Plan struct {
	File        string            // path it was loaded from
	Name        string            // `name:`; default: the file's base name without extension
	Description string            // `description:`
	Vars        map[string]string // resolved variables, after --set, as text
	Host        Host              // `host:`
	Defaults    Defaults          // `defaults:`
	Client      Client            // `client:`
	Servers     []Server          // `servers:`, in plan order, after --only
	Phases      []Phase           // `phases:`, in plan order
	Assert      []Assertion       // `assert:`
	// Repeat is `repeat:`, how many times each server's phases run, each
	// on a fresh server process; default 1.
	Repeat int
	// Matrix is `matrix:` after --set and --only-matrix: the vars the run
	// sweeps, in plan order; nil without one.
	Matrix []MatrixVar
	// Combo is the matrix combination this plan was loaded with
	// (LoadMatrix); nil for a plan loaded on its own.
	Combo map[string]string
	// Secrets are the values taken from the environment with
	// ${env:NAME}, longest first; Redact removes them from text.
	Secrets []string
}

// Host is the `host:` section: what the host must look like.
type Host struct {
	Sysctl     map[string]string // name -> value as `sysctl -w` takes it; checked always, applied with --tune
	SysctlLine map[string]int    // line of each sysctl key, for messages
	NoFile     int               // RLIMIT_NOFILE wanted for every process; default 0 = raise the soft limit to the hard limit
	ServerCPUs string            // CPU list for servers ("0", "0-1", "0,2"); default: first half of the CPUs
	ClientCPUs string            // CPU list for the client; default: the other half (all CPUs on a 1-CPU host)
	IdlePoll   *units.Duration   // how long an idle CPU polls before it halts (sysctl.IdlePoll); nil = leave the host as it is
}

// Defaults is the `defaults:` section: options applied to every server
// unless the server sets them.
type Defaults struct {
	NoDelay     *bool             // `nodelay:`; default true (client and servers); never nil after Load. When written, it is passed to every built-in server as its nodelay option unless the server's options set it.
	Options     map[string]string // `options:` common framework options for every server
	ReadyTime   units.Duration    // `ready_timeout:` how long a server may take to accept its first upgrade; default 20s
	StopGrace   units.Duration    // `stop_grace:` time between SIGTERM and SIGKILL; default 3s
	Ports       int               // `ports:` listen ports per server; default 1
	BasePort    int               // `base_port:` first listen port; default 9000 (each server gets its own range in turn)
	Host        string            // `listen:` address servers listen on; default 127.0.0.1 (loopback only unless allow_remote)
	Sample      units.Duration    // `sample_interval:` CPU/RSS sampling interval; default 1s, shorter for short phases
	AllowRemote bool              // `allow_remote:` permit a non-loopback listen/target address; default false
	Target                        // `headers:`, `subprotocols:`, `origin:`, `tls:` for every server (a server's own win)
}

// Client is the `client:` section.
type Client struct {
	Shards      int      // `shards:` client processes; default 0 = run in the wsplan process; "auto" = -1 (the engine decides)
	SourceAddrs []string // `source_addrs:` local IPs the client binds, round-robin; default: none (the kernel picks); loopback unless allow_remote
	Loops       int      // `loops:` event loops per client process; default 0 = one per client CPU (the engine decides)

	Remote   []string       // `remote:` host:port of remote shards (wsplan shard --listen); default none = the client runs on this host
	Weights  []int          // `weights:` with remote: each shard's share of connections; default nil = 1,000 per CPU of its host, at most its fd limit
	Certs    string         // `certs:` with remote: the run's certificate directory (wsplan shard certs), resolved against the plan's directory
	IdleExit units.Duration // `idle_exit:` with remote: how long a shard waits for the next orchestrator before it exits; default 30s

	// Kubernetes is `kubernetes:`: the client runs as remote shards in an
	// Indexed Job wsplan creates before the run and deletes after it;
	// nil = not on Kubernetes.
	Kubernetes *Kube
}

// Kube is `client.kubernetes:`, defaults applied.
type Kube struct {
	Namespace      string            // `namespace:` default "default"
	Image          string            // `image:` default DefaultImage + the version ("" here = the cmd fills it in)
	Shards         int               // `shards:` pods; default 2
	NodeSelector   map[string]string // `node_selector:`
	CPU, Memory    string            // `resources: {cpu, memory}` request and limit; "" = none
	Spread         bool              // `spread:` default true
	Kubeconfig     string            // `kubeconfig:` default: in-cluster, else $KUBECONFIG or ~/.kube/config
	Port           int               // `port:` default 7070
	ReadyTimeout   units.Duration    // `ready_timeout:` default 5m
	ActiveDeadline units.Duration    // `active_deadline:` default 2h
	TTL            units.Duration    // `ttl_after_finished:` default 10m
	Line           int               // line of client.kubernetes, for messages
}

// Server is one entry of `servers:`.
type Server struct {
	Name      string            // `name:` row label; a preset name when Framework is empty; letters, digits, _ - .
	Framework string            // `framework:` adapter or preset to start from, as written; "" = Name (or a command: server)
	Options   map[string]string // `options:` over defaults.options (over defaults.nodelay when written): what the plan sets; "" for a command: server
	Adapter   string            // the adapter Framework (or Name) resolved to; "" for a command: server
	Values    map[string]string // every option of Adapter with the adapter's defaults, the preset's and Options applied, as `wsplan serve --opt` takes them
	Command   []string          // `command:` a user's own server instead of a built-in one (argv; a string is split on white space)
	Addrs     []string          // `addrs:` with command: where it listens (host:port), required then
	Path      string            // `path:` upgrade path; default /ws
	Line      int               // line of the entry, for messages

	// Target holds the handshake options, defaults' merged under the
	// server's own.
	Target
	URLs       []string    // `url:` or `urls:` a running server wsplan never starts, signals or stops; connections spread over them
	Targets    []URLTarget // URLs parsed
	ServeTLS   bool        // `tls: true` (or a tls: mapping): a preset serves TLS with the run's certificate; the client speaks TLS
	PID        int         // `pid:` a url target's process on this host, sampled from /proc with its descendants
	PIDFile    string      // `pid_file:` a file holding that pid, read when the server's run starts
	MetricsURL string      // `metrics_url:` a Prometheus endpoint exporting process_cpu_seconds_total and process_resident_memory_bytes
	urlList    bool        // written as urls:
}

// BuiltIn reports whether wsplan starts the server itself from a preset
// (not a command: or a url:).
func (s Server) BuiltIn() bool { return len(s.Command) == 0 && len(s.URLs) == 0 }

// Resources reports whether the server's CPU and memory can be measured:
// wsplan started it, or a url target has pid:, pid_file: or metrics_url:.
func (s Server) Resources() bool {
	return !s.External() || s.PID != 0 || s.PIDFile != "" || s.MetricsURL != ""
}

// Phase is one entry of `phases:`.
type Phase struct {
	Kind string          // the entry's key, e.g. "echo"
	Name string          // `name:` inside the body; default Kind for the first phase of a kind, Kind#N for the Nth (echo#2); unique in the plan
	Spec scenarios.Phase // decoded, defaulted, validated body
	Line int             // line of the kind key
}

// Assertion is one entry of `assert:`.
type Assertion struct {
	Name    string   // `name:` shown instead of the expression; default "" (show Expr)
	Expr    string   // `expr:` an expr-lang boolean expression; required (compiled by the engine, not here)
	Phase   string   // `phase:` phase name or kind it applies to; "" = every phase that has the variables it uses
	Servers []string // `server:` a name or a list of names (of the plan, before --only) it applies to; empty = all
	Abort   bool     // `abort:` stop the run at the first failure; default false
	Line    int      // line of its `expr:` key (of the entry when expr: is missing), for messages about the expression
}

// setDefaults fills every zero plan-level field with its documented
// default. It is the only place plan defaults are applied.
func (p *Plan) setDefaults() {
	if p.Name == "" {
		base := filepath.Base(p.File)
		p.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	d := &p.Defaults
	if d.NoDelay == nil {
		t := DefaultNoDelay
		d.NoDelay = &t
	}
	if d.ReadyTime == 0 {
		d.ReadyTime = units.Duration(DefaultReadyTimeout)
	}
	if d.StopGrace == 0 {
		d.StopGrace = units.Duration(DefaultStopGrace)
	}
	if d.Ports == 0 {
		d.Ports = DefaultPorts
	}
	if d.BasePort == 0 {
		d.BasePort = DefaultBasePort
	}
	if d.Host == "" {
		d.Host = DefaultListen
	}
	if d.Sample == 0 {
		d.Sample = units.Duration(DefaultSampleInterval)
	}
	if p.Client.IdleExit == 0 {
		p.Client.IdleExit = units.Duration(DefaultIdleExit)
	}
	for i := range p.Servers {
		if p.Servers[i].Path == "" {
			p.Servers[i].Path = DefaultPath
		}
	}
}
