// Package plan loads and validates wsplan plan files.
//
// Data flow: Load reads the YAML, resolves `vars:` (overridden by --set) into
// `${name}` references, strictly decodes every section (unknown keys are
// errors), applies defaults in one place, validates everything, and returns
// either a Plan ready to run or every problem at once, each naming
// file:line and the field. Nothing is started here.
package plan

import (
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// Plan is a loaded, defaulted and validated plan.
type Plan struct {
	File        string            // path it was loaded from
	Name        string            // `name:`; default: the file's base name without extension
	Description string            // `description:`
	Vars        map[string]string // resolved variables, after --set
	Host        Host              // `host:`
	Defaults    Defaults          // `defaults:`
	Client      Client            // `client:`
	Servers     []Server          // `servers:`, in plan order, after --only
	Phases      []Phase           // `phases:`, in plan order
	Assert      []Assertion       // `assert:`
}

// Host is the `host:` section: what the host must look like.
type Host struct {
	Sysctl     map[string]string // name -> value as `sysctl -w` takes it; checked always, applied with --tune
	SysctlLine map[string]int    // line of each sysctl key, for messages
	NoFile     int               // RLIMIT_NOFILE wanted for every process; default 0 = raise the soft limit to the hard limit
	ServerCPUs string            // CPU list for servers ("0", "0-1", "0,2"); default: first half of the CPUs
	ClientCPUs string            // CPU list for the client; default: the other half (all CPUs on a 1-CPU host)
}

// Defaults is the `defaults:` section: options applied to every server
// unless the server sets them.
type Defaults struct {
	NoDelay     *bool             // `nodelay:`; default true (client and servers)
	Options     map[string]string // `options:` common framework options for every server
	ReadyTime   units.Duration    // `ready_timeout:` how long a server may take to accept its first upgrade; default 20s
	StopGrace   units.Duration    // `stop_grace:` time between SIGTERM and SIGKILL; default 3s
	Ports       int               // `ports:` listen ports per server; default 1
	BasePort    int               // `base_port:` first listen port; default 9000 (each server gets its own range in turn)
	Host        string            // `listen:` address servers listen on; default 127.0.0.1 (loopback only unless allow_remote)
	Sample      units.Duration    // `sample_interval:` CPU/RSS sampling interval; default 1s, shorter for short phases
	AllowRemote bool              // `allow_remote:` permit a non-loopback listen/target address; default false
}

// Client is the `client:` section.
type Client struct {
	Shards      int      // `shards:` client processes; 0 = run in the wsplan process (auto = -1)
	SourceAddrs []string // `source_addrs:` local IPs the client binds, round-robin
	Loops       int      // `loops:` event loops per client process; default: the client CPUs
}

// Server is one entry of `servers:`.
type Server struct {
	Name      string            // `name:` row label; a preset name when Framework is empty
	Framework string            // `framework:` adapter or preset to start from; default: Name
	Options   map[string]string // `options:` merged over defaults.options and the preset's
	Command   []string          // `command:` a user's own server instead of a built-in one (argv)
	Addrs     []string          // `addrs:` with command: where it listens (host:port)
	Path      string            // `path:` upgrade path; default /ws
	Line      int               // line of the entry, for messages
}

// Phase is one entry of `phases:`.
type Phase struct {
	Kind string          // the entry's key, e.g. "echo"
	Name string          // `name:` inside the body, default Kind (or Kind#N when repeated)
	Spec scenarios.Phase // decoded, defaulted, validated body
	Line int
}

// Assertion is one entry of `assert:`.
type Assertion struct {
	Name    string   // `name:` shown instead of the expression
	Expr    string   // `expr:` an expr-lang boolean expression
	Phase   string   // `phase:` phase name or kind it applies to; "" = every phase that has the variables it uses
	Servers []string // `server:` names it applies to; empty = all
	Abort   bool     // `abort:` stop the run at the first failure
	Line    int
}
