package plan

import (
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/secret"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/sysctl"
)

// A plan file is decoded straight into the types below: each key is one
// field, declared once with its tags, which the loader (decode.go), the
// JSON Schema (package schema) and TestSyntaxTags all read:
//
//   - yaml: the key (fields tagged "-" are filled in by Load: lines, what
//     a key resolves to);
//   - doc: one line for people and the schema;
//   - default: as a user would write it (applied by setDefaults, the one
//     place defaults are applied, at every depth: declared.go);
//   - min, max: inclusive bounds, written as the value (for a list, its
//     length); required (checked at every depth: declared.go).
//
// Adding a key is adding its field here, plus its check in check.go when
// it has one beyond its bounds (a relation with another key). A key whose written form is not the engine's (a switch or a
// mapping, one URL or several) has a type of its own with UnmarshalYAML
// and JSONSchema (keys.go, targets.go).

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

// Defaults and bounds other packages need as constants (flags, shards,
// Kubernetes objects): each is its key's tag too, and TestTagConstants
// ties the two. The rest live in their tags alone.
const (
	DefaultIdleExit = 30 * time.Second // client.idle_exit
	// DefaultMetricsInterval is metrics.interval and --metrics-interval.
	DefaultMetricsInterval = 5 * time.Second
	// MinMetricsInterval bounds metrics.interval and --metrics-interval.
	MinMetricsInterval = 100 * time.Millisecond
)

// MaxPort is the highest listen port.
const MaxPort = sysctl.MaxPort

// Syntax returns the zero Plan, whose tags declare every key of a plan
// file (phase bodies excepted: those are each kind's, in scenarios);
// package schema generates the plan's JSON Schema from them.
func Syntax() any { return Plan{} }

// Plan is a loaded, defaulted and validated plan.
type Plan struct {
	// File is the path the plan was loaded from.
	File        string `yaml:"-"`
	Name        string `yaml:"name" doc:"plan name shown in reports; default: the file's base name without extension"`
	Description string `yaml:"description" doc:"one line shown with the results"`
	// Vars are the variables resolved, after --set, as text (Load reads
	// them from the YAML before anything else).
	Vars     map[string]string `yaml:"vars" doc:"variables: name → scalar value, referenced as ${name} in any value; override with --set name=value"`
	Host     Host              `yaml:"host" doc:"what the host must look like"`
	Defaults Defaults          `yaml:"defaults" doc:"settings for every server"`
	Client   Client            `yaml:"client" doc:"the load-generating client"`
	Soak     Soak              `yaml:"soak" doc:"how phases with a constant load (hold, rate, churn, script) judge the server's memory over time"`
	Metrics  Metrics           `yaml:"metrics" doc:"push the run's live metrics while it runs (as --metrics-push)"`
	// Servers are in plan order, after --only.
	Servers []Server    `yaml:"servers" required:"true" min:"1" doc:"the servers to benchmark, each through every phase in turn"`
	Phases  []Phase     `yaml:"phases" required:"true" min:"1" doc:"what to run against each server, in order; each item has one key, its kind"`
	Assert  []Assertion `yaml:"assert" doc:"boolean expressions checked against each result; a failure exits 1"`
	Repeat  int         `yaml:"repeat" default:"1" min:"1" max:"1000" doc:"run every server's phases this many times, each on a fresh server process, servers interleaved; tables show the median (--count wins)"`
	// Matrix is the vars the run sweeps, after --set and --only-matrix,
	// in plan order; nil without one.
	Matrix Matrix `yaml:"matrix" doc:"declared vars → lists of values: the plan runs for every combination (--set fixes a var, --only-matrix VAR=VALUE picks values)"`
	// Combo is the matrix combination this plan was loaded with
	// (LoadMatrix); nil for a plan loaded on its own.
	Combo map[string]string `yaml:"-"`
	// Secrets are the plan's secrets (secrets.go): the values of
	// ${env:NAME} and the credentials the plan writes itself; Redact
	// removes them from text. Never nil after Load.
	Secrets *secret.Set `yaml:"-"`
}

