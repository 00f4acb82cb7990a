package engine

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/shard"
	"github.com/wsplan/wsplan/sysctl"
)

// startFakeShard serves the shard protocol on loopback, reporting host.
func startFakeShard(t *testing.T, certs string, host sysctl.HostFacts) string {
	t.Helper()
	cfg, err := shard.ShardTLS(certs)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Ends with ctx (nil) at cleanup.
		_ = shard.Listen(ctx, shard.ListenSpec{Listener: ln, TLS: cfg, IdleExit: -1, Host: func() sysctl.HostFacts { return host }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// TestRemotePreflight: each remote shard's host is checked for its share
// of the connections; a shortfall or an unreachable shard fails preflight
// naming the shard.
func TestRemotePreflight(t *testing.T) {
	certs := filepath.Join(t.TempDir(), "certs")
	if _, err := shard.NewCerts(certs); err != nil {
		t.Fatal(err)
	}
	roomy := sysctl.HostFacts{NoFileHard: 1 << 20, PortRangeLow: 1024, PortRangeHigh: 65535, MemAvailable: 64 << 30, OnlineCPUs: []int{0, 1, 2, 3}}
	tight := roomy
	tight.NoFileHard = 1000
	ok1, ok2 := startFakeShard(t, certs, roomy), startFakeShard(t, certs, roomy)
	small := startFakeShard(t, certs, tight)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	fs := fakeProcSys(t, map[string]string{"net.core.somaxconn": "4096", "net.ipv4.ip_local_port_range": "1024\t65535"})
	for _, c := range []struct {
		name    string
		remote  []string
		weights []int
		err     string // "" = fits
	}{
		{"fits", []string{ok1, ok2}, nil, ""},
		{"fd limit of one shard", []string{ok1, small}, []int{1, 1}, "client.remote[1] (" + small + "): client process needs " + strconv.Itoa(sysctl.ClientFDs(1000)) + " file descriptors, the hard limit (RLIMIT_NOFILE) is 1000: raise that host's hard limit"},
		{"unreachable", []string{ok1, deadAddr}, nil, "client.remote[1]: shard " + deadAddr + ": dial tcp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := planWith([]int{2000}, 0, nil)
			p.File = "p.yaml"
			p.Client.Remote, p.Client.Weights, p.Client.Certs = c.remote, c.weights, certs
			got, err := Preflight(fs, noSys, p, false)
			if c.err == "" {
				if err != nil {
					t.Fatalf("preflight: %v (%v)", err, got.Findings)
				}
				return
			}
			if !errors.Is(err, ErrPreflight) {
				t.Fatalf("preflight: %v, want ErrPreflight", err)
			}
			text := err.Error()
			for _, f := range got.Findings {
				text += "\n" + f.String()
			}
			if !strings.Contains(text, c.err) {
				t.Errorf("preflight said:\n%s\nwant %q", text, c.err)
			}
		})
	}
}

// TestRemoteShares: the plan's weights, else DefaultWeight of each host.
func TestRemoteShares(t *testing.T) {
	p := planWith([]int{10}, 0, nil)
	hosts := []sysctl.HostFacts{{OnlineCPUs: []int{0, 1}}, {OnlineCPUs: []int{0}}, {OnlineCPUs: []int{0, 1, 2, 3}, NoFileHard: 1000 + sysctl.FDSlack}}
	if got := RemoteShares(p, hosts, 4000); got[0] != 2000 || got[1] != 1000 || got[2] != 1000 {
		t.Errorf("default weights: %v, want 2000, 1000, 1000 (2,000 : 1,000 : min(4,000, 1,000 fds))", got)
	}
	p.Client.Weights = []int{1, 1, 2}
	if got := RemoteShares(p, hosts, 10); got[0] != 3 || got[1] != 2 || got[2] != 5 {
		t.Errorf("weights 1:1:2 of 10: %v, want 3, 2, 5", got)
	}
}

// TestNeedsRemote: with remote or Kubernetes shards, this host's
// preflight checks no client process, and no server either when every
// server is a url target.
func TestNeedsRemote(t *testing.T) {
	p := planWith([]int{1_000_000}, 0, nil)
	p.Client.Kubernetes = &plan.Kube{Shards: 4}
	p.Servers = []plan.Server{{Name: "gws"}}
	n := Needs(p, Layout{}, 20000)
	if len(n.ClientProcesses) != 0 || n.MemPerConnClient != 0 || n.ServerFDs == 0 {
		t.Errorf("kubernetes client, built-in server: %+v; want no client process, the server's fds", n)
	}
	p.Servers = []plan.Server{{Name: "prod", URLs: []string{"ws://10.0.0.1:8080/ws"}}}
	if n := Needs(p, Layout{}, 20000); n.ServerFDs != 0 || n.MemPerConnServer != 0 || len(n.ClientProcesses) != 0 {
		t.Errorf("kubernetes client, url server: %+v; want nothing checked here", n)
	}
	if f := sysctl.Preflight(Needs(p, Layout{}, 20000), sysctl.HostFacts{NoFileHard: 20000, MemAvailable: 1 << 30}); len(f) != 0 {
		t.Errorf("findings %v, want none", f)
	}
}
