package sysctl

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FDSlack is the file descriptors a process needs besides its sockets:
// stdio, the Go runtime's epoll and pipes, log files, /proc readers.
const FDSlack = 64

// wideLow-wideHigh is the ephemeral port range fixes suggest: every port above the
// privileged ones.
const (
	wideLow, wideHigh = 1024, 65535
	wideSize          = wideHigh - wideLow + 1
)

// ServerFDs returns the file descriptors one server process needs for conns
// connections on listeners listening sockets: conns + listeners + FDSlack.
func ServerFDs(conns, listeners int) int { return conns + listeners + FDSlack }

// ClientFDs returns the file descriptors one client process needs for conns
// connections: conns + FDSlack.
func ClientFDs(conns int) int { return conns + FDSlack }

// Needs is what a plan asks of the host, worked out from the plan by the
// caller. Zero fields are not checked.
type Needs struct {
	// Conns is the number of connections open at once (the connect phase's
	// connections); every server in turn holds them all.
	Conns int
	// ConnsVar is the plan variable Conns comes from ("conns"), so fixes can
	// say "--set conns=19936"; "" makes them name the connect phase instead.
	ConnsVar string
	// ServerFDs is the file descriptors one server process needs
	// (see ServerFDs); a server is one process and cannot be sharded.
	ServerFDs int
	// ClientProcesses is one entry per client process: one when the client
	// runs inside wsplan, one per shard otherwise.
	ClientProcesses []ClientNeed
	// Targets is the number of distinct destination host:port the client
	// spreads its connections over (the server's listening sockets); default 1.
	Targets int
	// ConnectConcurrency is the connect phase's concurrency: handshakes in
	// flight at once.
	ConnectConcurrency int
	// MemPerConnServer and MemPerConnClient are estimated bytes of memory per
	// connection in the server and in the client.
	MemPerConnServer, MemPerConnClient int64
	// ServerCPUs and ClientCPUs are the CPUs the plan pins servers and the
	// client to.
	ServerCPUs, ClientCPUs []int
	// ServerPorts are the ports the servers wsplan starts listen on; they
	// should be out of the client's ephemeral port range.
	ServerPorts Ranges
}

// ClientNeed is what one client process needs.
type ClientNeed struct {
	FDs         int      // file descriptors (see ClientFDs)
	Conns       int      // connections it opens
	SourceAddrs []string // local addresses it binds, round-robin; empty = the kernel's choice (one address)
}

// HostFacts is what the host offers, as read by ReadHostFacts. A zero field
// means unknown: the checks that need it are skipped.
type HostFacts struct {
	NoFileHard                  uint64 // RLIMIT_NOFILE hard limit of this process (children inherit it)
	PortRangeLow, PortRangeHigh int    // net.ipv4.ip_local_port_range
	MemAvailable                int64  // bytes, MemAvailable in /proc/meminfo
	OnlineCPUs                  []int  // CPUs this process may run on
	FileMax                     int64  // fs.file-max: file descriptors system-wide
	NrOpen                      int64  // fs.nr_open: the most RLIMIT_NOFILE can be raised to
	Somaxconn                   int    // net.core.somaxconn: accept queue cap per listening socket
	ReservedPorts               Ranges // net.ipv4.ip_local_reserved_ports: ports never picked as ephemeral ones
	ReservedKnown               bool   // ReservedPorts was read (it may be empty); false = unknown
}

// Finding is one shortfall Preflight found: what is short, by how much, and
// the exact change that fixes it.
type Finding struct {
	Fatal bool   // the run cannot succeed as planned; stop before starting anything
	What  string // what is short and by how much
	Fix   string // how to fix it
}

// String is the finding as one line: "What: Fix".
func (f Finding) String() string { return f.What + ": " + f.Fix }

// FatalError returns the fatal findings joined as one error, or nil if there
// are none; warnings are left out.
func FatalError(findings []Finding) error {
	var errs []error
	for _, f := range findings {
		if f.Fatal {
			errs = append(errs, errors.New(f.String()))
		}
	}
	return errors.Join(errs...)
}

