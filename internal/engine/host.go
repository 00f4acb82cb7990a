package engine

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/wsplan/wsplan/frameworks"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/sysctl"
)

// Per-connection memory estimates used by preflight, kernel socket memory
// included. The client's follows its measured cost (see docs/results.md, Client
// cost); the server's covers a goroutine-per-connection server with a
// reused read buffer (event-loop servers such as nbio_nonblocking and
// greatws need far less).
const (
	MemPerConnServer = 16 << 10
	MemPerConnClient = 4 << 10
)

// Conns returns the most connections the plan holds open at once: the sum
// of what its phases open (scenarios.Opener).
func Conns(p *plan.Plan) int {
	n := 0
	for _, ph := range p.Phases {
		if o, ok := ph.Spec.(scenarios.Opener); ok {
			c, _ := o.Opens()
			n += c
		}
	}
	return n
}

func connectConcurrency(p *plan.Plan) int {
	n := 0
	for _, ph := range p.Phases {
		if o, ok := ph.Spec.(scenarios.Opener); ok {
			_, c := o.Opens()
			n = max(n, c)
		}
	}
	return n
}

// Shards returns how many client processes the plan runs, given the fd hard
// limit: 0 when the client runs inside wsplan (shards: 0), the plan's
// number, or for `auto` enough that each stays under the limit and at least
// one per source address.
func Shards(p *plan.Plan, hard uint64) int {
	switch {
	case p.Client.Shards > 0:
		return int(p.Client.Shards)
	case p.Client.Shards < 0: // auto
		n := max(1, len(p.Client.SourceAddrs))
		if per := int(hard) - sysctl.FDSlack; hard > 0 && per > 0 {
			n = max(n, (Conns(p)+per-1)/per)
		}
		return n
	}
	return 0
}

// Needs works out what the plan asks of the host.
func Needs(p *plan.Plan, l Layout, hard uint64) sysctl.Needs {
	conns := Conns(p)
	n := sysctl.Needs{
		Conns:              conns,
		ServerFDs:          sysctl.ServerFDs(conns, p.Defaults.Ports),
		Targets:            p.Defaults.Ports,
		ConnectConcurrency: connectConcurrency(p),
		MemPerConnServer:   MemPerConnServer,
		MemPerConnClient:   MemPerConnClient,
		ServerCPUs:         l.ServerCPUs,
		ClientCPUs:         l.ClientCPUs,
		ServerPorts:        ServerPorts(p),
	}
	if _, ok := p.Vars["conns"]; ok {
		n.ConnsVar = "conns"
	}
	for _, s := range p.Servers {
		if len(s.Addrs) > 0 {
			n.Targets = min(n.Targets, len(s.Addrs))
		}
	}
	if len(p.Client.Remote) > 0 || p.Client.Kubernetes != nil {
		// The client runs elsewhere: remotePreflight checks the shards'
		// hosts (Kubernetes pods once they exist, before the run), and
		// its ephemeral ports are theirs.
		n.MemPerConnClient, n.ServerPorts = 0, nil
		if allExternal(p) { // and the servers too: nothing runs here
			n.ServerFDs, n.MemPerConnServer, n.ConnectConcurrency = 0, 0, 0
		}
		return n
	}
	shards := max(1, Shards(p, hard))
	for i := range shards {
		c := conns / shards
		if i < conns%shards {
			c++
		}
		n.ClientProcesses = append(n.ClientProcesses, sysctl.ClientNeed{
			FDs: sysctl.ClientFDs(c), Conns: c, SourceAddrs: shardSources(p.Client.SourceAddrs, i, shards),
		})
	}
	return n
}

// shardSources returns the source addresses shard i of n binds: the plan's
// list dealt round-robin over the shards (every shard gets at least one when
// there are enough), or all of them when there are fewer addresses than
// shards.
func shardSources(all []string, i, n int) []string {
	if len(all) == 0 {
		return nil
	}
	if len(all) < n {
		return []string{all[i%len(all)]}
	}
	var out []string
	for k := i; k < len(all); k += n {
		out = append(out, all[k])
	}
	return out
}