// Metrics is `metrics:`, where the run's live metrics are pushed while
// it runs (besides --metrics-push).
type Metrics struct {
	RemoteWrite string            `yaml:"remote_write" doc:"Prometheus remote-write URL, e.g. http://prometheus:9090/api/v1/write; values may be ${env:NAME} secrets"`
	OTLP        string            `yaml:"otlp" doc:"OTLP/HTTP metrics URL, e.g. http://otel-collector:4318/v1/metrics; values may be ${env:NAME} secrets"`
	Interval    units.Duration    `yaml:"interval" default:"5s" min:"100ms" doc:"how often the metrics are pushed"`
	Headers     map[string]string `yaml:"headers" doc:"HTTP headers of every push (e.g. Authorization: Bearer ${env:TOKEN}); values may be ${env:NAME} secrets"`
}

// Host is `host:`, what the host must look like.
type Host struct {
	Sysctl map[string]string `yaml:"sysctl" doc:"sysctl name → value as sysctl -w takes it; checked before a run, applied by wsplan tune"`
	// SysctlLine is the line of each sysctl key, for messages.
	SysctlLine map[string]int  `yaml:"-"`
	NoFile     int             `yaml:"nofile" default:"0" min:"0" doc:"RLIMIT_NOFILE for every process; 0 = raise the soft limit to the hard limit"`
	ServerCPUs string          `yaml:"server_cpus" doc:"CPU list for the servers (0, 0-1, 0,2); default: the first half of the online CPUs"`
	ClientCPUs string          `yaml:"client_cpus" doc:"CPU list for the client; default: the other half (all CPUs on a 1-CPU host)"`
	IdlePoll   *units.Duration `yaml:"idle_poll" min:"0s" max:"10ms" doc:"how long an idle CPU polls before it halts (the haltpoll cpuidle driver of KVM guests); checked before a run, applied by --tune; default: leave the host as it is"`
}

// Defaults is `defaults:`, settings for every server unless the server
// sets them.
type Defaults struct {
	// NoDelay is never nil after Load; when written, it is every built-in
	// server's nodelay option unless the server's options set it.
	NoDelay     *bool             `yaml:"nodelay" default:"true" doc:"TCP_NODELAY on the client and, when written, on every built-in server"`
	Options     map[string]string `yaml:"options" doc:"framework options for every built-in server (each server's options: win)"`
	ReadyTime   units.Duration    `yaml:"ready_timeout" default:"20s" min:"1ns" doc:"how long a server may take to accept its first upgrade"`
	StopGrace   units.Duration    `yaml:"stop_grace" default:"3s" min:"1ns" doc:"time between SIGTERM and SIGKILL when a server stops"`
	Ports       int               `yaml:"ports" default:"1" min:"1" max:"1000" doc:"listen ports per server"`
	BasePort    int               `yaml:"base_port" default:"9000" min:"1" max:"65534" doc:"first listen port; server i listens on base_port + i × ports …, up to 65535"`
	Host        string            `yaml:"listen" default:"127.0.0.1" doc:"IP address servers listen on; loopback unless allow_remote"`
	Sample      units.Duration    `yaml:"sample_interval" default:"1s" min:"1ns" doc:"CPU and RSS sampling interval (shorter for short phases)"`
	AllowRemote bool              `yaml:"allow_remote" default:"false" doc:"permit non-loopback listen, source and target addresses"`
	// Target is headers:, subprotocols:, origin:, tls: and compression:
	// for every server (a server's own win).
	Target `yaml:",inline"`
}

// Soak is `soak:`: how the resource series of a phase with a constant
// load (scenarios.Kind.Soak) is fitted and judged.
type Soak struct {
	LeakThreshold units.Size     `yaml:"leak_threshold" default:"64MiB" min:"1" doc:"server RSS growth per hour, fitted over a phase with a constant load, above which the phase reads leak? (churn judges per 100,000 cycles instead)"`
	Settle        units.Duration `yaml:"settle" min:"0s" doc:"the start of each phase left out of the fits (warm-up); default: the first fifth of the phase"`
	Drain         units.Duration `yaml:"drain" default:"0s" min:"0s" hint:"0 = not read" doc:"after each such phase, how long to wait with its load stopped before reading the server's RSS (rss_after_drain)"`
}