// Preflight checks what the plan needs against what the host offers and
// returns one Finding per shortfall, in this order: server file descriptors,
// client file descriptors, fs.nr_open, fs.file-max, ephemeral ports, server
// ports in the ephemeral range, memory, CPUs, net.core.somaxconn. No
// findings means the plan fits. It is a pure function.
//
// The ephemeral port check assumes the client lets the kernel pick the local
// port per destination (connect without bind, or bind with
// IP_BIND_ADDRESS_NO_PORT): then each (source address, destination
// address:port) pair can carry as many connections as the port range has
// ports, and client processes that share a source address share its ports.
func Preflight(in Needs, host HostFacts) []Finding {
	var out []Finding
	out = append(out, checkFDs(in, host)...)
	out = append(out, checkFileMax(in, host)...)
	out = append(out, checkPorts(in, host)...)
	out = append(out, checkReserved(in, host)...)
	out = append(out, checkMemory(in, host)...)
	out = append(out, checkCPUs(in, host)...)
	out = append(out, checkSomaxconn(in, host)...)
	return out
}

const raiseHard = "raise the hard limit (ulimit -Hn / limits.conf)"

func checkFDs(in Needs, host HostFacts) []Finding {
	var out []Finding
	hard := host.NoFileHard
	if hard > 0 && in.ServerFDs > 0 && uint64(in.ServerFDs) > hard {
		fix := raiseHard + "; a server is one process and cannot be sharded"
		if l := lowerConns(in, int64(hard)-int64(max(0, in.ServerFDs-in.Conns))); l != "" {
			fix = l + " or " + fix
		}
		out = append(out, Finding{Fatal: true,
			What: fmt.Sprintf("server process needs %d file descriptors, the hard limit (RLIMIT_NOFILE) is %d", in.ServerFDs, hard),
			Fix:  fix,
		})
	}
	if worst, total := worstClient(in.ClientProcesses); hard > 0 && worst >= 0 && uint64(in.ClientProcesses[worst].FDs) > hard {
		w := in.ClientProcesses[worst]
		who := "client process needs"
		if n := len(in.ClientProcesses); n > 1 {
			who = fmt.Sprintf("the largest of %d client shards needs", n)
		}
		fix := raiseHard
		if per := int64(hard) - int64(max(0, w.FDs-w.Conns)); per >= 1 {
			n := ceilDiv(int64(total), per)
			fix = fmt.Sprintf("use client shards: client: {shards: %d} (N ≥ %d keeps each shard at or under %d connections), or %s", n, n, per, raiseHard)
		}
		out = append(out, Finding{Fatal: true,
			What: fmt.Sprintf("%s %d file descriptors, the hard limit (RLIMIT_NOFILE) is %d", who, w.FDs, hard),
			Fix:  fix,
		})
	}
	if host.NrOpen > 0 && int64(in.ServerFDs) > host.NrOpen {
		out = append(out, Finding{
			What: fmt.Sprintf("server process needs %d file descriptors, fs.nr_open (the most RLIMIT_NOFILE can be raised to) is %d", in.ServerFDs, host.NrOpen),
			Fix:  fmt.Sprintf("set fs.nr_open: \"%d\" in host.sysctl with --tune before raising the hard limit", roundUp(int64(in.ServerFDs), 1<<20)),
		})
	}
	return out
}

// worstClient returns the index of the client process needing the most file
// descriptors (-1 if none) and the connections of all client processes.
func worstClient(procs []ClientNeed) (worst, total int) {
	worst = -1
	for i, p := range procs {
		total += p.Conns
		if worst < 0 || p.FDs > procs[worst].FDs {
			worst = i
		}
	}
	return worst, total
}

func checkFileMax(in Needs, host HostFacts) []Finding {
	total := int64(in.ServerFDs)
	for _, p := range in.ClientProcesses {
		total += int64(p.FDs)
	}
	if host.FileMax <= 0 || total <= 0 {
		return nil
	}
	fix := fmt.Sprintf("set fs.file-max: \"%d\" in host.sysctl with --tune", roundUp(total+total/4+1, 1<<20))
	switch {
	case total > host.FileMax:
		return []Finding{{Fatal: true,
			What: fmt.Sprintf("server and client need %d file descriptors together, fs.file-max (the system-wide limit) is %d", total, host.FileMax),
			Fix:  fix,
		}}
	case float64(total) > 0.8*float64(host.FileMax):
		return []Finding{{
			What: fmt.Sprintf("server and client need %d file descriptors together, %d%% of fs.file-max (the system-wide limit) %d; other processes hold descriptors too", total, percent(total, host.FileMax), host.FileMax),
			Fix:  fix,
		}}
	}
	return nil
}