// CheckLimits returns an error for every server that cannot run a phase of
// the plan because of a declared library limit (frameworks.Limits): empty
// messages (scenarios.Messenger) for a library that never delivers them, or
// a message type the server does not handle.
func CheckLimits(p *plan.Plan) []error {
	errs := checkProtocols(p)
	for _, s := range p.Servers {
		a, ok := frameworks.LookupAdapter(s.Adapter)
		if !ok || len(s.Command) > 0 {
			continue
		}
		for _, ph := range p.Phases {
			m, ok := ph.Spec.(scenarios.Messenger)
			if !ok {
				continue
			}
			payload, text := m.Message()
			if payload == 0 && a.Limits.NoEmptyMessages != "" {
				errs = append(errs, fmt.Errorf("%s:%d: server %s cannot run phase %s (payload 0): %s", p.File, ph.Line, s.Name, ph.Name, a.Limits.NoEmptyMessages))
			}
			if a.Limits.OneMessageType != nil {
				want := "binary"
				if text {
					want = "text"
				}
				if got := a.Limits.OneMessageType(s.Values); got != want {
					errs = append(errs, fmt.Errorf("%s:%d: server %s handles %s messages only, phase %s sends %s: %s", p.File, ph.Line, s.Name, got, ph.Name, want, a.Limits.OneMessageTypeWhy))
				}
			}
		}
	}
	return errs
}

// checkProtocols returns an error for every phase a server's protocol
// (protocol:) cannot carry: a phase runs through a protocol only when its
// kind says it can (scenarios.ProtocolSpeaker), else on raw messages.
func checkProtocols(p *plan.Plan) []error {
	var errs []error
	for _, s := range p.Servers {
		name := s.Protocol.ProtocolName()
		for _, ph := range p.Phases {
			why := ""
			if sp, ok := ph.Spec.(scenarios.ProtocolSpeaker); ok {
				why = sp.Speaks(name)
			} else if name != "" {
				why = "it sends raw WebSocket messages"
			}
			if why != "" {
				errs = append(errs, fmt.Errorf("%s:%d: server %s speaks %s, phase %s cannot run through it: %s", p.File, ph.Line, s.Name, protoLabel(name), ph.Name, why))
			}
		}
	}
	return errs
}

func protoLabel(name string) string {
	if name == "" {
		return "raw messages"
	}
	return name
}

// HostFacts collects what the report prints about the machine, from /proc
// (fs) and /sys (sys).
func HostFacts(fs procstat.FS, sys sysctl.FS, p *plan.Plan, l Layout) result.Host {
	h := result.Host{Go: runtime.Version(), ServerCPUs: sysctl.FormatCPUList(l.ServerCPUs), ClientCPUs: sysctl.FormatCPUList(l.ClientCPUs)}
	if info, err := procstat.HostInfo(fs); err == nil {
		h.Kernel, h.CPUModel, h.Cores, h.MemTotal = info.Kernel, info.CPUModel, info.Cores, info.MemTotal
	}
	h.NoFileSoft, h.NoFileHard = sysctl.NoFile()
	h.CPUIdle = sysctl.ReadIdle(sys).String()
	h.Sysctl = map[string]string{}
	keys := append([]string(nil), ReportedSysctls...)
	for k := range p.Host.Sysctl {
		keys = append(keys, k)
	}
	sfs := sysctl.FS{Root: filepath.Join(fs.Root, "sys")}
	for _, k := range keys {
		// An empty value (no reserved ports) is left out: the header would
		// print "key = " and nothing.
		if v, err := sfs.Get(k); err == nil && v != "" {
			h.Sysctl[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return h
}

// ReportedSysctls are recorded with every run (when set): they bound what a
// run can do.
var ReportedSysctls = []string{
	sysctl.PortRangeKey,
	sysctl.ReservedPortsKey, // what --tune reserved for the servers' ports
	"net.core.somaxconn",
	"net.ipv4.tcp_max_syn_backlog",
	"net.ipv4.tcp_tw_reuse",
	"fs.file-max",
	"fs.nr_open",
}

// allExternal reports whether every server is a url target, one wsplan
// neither starts nor runs on this host.
func allExternal(p *plan.Plan) bool {
	for _, s := range p.Servers {
		if !s.External() {
			return false
		}
	}
	return len(p.Servers) > 0
}