// Client is `client:`, the load-generating client.
type Client struct {
	Shards      ShardCount `yaml:"shards" default:"0" doc:"client processes: 0 = inside wsplan, N, or auto (the engine decides)"`
	SourceAddrs []string   `yaml:"source_addrs" doc:"local IP addresses the client binds, round-robin; default: the kernel picks"`
	Loops       int        `yaml:"loops" default:"0" min:"0" hint:"0 = one per client CPU" doc:"event loops per client process"`

	Remote  []string `yaml:"remote" doc:"host:port of remote shards (wsplan shard --listen) that run the client instead of this host"`
	Weights []int    `yaml:"weights" doc:"with remote: each shard's share of the connections; default: 1,000 per CPU of its host, at most its fd hard limit"`
	// Certs is resolved against the plan's directory by Load.
	Certs    string         `yaml:"certs" doc:"with remote: directory of the run's certificates (wsplan shard certs DIR) the shards were started with; relative to the plan's directory"`
	IdleExit units.Duration `yaml:"idle_exit" default:"30s" min:"1ns" doc:"with remote or kubernetes: how long a shard waits for the next orchestrator after this one leaves before it exits"`

	Reconnect client.Reconnect `yaml:"reconnect" doc:"how dropped connections come back (policy none, immediate or backoff): counted as reconnects, their messages in flight lost, never sent again"`

	// Kubernetes: the client runs as remote shards in an Indexed Job
	// wsplan creates before the run and deletes after it; nil = not on
	// Kubernetes.
	Kubernetes *Kube `yaml:"kubernetes" doc:"run the client as remote shards in a Kubernetes cluster (an Indexed Job wsplan creates and deletes)"`
}

// Kube is `client.kubernetes:`, defaults applied.
type Kube struct {
	Namespace string `yaml:"namespace" default:"default" doc:"namespace of the Job, Service and Secret"`
	// Image stays "" after Load when unwritten: the cmd fills it in.
	Image         string            `yaml:"image" doc:"the wsplan image the shard pods run (see Dockerfile); default ghcr.io/wsplan/wsplan:<this version>"`
	Shards        int               `yaml:"shards" default:"2" min:"1" doc:"shard pods"`
	NodeSelector  map[string]string `yaml:"node_selector" doc:"node labels the pods must run on"`
	KubeResources `yaml:"resources" doc:"each pod's CPU and memory, as request and limit"`
	// Spread is never nil after Load.
	Spread         *bool          `yaml:"spread" default:"true" doc:"spread the pods over nodes (topology spread + anti-affinity)"`
	Kubeconfig     string         `yaml:"kubeconfig" doc:"kubeconfig file; default: in-cluster, else $KUBECONFIG or ~/.kube/config"`
	Port           int            `yaml:"port" default:"7070" min:"1" max:"65535" doc:"the shards' listen port"`
	ReadyTimeout   units.Duration `yaml:"ready_timeout" default:"5m" min:"1ns" doc:"how long the pods may take to be ready"`
	ActiveDeadline units.Duration `yaml:"active_deadline" default:"2h" min:"1s" doc:"the Job's activeDeadlineSeconds, so nothing outlives a killed orchestrator for long"`
	TTL            units.Duration `yaml:"ttl_after_finished" default:"10m" min:"0s" doc:"the Job's ttlSecondsAfterFinished (its Service and Secret go with it)"`
	// Line is the line of client.kubernetes, for messages.
	Line int `yaml:"-"`
}

// DefaultKube is client.kubernetes with every key at its default: what
// `wsplan kube` uses for a plan without one.
func DefaultKube() *Kube {
	k := &Kube{}
	decl.Defaults(k)
	return k
}

// KubeResources is `client.kubernetes.resources:`; "" = none.
type KubeResources struct {
	CPU    string `yaml:"cpu" doc:"CPU request and limit, a Kubernetes quantity such as 2 or 1500m"`
	Memory string `yaml:"memory" doc:"memory request and limit, a Kubernetes quantity such as 4Gi"`
}

