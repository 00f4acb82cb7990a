package sysctl

import (
	"fmt"
	"strings"
	"testing"
)

// thisHost is the machine wsplan is developed on: a hard fd limit of 20000
// that cannot be raised, the default port range, 2 CPUs.
var thisHost = HostFacts{
	NoFileHard:    20000,
	PortRangeLow:  32768,
	PortRangeHigh: 60999,
	MemAvailable:  24406656 * 1024, // 23.3 GiB
	OnlineCPUs:    []int{0, 1},
	FileMax:       2466112,
	NrOpen:        1048576,
	Somaxconn:     4096,
}

func with(h HostFacts, f func(*HostFacts)) HostFacts { f(&h); return h }

// shards splits conns over n client processes, each binding its own
// loopback address 127.0.0.2, 127.0.0.3, … as client shards do.
func shards(conns, n int) []ClientNeed {
	out := make([]ClientNeed, n)
	for i := range out {
		c := conns / n
		if i < conns%n {
			c++
		}
		out[i] = ClientNeed{FDs: ClientFDs(c), Conns: c, SourceAddrs: []string{fmt.Sprintf("127.0.0.%d", i+2)}}
	}
	return out
}

const (
	serverFD1M = `server process needs 1000064 file descriptors, the hard limit (RLIMIT_NOFILE) is 20000` +
		`: lower conns (--set conns=19936) or raise the hard limit (ulimit -Hn / limits.conf); a server is one process and cannot be sharded`
	fileMax1M = `server and client need 2000128 file descriptors together, 81% of fs.file-max (the system-wide limit) 2466112; other processes hold descriptors too` +
		`: set fs.file-max: "3145728" in host.sysctl with --tune`
)

