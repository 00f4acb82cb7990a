package engine

import (
	"fmt"
	"maps"
	"net"
	"strconv"

	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/sysctl"
)

// The servers' ports and the client's ephemeral ports.
//
// The client connects without binding a port, so the kernel picks its local
// port from net.ipv4.ip_local_port_range. Plans widen that range (to "1024
// 65535") to hold many connections per server address, and then it covers
// the servers' listen ports too: a client socket, or one left in TIME_WAIT,
// that holds local port 9003 keeps the next server from binding 9003. With
// --tune the engine reserves those ports itself (net.ipv4.ip_local_reserved_ports,
// merged with what the host and the plan reserve already); without it,
// preflight warns.

// ReserveWhy is what the tuning changes say about the ports Tune adds to
// net.ipv4.ip_local_reserved_ports.
const ReserveWhy = "keeps the servers' ports out of the client's port range"

// ServerPorts returns the ports the servers wsplan starts listen on, over
// every plan given (the matrix combinations of a run): a built-in server's
// defaults.base_port + i × defaults.ports onwards, a command: server's (or
// addrs:) ports. url: targets are not wsplan's and have none here.
func ServerPorts(plans ...*plan.Plan) sysctl.Ranges {
	var ports []int
	for _, p := range plans {
		for i, srv := range p.Servers {
			if srv.External() {
				continue
			}
			for _, a := range serverAddrs(p, i, srv) {
				if _, port, err := net.SplitHostPort(a); err == nil {
					if n, err := strconv.Atoi(port); err == nil {
						ports = append(ports, n)
					}
				}
			}
		}
	}
	return sysctl.RangesOf(ports...)
}

// HostTune is what a --tune run writes under /proc/sys.
type HostTune struct {
	// Sysctl is the plan's host.sysctl, plus net.ipv4.ip_local_reserved_ports
	// when the client's port range covers server ports or the plan sets it:
	// then the key holds what the host reserves, what the plan asks for and
	// the covered server ports, together.
	Sysctl map[string]string
	// Reserved are the server ports wsplan adds to the host's and the
	// plan's reservations; empty when they hold them already.
	Reserved sysctl.Ranges
	// Warning says why the server ports could not be reserved; "" when
	// they could (or need not be).
	Warning string
}

// TuneSysctls works out what a --tune run of plans (one per matrix
// combination; the first one's host.sysctl applies) writes through fs: the
// plan's sysctls, and the server ports that the client's port range the run
// will have covers (the plan's net.ipv4.ip_local_port_range, else the
// host's) added to net.ipv4.ip_local_reserved_ports. An existing
// reservation is never dropped.
func TuneSysctls(fs sysctl.FS, plans []*plan.Plan) HostTune {
	p := plans[0]
	t := HostTune{Sysctl: maps.Clone(p.Host.Sysctl)}
	planValue, planSets := p.Host.Sysctl[sysctl.ReservedPortsKey]
	planReserved, err := sysctl.ParsePortList(planValue)
	if err != nil { // plan.Load has rejected it; Apply lets the kernel say so
		return t
	}
	covered := coveredPorts(fs, p.Host.Sysctl, ServerPorts(plans...))
	if len(covered) == 0 && !planSets {
		return t
	}
	cur, err := fs.Get(sysctl.ReservedPortsKey)
	var hostReserved sysctl.Ranges
	if err == nil {
		hostReserved, err = sysctl.ParsePortList(cur)
	}
	if err != nil {
		if !planSets { // a plan's own key that cannot be read stops Tune
			t.Warning = fmt.Sprintf("the client's port range covers server ports %s, and they cannot be reserved: %v; a client socket holding one, even in TIME_WAIT, keeps the next server from binding it", covered, err)
		}
		return t
	}
	if t.Sysctl == nil {
		t.Sysctl = map[string]string{}
	}
	have := hostReserved.Union(planReserved)
	t.Sysctl[sysctl.ReservedPortsKey] = have.Union(covered).String()
	t.Reserved = covered.Minus(have)
	return t
}

// coveredPorts returns the ports that the client's port range, as want
// sets it or else as fs reads it, covers; none when the range is unknown.
func coveredPorts(fs sysctl.FS, want map[string]string, ports sysctl.Ranges) sysctl.Ranges {
	if len(ports) == 0 {
		return nil
	}
	v, ok := want[sysctl.PortRangeKey]
	if !ok {
		var err error
		if v, err = fs.Get(sysctl.PortRangeKey); err != nil {
			return nil
		}
	}
	lo, hi, err := sysctl.ParsePortRange(v)
	if err != nil {
		return nil
	}
	return ports.Within(lo, hi)
}