// Server is one entry of `servers:`: a preset or framework wsplan starts,
// a command: of the user's, or a url: of a running server.
type Server struct {
	Name      string `yaml:"name" required:"true" doc:"row label: a preset (wsplan frameworks), or any label with framework:, command: or url:"`
	Framework string `yaml:"framework" doc:"adapter or preset to start from; default: name"`
	// Options are, after Load, every option the plan sets: the server's
	// over defaults.options (over defaults.nodelay when written).
	Options map[string]string `yaml:"options" doc:"framework options over the preset's and defaults.options (wsplan frameworks lists them)"`
	Command Argv              `yaml:"command" doc:"your own server instead of a built-in one: a list of arguments, or a string split on white space"`
	Addrs   []string          `yaml:"addrs" doc:"with command: where it listens, host:port (required then)"`
	Path    string            `yaml:"path" default:"/ws" doc:"upgrade path"`
	URL     string            `yaml:"url" doc:"a running server wsplan never starts, signals or stops: its ws:// or wss:// URL"`
	// URLs are the running server's URLs, url: or urls: (Load puts url:
	// here); connections spread over them.
	URLs []string `yaml:"urls" doc:"several URLs of one running server; the connections spread over them"`
	// Target holds the handshake options, defaults' merged under the
	// server's own by Load.
	Target     `yaml:",inline"`
	PID        int    `yaml:"pid" min:"0" doc:"with url: the server's process on this host, sampled from /proc with its descendants"`
	PIDFile    string `yaml:"pid_file" doc:"with url: a file holding that process id, read when the server's run starts"`
	MetricsURL string `yaml:"metrics_url" doc:"with url: a Prometheus endpoint exporting process_cpu_seconds_total and process_resident_memory_bytes"`
	// RestartCommand is run by a restart fault (faults: [{restart: server}]).
	RestartCommand Argv `yaml:"restart_command" doc:"with url: the command a restart fault runs to restart the server (wsplan waits for it to end, then for an upgrade); a list of arguments, or a string split on white space"`

	// Filled in by Load: Adapter is what Framework (or Name) resolved to
	// ("" unless built in); Values every option of Adapter with the
	// adapter's defaults, the preset's and Options applied, as `wsplan
	// serve --opt` takes them; Line the line of the entry; Targets the
	// URLs parsed; ServeTLS tls: true (or a tls: mapping): a preset serves
	// TLS with the run's certificate, and the client speaks TLS.
	Adapter  string            `yaml:"-"`
	Values   map[string]string `yaml:"-"`
	Line     int               `yaml:"-"`
	Targets  []URLTarget       `yaml:"-"`
	ServeTLS bool              `yaml:"-"`
	urlList  bool              // written as urls:
}

// BuiltIn reports whether wsplan starts the server itself from a preset
// (not a command: or a url:).
func (s Server) BuiltIn() bool { return len(s.Command) == 0 && len(s.URLs) == 0 }

// Resources reports whether the server's CPU and memory can be measured:
// wsplan started it, or a url target has pid:, pid_file: or metrics_url:.
func (s Server) Resources() bool {
	return !s.External() || s.PID != 0 || s.PIDFile != "" || s.MetricsURL != ""
}

// Phase is one entry of `phases:`: a mapping with one key, the kind,
// whose value is the kind's body, decoded in two passes (phases.go).
type Phase struct {
	Kind string          // the entry's key, e.g. "echo"
	Spec scenarios.Phase // decoded, defaulted, validated body
	Line int             // line of the kind key
	PhaseKeys
}

// PhaseKeys are the keys every phase body has besides its kind's own,
// declared once here: the loader takes them out of the body before the
// kind decodes the rest (phaseKeyReaders), and the schema adds them to
// every kind's body.
type PhaseKeys struct {
	// Name defaults to Kind for the first phase of a kind, Kind#N for the
	// Nth (echo#2); unique in the plan.
	Name string `yaml:"name" doc:"the phase's name in results and assertions; default its kind (echo#2 for the second echo phase, …)"`
	// Faults are in time order.
	Faults []Fault `yaml:"faults" doc:"faults done to the server while the phase runs: [{at: 20s, restart: server}]"`
	// Allow says how many units of each of the phase's faults
	// (scenarios.PhaseFaults) it may count and still pass; nil = none
	// (scenarios.Judge).
	Allow scenarios.Allow `yaml:"allow" doc:"faults the phase may count and still pass (the verdict rule): {failed: 10, lost: 0.1%}"`
}

// JSONSchema is a placeholder for package schema, which builds an item of
// phases: from every kind's parameters.
func (*Phase) JSONSchema() map[string]any { return map[string]any{} }

// Assertion is one entry of `assert:`.
type Assertion struct {
	Name string `yaml:"name" doc:"shown instead of the expression"`
	// Expr is compiled by package assert, not here.
	Expr  string `yaml:"expr" required:"true" doc:"an expr-lang boolean expression over the phase's metrics, e.g. failed == 0"`
	Phase string `yaml:"phase" doc:"phase name or kind it applies to; default: every phase that has the metrics it uses"`
	// Servers are names of the plan's servers, before --only.
	Servers Names `yaml:"server" doc:"a server name or a list of names it applies to; default: all"`
	Abort   bool  `yaml:"abort" default:"false" doc:"stop the run at the first failure"`
	// Line is the line of its expr: key (of the entry when expr: is
	// missing), for messages about the expression.
	Line int `yaml:"-"`
}