func TestPreflight(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Needs
		host HostFacts
		want []string // "FATAL " or "warn " + Finding.String()
	}{
		{
			name: "10k fits this machine",
			in: Needs{Conns: 10000, ConnsVar: "conns", ServerFDs: ServerFDs(10000, 1),
				ClientProcesses: []ClientNeed{{FDs: ClientFDs(10000), Conns: 10000}}, Targets: 1, ConnectConcurrency: 2000,
				MemPerConnServer: 10 << 10, MemPerConnClient: 4 << 10, ServerCPUs: []int{0}, ClientCPUs: []int{1}},
			host: thisHost,
		},
		{
			name: "1M connections on this machine, client in process",
			in: Needs{Conns: 1_000_000, ConnsVar: "conns", ServerFDs: 1_000_064,
				ClientProcesses: []ClientNeed{{FDs: 1_000_064, Conns: 1_000_000}}, Targets: 1, ConnectConcurrency: 2000,
				MemPerConnServer: 10 << 10, MemPerConnClient: 2 << 10, ServerCPUs: []int{0}, ClientCPUs: []int{1}},
			host: thisHost,
			want: []string{
				"FATAL " + serverFD1M,
				`FATAL client process needs 1000064 file descriptors, the hard limit (RLIMIT_NOFILE) is 20000` +
					`: use client shards: client: {shards: 51} (N ≥ 51 keeps each shard at or under 19936 connections), or raise the hard limit (ulimit -Hn / limits.conf)`,
				"warn " + fileMax1M,
				`FATAL 1000000 connections from the default source address to 1 target need 1000000 local ports per (source, target) pair, net.ipv4.ip_local_port_range "32768 60999" has 28232` +
					`: set net.ipv4.ip_local_port_range: "1024 65535" in host.sysctl with --tune, add source_addrs, or more server ports (defaults.ports): 1000000 connections need 36 (source address, target) pairs with the current range, 16 with "1024 65535"; the plan has 1`,
			},
		},
		{
			name: "1M connections, 51 client shards: only the server is left",
			in: Needs{Conns: 1_000_000, ConnsVar: "conns", ServerFDs: 1_000_064,
				ClientProcesses: shards(1_000_000, 51), Targets: 1, ConnectConcurrency: 2000,
				MemPerConnServer: 10 << 10, MemPerConnClient: 2 << 10, ServerCPUs: []int{0}, ClientCPUs: []int{1}},
			host: thisHost,
			want: []string{
				"FATAL " + serverFD1M,
				`warn server and client need 2003328 file descriptors together, 81% of fs.file-max (the system-wide limit) 2466112; other processes hold descriptors too` +
					`: set fs.file-max: "3145728" in host.sysctl with --tune`,
			},
		},
		{
			name: "too few shards, sharing the default source address",
			in: Needs{Conns: 100_000, ClientProcesses: []ClientNeed{
				{FDs: ClientFDs(50_000), Conns: 50_000}, {FDs: ClientFDs(50_000), Conns: 50_000}}},
			host: HostFacts{NoFileHard: 20000, PortRangeLow: 1024, PortRangeHigh: 65535},
			want: []string{
				`FATAL the largest of 2 client shards needs 50064 file descriptors, the hard limit (RLIMIT_NOFILE) is 20000` +
					`: use client shards: client: {shards: 6} (N ≥ 6 keeps each shard at or under 19936 connections), or raise the hard limit (ulimit -Hn / limits.conf)`,
				`FATAL 100000 connections from the default source address to 1 target need 100000 local ports per (source, target) pair, net.ipv4.ip_local_port_range "1024 65535" has 64512` +
					`: add source_addrs or more server ports (defaults.ports): 100000 connections need 2 (source address, target) pairs; the plan has 1`,
			},
		},
		{
			name: "ports: 2 source addresses × 4 targets are enough",
			in: Needs{Conns: 200_000, Targets: 4,
				ClientProcesses: []ClientNeed{{Conns: 200_000, SourceAddrs: []string{"127.0.0.2", "127.0.0.3"}}}},
			host: thisHost,
		},
		{
			name: "ports: 2 source addresses × 3 targets are not",
			in: Needs{Conns: 200_000, Targets: 3,
				ClientProcesses: []ClientNeed{{Conns: 200_000, SourceAddrs: []string{"127.0.0.2", "127.0.0.3"}}}},
			host: thisHost,
			want: []string{
				`FATAL 100000 connections from source address 127.0.0.2 to 3 targets need 33334 local ports per (source, target) pair, net.ipv4.ip_local_port_range "32768 60999" has 28232` +
					`: set net.ipv4.ip_local_port_range: "1024 65535" in host.sysctl with --tune, add source_addrs, or more server ports (defaults.ports): 200000 connections need 8 (source address, target) pairs with the current range, 4 with "1024 65535"; the plan has 6`,
			},
		},
		{
			name: "server ports outside the ephemeral range",
			in:   Needs{ServerPorts: Ranges{{9000, 9002}}},
			host: with(thisHost, func(h *HostFacts) { h.ReservedKnown = true }),
		},
		{
			name: "server ports in the ephemeral range, nothing reserved",
			in:   Needs{ServerPorts: Ranges{{9000, 9002}, {9010, 9010}}},
			host: with(thisHost, func(h *HostFacts) { h.PortRangeLow, h.PortRangeHigh, h.ReservedKnown = 1024, 65535, true }),
			want: []string{
				`warn net.ipv4.ip_local_port_range "1024 65535" (the client's ephemeral ports) covers server ports 9000-9002,9010, and net.ipv4.ip_local_reserved_ports does not reserve them: a client socket holding one, even in TIME_WAIT, keeps the next server from binding it` +
					`: run with --tune (wsplan reserves them for the run and restores the list afterwards), or reserve them yourself: sysctl -w net.ipv4.ip_local_reserved_ports=9000-9002,9010`,
			},
		},
		{
			name: "one server port in the range, another reservation kept in the fix",
			in:   Needs{ServerPorts: Ranges{{9000, 9001}}},
			host: with(thisHost, func(h *HostFacts) {
				h.PortRangeLow, h.PortRangeHigh, h.ReservedKnown, h.ReservedPorts = 9001, 60999, true, Ranges{{8080, 8080}}
			}),
			want: []string{
				`warn net.ipv4.ip_local_port_range "9001 60999" (the client's ephemeral ports) covers server port 9001, and net.ipv4.ip_local_reserved_ports does not reserve it: a client socket holding one, even in TIME_WAIT, keeps the next server from binding it` +
					`: run with --tune (wsplan reserves it for the run and restores the list afterwards), or reserve it yourself: sysctl -w net.ipv4.ip_local_reserved_ports=8080,9001`,
			},
		},
		{
			name: "server ports in the range and reserved",
			in:   Needs{ServerPorts: Ranges{{9000, 9002}}},
			host: with(thisHost, func(h *HostFacts) {
				h.PortRangeLow, h.PortRangeHigh, h.ReservedKnown, h.ReservedPorts = 1024, 65535, true, Ranges{{8080, 8080}, {9000, 9999}}
			}),
		},
		{
			name: "reserved ports unknown: not checked",
			in:   Needs{ServerPorts: Ranges{{9000, 9002}}},
			host: with(thisHost, func(h *HostFacts) { h.PortRangeLow, h.PortRangeHigh = 1024, 65535 }),
		},
		{
			name: "memory over MemAvailable",
			in:   Needs{Conns: 1_000_000, ConnsVar: "conns", MemPerConnServer: 20 << 10, MemPerConnClient: 8 << 10},
			host: thisHost,
			want: []string{
				`FATAL 1000000 connections need about 26.7 GiB of memory (20 KiB server + 8 KiB client per connection, estimated), MemAvailable is 23.3 GiB` +
					`: lower conns (--set conns=871666) or free memory`,
			},
		},
		{
			name: "memory over 80% of MemAvailable",
			in:   Needs{Conns: 1_000_000, ConnsVar: "conns", MemPerConnServer: 16 << 10, MemPerConnClient: 4 << 10},
			host: thisHost,
			want: []string{
				`warn 1000000 connections need about 19.1 GiB of memory (16 KiB server + 4 KiB client per connection, estimated), 81% of MemAvailable 23.3 GiB` +
					`: to stay under 80%, lower conns (--set conns=976266) or free memory; near MemAvailable the kernel drops page cache, swaps or OOM-kills`,
			},
		},
		{
			name: "CPUs that are not online",
			in:   Needs{ServerCPUs: []int{0, 4, 5}, ClientCPUs: []int{1, 7}},
			host: thisHost,
			want: []string{
				`FATAL host.server_cpus names CPUs 4-5, not online here (online: 0-1): set host.server_cpus to CPUs among 0-1, or leave it out for the default split`,
				`FATAL host.client_cpus names CPU 7, not online here (online: 0-1): set host.client_cpus to CPUs among 0-1, or leave it out for the default split`,
			},
		},
		{
			name: "server and client share a CPU",
			in:   Needs{ServerCPUs: []int{0, 1}, ClientCPUs: []int{1}},
			host: with(thisHost, func(h *HostFacts) { h.OnlineCPUs = []int{0, 1, 2, 3} }),
			want: []string{
				`warn server and client share CPU 1, so they compete for it and the client can slow the server it measures` +
					`: give them disjoint CPUs, e.g. host.server_cpus: "0-1" and host.client_cpus: "2-3"`,
			},
		},
		{
			name: "sharing the only CPU is not worth a warning",
			in:   Needs{ServerCPUs: []int{0}, ClientCPUs: []int{0}},
			host: with(thisHost, func(h *HostFacts) { h.OnlineCPUs = []int{0} }),
		},
		{
			name: "somaxconn below connect concurrency",
			in:   Needs{ConnectConcurrency: 10000, Targets: 1},
			host: thisHost,
			want: []string{
				`warn connect concurrency 10000 over 1 listening socket puts up to 10000 handshakes in one accept queue, net.core.somaxconn caps it at 4096` +
					`: set net.core.somaxconn: "16384" in host.sysctl with --tune, or lower the connect phase's concurrency to 4096`,
			},
		},
		{
			name: "somaxconn is per listening socket",
			in:   Needs{ConnectConcurrency: 10000, Targets: 3},
			host: thisHost,
		},
		{
			name: "2M connections: fs.nr_open and fs.file-max too",
			in:   Needs{Conns: 2_000_000, ServerFDs: 2_000_064},
			host: HostFacts{NoFileHard: 1048576, NrOpen: 1048576, FileMax: 1_000_000},
			want: []string{
				`FATAL server process needs 2000064 file descriptors, the hard limit (RLIMIT_NOFILE) is 1048576` +
					`: lower the connect phase's connections to 1048512 or raise the hard limit (ulimit -Hn / limits.conf); a server is one process and cannot be sharded`,
				`warn server process needs 2000064 file descriptors, fs.nr_open (the most RLIMIT_NOFILE can be raised to) is 1048576` +
					`: set fs.nr_open: "2097152" in host.sysctl with --tune before raising the hard limit`,
				`FATAL server and client need 2000064 file descriptors together, fs.file-max (the system-wide limit) is 1000000` +
					`: set fs.file-max: "3145728" in host.sysctl with --tune`,
			},
		},
		{
			name: "unknown host facts are not checked",
			in: Needs{Conns: 1_000_000, ServerFDs: 1_000_064, ClientProcesses: []ClientNeed{{FDs: 1_000_064, Conns: 1_000_000}},
				ConnectConcurrency: 100000, MemPerConnServer: 1 << 20, ServerCPUs: []int{99}},
			host: HostFacts{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range Preflight(tc.in, tc.host) {
				tag := "warn "
				if f.Fatal {
					tag = "FATAL "
				}
				got = append(got, tag+f.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestFatalError(t *testing.T) {
	if err := FatalError([]Finding{{What: "w", Fix: "f"}}); err != nil {
		t.Errorf("warnings only: %v", err)
	}
	err := FatalError([]Finding{{Fatal: true, What: "a", Fix: "b"}, {What: "w", Fix: "f"}, {Fatal: true, What: "c", Fix: "d"}})
	if err == nil || err.Error() != "a: b\nc: d" {
		t.Errorf("FatalError = %q", err)
	}
}

func TestFmtBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 20 << 10: "20 KiB",
		12288000000: "11.4 GiB", 5 << 40: "5 TiB", 3 << 50: "3072 TiB",
	} {
		if got := fmtBytes(n); got != want {
			t.Errorf("fmtBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
