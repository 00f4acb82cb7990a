// Package engine runs a loaded plan: for each server it starts the server
// process, opens the client, runs every phase while sampling CPU and memory
// of both sides, stops the server, and collects one result.Result per
// (server, phase). Before a run, Preflight checks the plan against the host
// and Tune applies its sysctls (Restore puts them back).
//
// It never prints: progress and notices go to the writers and callbacks the
// caller passes in, and Preflight and Tune return what they found for the
// caller (cmd/wsplan) to show.
package engine

import (
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/live"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/shard"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/sysctl"
)

// Driver is a load-generating client the engine can close.
type Driver interface {
	scenarios.Driver
	Close() error
}

// Options configure a run.
type Options struct {
	Plan *plan.Plan
	// Plans are the matrix combinations to run in turn (plan.LoadMatrix),
	// each result stamped with its plan's Combo; nil = Plan alone. Plan
	// defaults to Plans[0] and gives the host layout and the run's record.
	Plans []*plan.Plan
	// Count runs every server's phases this many times, each on a fresh
	// server process, servers interleaved; 0 = the plan's repeat:.
	Count int
	// Exe is the wsplan binary started as `Exe serve ...` for built-in
	// frameworks; default os.Executable().
	Exe string
	// OutDir receives server logs; it is created if missing.
	OutDir string
	// Progress receives the live progress line ("\r"-rewritten); nil = none.
	Progress io.Writer
	// Live exports every phase's counts while it runs (--metrics-listen,
	// --metrics-push); nil = none.
	Live *live.Hub
	// Notice receives one-line notices (server started, phase done); nil = none.
	Notice func(format string, args ...any)
	// NewDriver opens a client for one server; default: an in-process
	// client.Client.
	NewDriver func(client.Options) (Driver, error)
	// Proc is the /proc used for sampling; default /proc.
	Proc procstat.FS
	// Sys is the /sys the header's cpuidle line is read from; default /sys.
	Sys sysctl.FS
	// Layout is the CPU split; zero = computed from the plan and the host.
	Layout Layout
	// Abort is called with each result as soon as it is measured; when it
	// returns a reason, the run stops there (assertions with `abort: true`).
	Abort func(r *result.Result, run *result.Run) string
	// Gated reports whether an assertion on server's phase reads metric:
	// a fault that such an assertion reads is left to it
	// (scenarios.Judge); nil = none is.
	Gated func(server, phase, kind, metric string) bool
}

func (e *runner) serverArgv(i int, srv plan.Server, addrs []string) []string {
	if len(srv.Command) > 0 {
		return srv.Command
	}
	fw := srv.Framework
	if fw == "" {
		fw = srv.Name
	}
	argv := []string{e.o.Exe, "serve", "--framework", fw, "--path", srv.Path,
		"--payload", strconv.Itoa(planPayload(e.plan)), "--addrs", strings.Join(addrs, ",")}
	keys := make([]string, 0, len(srv.Options))
	for k := range srv.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		argv = append(argv, "--opt", k+"="+srv.Options[k])
	}
	return argv
}

// planPayload is the payload of the plan's first phase that sends
// messages (a buffer-size hint for servers), or scenarios.DefaultPayload.
func planPayload(p *plan.Plan) int {
	specs := make([]scenarios.Phase, len(p.Phases))
	for i, ph := range p.Phases {
		specs[i] = ph.Spec
	}
	return scenarios.PlanPayload(specs)
}

// driver opens the load-generating client for one server: in this process,
// or as shard processes when the plan asks for them.
func (e *runner) driver(srv plan.Server, addrs []string) (Driver, error) {
	co := ClientOptions(srv, addrs)
	co.SourceAddrs = e.plan.Client.SourceAddrs
	co.Loops = loops(e.plan, e.o.Layout)
	co.NoDelay = e.plan.Defaults.NoDelay == nil || *e.plan.Defaults.NoDelay
	co.Reconnect = e.plan.Client.ReconnectPolicy()
	if len(e.plan.Client.Remote) > 0 {
		return e.remoteDriver(srv, co)
	}
	n := e.shards()
	if n == 0 {
		return e.o.NewDriver(co)
	}
	co.SourceAddrs = nil
	co.Loops = max(1, e.plan.Client.Loops)
	sources := make([][]string, n)
	for i := range sources {
		sources[i] = shardSources(e.plan.Client.SourceAddrs, i, n)
	}
	g, err := shard.Start(shard.Spec{
		Exe: e.o.Exe, N: n, Client: co, Sources: sources, CPUs: e.o.Layout.ClientCPUs,
		LogDir: e.o.OutDir, Name: unsafeName.ReplaceAllString(e.plan.Redact(srv.Name), "_"), Grace: e.plan.Defaults.StopGrace.D(),
		Secrets: e.plan.Secrets,
	})
	if err != nil {
		return nil, err
	}
	e.o.Notice("%s: %d client shards, pids %v", srv.Name, n, g.Pids())
	return g, nil
}

// ClientOptions are the client options that say how to reach and greet
// srv at addrs (one per target; for a url server addrs[i] is
// srv.Targets[i].Addr): the request's Host and URI per target, headers
// (in name order), subprotocols, origin, TLS (wss:// URLs, or a preset
// served with tls: true, trusting srv.TLS.CAFile, which the engine sets to
// the run's CA) and the permessage-deflate offer.
func ClientOptions(srv plan.Server, addrs []string) client.Options {
	co := client.Options{
		Targets:      addrs,
		Path:         srv.Path,
		Subprotocols: srv.Subprotocols,
		Origin:       srv.Origin,
		Compression:  srv.Offer(),
		Protocol:     srv.Protocol.Options(),
	}
	if len(srv.Targets) == len(addrs) {
		for _, t := range srv.Targets {
			co.Hosts = append(co.Hosts, t.Host)
			co.RequestURIs = append(co.RequestURIs, t.RequestURI)
		}
	}
	names := make([]string, 0, len(srv.Headers))
	for k := range srv.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		co.Headers = append(co.Headers, [2]string{k, srv.Headers[k]})
	}
	if srv.ServeTLS || (len(srv.Targets) > 0 && srv.Targets[0].TLS) {
		co.TLS = &client.TLSOptions{}
		if t := srv.TLS; t != nil {
			co.TLS = &client.TLSOptions{CAFile: t.CAFile, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, SessionResumption: t.SessionResumption, MaxVersion: uint16(t.MaxVersion), Groups: t.Groups}
		}
	}
	return co
}

func (e *runner) shards() int {
	_, hard := sysctl.NoFile()
	return Shards(e.plan, hard)
}