func checkPorts(in Needs, host HostFacts) []Finding {
	lo, hi := host.PortRangeLow, host.PortRangeHigh
	if lo <= 0 || hi < lo || len(in.ClientProcesses) == 0 {
		return nil
	}
	size := int64(hi - lo + 1)
	targets := int64(max(1, in.Targets))
	load := map[string]int64{} // source address ("" = the kernel's choice) → connections
	var total int64
	for _, p := range in.ClientProcesses {
		srcs := p.SourceAddrs
		if len(srcs) == 0 {
			srcs = []string{""}
		}
		for i, s := range srcs {
			share := int64(p.Conns / len(srcs))
			if i < p.Conns%len(srcs) {
				share++
			}
			load[s] += share
		}
		total += int64(p.Conns)
	}
	worst := ""
	for _, s := range slices.Sorted(maps.Keys(load)) {
		if load[s] > load[worst] {
			worst = s
		}
	}
	perPair := ceilDiv(load[worst], targets)
	if perPair <= size {
		return nil
	}
	from := "the default source address"
	if worst != "" {
		from = "source address " + worst
	}
	have := int64(len(load)) * targets
	var fix string
	if size < wideSize {
		fix = fmt.Sprintf("set net.ipv4.ip_local_port_range: \"%d %d\" in host.sysctl with --tune, add source_addrs, or more server ports (defaults.ports): %d connections need %d (source address, target) pairs with the current range, %d with \"%d %d\"; the plan has %d",
			wideLow, wideHigh, total, ceilDiv(total, size), ceilDiv(total, wideSize), wideLow, wideHigh, have)
	} else {
		fix = fmt.Sprintf("add source_addrs or more server ports (defaults.ports): %d connections need %d (source address, target) pairs; the plan has %d",
			total, ceilDiv(total, size), have)
	}
	return []Finding{{Fatal: true,
		What: fmt.Sprintf("%d connections from %s to %d %s need %d local ports per (source, target) pair, net.ipv4.ip_local_port_range \"%d %d\" has %d",
			load[worst], from, targets, plural(targets, "target"), perPair, lo, hi, size),
		Fix: fix,
	}}
}

// checkReserved warns when the client's ephemeral range covers server ports
// that nothing reserves: the kernel may then give one of them to a client
// socket (or keep it in TIME_WAIT), and the next server cannot bind it.
func checkReserved(in Needs, host HostFacts) []Finding {
	lo, hi := host.PortRangeLow, host.PortRangeHigh
	if lo <= 0 || hi < lo || !host.ReservedKnown {
		return nil
	}
	open := in.ServerPorts.Within(lo, hi).Minus(host.ReservedPorts)
	if len(open) == 0 {
		return nil
	}
	n, them := int64(open.Len()), "them"
	if n == 1 {
		them = "it"
	}
	return []Finding{{
		What: fmt.Sprintf("%s \"%d %d\" (the client's ephemeral ports) covers server %s %s, and %s does not reserve %s: a client socket holding one, even in TIME_WAIT, keeps the next server from binding it",
			PortRangeKey, lo, hi, plural(n, "port"), open, ReservedPortsKey, them),
		Fix: fmt.Sprintf("run with --tune (wsplan reserves %s for the run and restores the list afterwards), or reserve %s yourself: sysctl -w %s=%s",
			them, them, ReservedPortsKey, host.ReservedPorts.Union(open)),
	}}
}

func checkMemory(in Needs, host HostFacts) []Finding {
	per := in.MemPerConnServer + in.MemPerConnClient
	avail := host.MemAvailable
	if avail <= 0 || per <= 0 || in.Conns <= 0 {
		return nil
	}
	need := int64(in.Conns) * per
	what := fmt.Sprintf("%d connections need about %s of memory (%s server + %s client per connection, estimated)",
		in.Conns, fmtBytes(need), fmtBytes(in.MemPerConnServer), fmtBytes(in.MemPerConnClient))
	switch {
	case need > avail:
		return []Finding{{Fatal: true,
			What: fmt.Sprintf("%s, MemAvailable is %s", what, fmtBytes(avail)),
			Fix:  orJoin(lowerConns(in, avail/per), "free memory"),
		}}
	case float64(need) > 0.8*float64(avail):
		return []Finding{{
			What: fmt.Sprintf("%s, %d%% of MemAvailable %s", what, percent(need, avail), fmtBytes(avail)),
			Fix:  fmt.Sprintf("to stay under 80%%, %s; near MemAvailable the kernel drops page cache, swaps or OOM-kills", orJoin(lowerConns(in, int64(0.8*float64(avail))/per), "free memory")),
		}}
	}
	return nil
}

func checkCPUs(in Needs, host HostFacts) []Finding {
	if len(host.OnlineCPUs) == 0 {
		return nil
	}
	online := map[int]bool{}
	for _, c := range host.OnlineCPUs {
		online[c] = true
	}
	onlineList := FormatCPUList(host.OnlineCPUs)
	var out []Finding
	for _, side := range []struct {
		name string
		cpus []int
	}{{"server", in.ServerCPUs}, {"client", in.ClientCPUs}} {
		var missing []int
		for _, c := range side.cpus {
			if !online[c] {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			out = append(out, Finding{Fatal: true,
				What: fmt.Sprintf("host.%s_cpus names %s %s, not online here (online: %s)", side.name, plural(int64(len(missing)), "CPU"), FormatCPUList(missing), onlineList),
				Fix:  fmt.Sprintf("set host.%s_cpus to CPUs among %s, or leave it out for the default split", side.name, onlineList),
			})
		}
	}
	server := map[int]bool{}
	for _, c := range in.ServerCPUs {
		server[c] = true
	}
	var shared []int
	for _, c := range in.ClientCPUs {
		if server[c] && online[c] {
			shared = append(shared, c)
		}
	}
	if n := len(host.OnlineCPUs); len(shared) > 0 && n > 1 {
		cpus := slices.Sorted(slices.Values(host.OnlineCPUs))
		out = append(out, Finding{
			What: fmt.Sprintf("server and client share %s %s, so they compete for it and the client can slow the server it measures", plural(int64(len(shared)), "CPU"), FormatCPUList(shared)),
			Fix:  fmt.Sprintf("give them disjoint CPUs, e.g. host.server_cpus: \"%s\" and host.client_cpus: \"%s\"", FormatCPUList(cpus[:n/2]), FormatCPUList(cpus[n/2:])),
		})
	}
	return out
}

func checkSomaxconn(in Needs, host HostFacts) []Finding {
	if host.Somaxconn <= 0 || in.ConnectConcurrency <= 0 {
		return nil
	}
	targets := int64(max(1, in.Targets))
	per := ceilDiv(int64(in.ConnectConcurrency), targets)
	if per <= int64(host.Somaxconn) {
		return nil
	}
	return []Finding{{
		What: fmt.Sprintf("connect concurrency %d over %d listening %s puts up to %d handshakes in one accept queue, net.core.somaxconn caps it at %d",
			in.ConnectConcurrency, targets, plural(targets, "socket"), per, host.Somaxconn),
		Fix: fmt.Sprintf("set net.core.somaxconn: \"%d\" in host.sysctl with --tune, or lower the connect phase's concurrency to %d",
			nextPow2(per), int64(host.Somaxconn)*targets),
	}}
}

// lowerConns is the "lower conns" half of a fix, for a largest workable
// connection count n; "" when no count would do.
func lowerConns(in Needs, n int64) string {
	if n < 1 {
		return ""
	}
	if in.ConnsVar != "" {
		return fmt.Sprintf("lower %s (--set %s=%d)", in.ConnsVar, in.ConnsVar, n)
	}
	return fmt.Sprintf("lower the connect phase's connections to %d", n)
}

func orJoin(a, b string) string {
	if a == "" {
		return b
	}
	return a + " or " + b
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func roundUp(n, unit int64) int64 { return ceilDiv(n, unit) * unit }

func nextPow2(n int64) int64 {
	p := int64(1)
	for p < n {
		p <<= 1
	}
	return p
}

// percent is 100·a/b rounded down.
func percent(a, b int64) int64 { return int64(100 * float64(a) / float64(b)) }

// fmtBytes writes a byte count with a binary unit and one decimal: "11.4 GiB".
func fmtBytes(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n) / 1024
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " " + units[u]
}
