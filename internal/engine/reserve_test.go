package engine

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/sysctl"
)

// serversPlan is a plan of two built-in servers on 2 ports each from
// base_port 9000, a url: target between them (not wsplan's: no ports here,
// but it keeps its index) and a command: server listening on 8080.
func serversPlan() *plan.Plan {
	p := planWith([]int{10}, 0, nil)
	p.File = "p.yaml"
	p.Defaults.BasePort, p.Defaults.Host = 9000, "127.0.0.1"
	p.Servers = []plan.Server{
		{Name: "gws"},
		{Name: "remote", URLs: []string{"ws://127.0.0.1:7000/ws"}},
		{Name: "gorilla"},
		{Name: "mine", Command: plan.Argv{"./server"}, Addrs: []string{"127.0.0.1:8080"}},
	}
	return p
}

func TestServerPorts(t *testing.T) {
	p := serversPlan()
	if got := ServerPorts(p).String(); got != "8080,9000-9001,9004-9005" {
		t.Errorf("ServerPorts = %q, want 8080,9000-9001,9004-9005", got)
	}
	// Matrix combinations may place servers differently: their union.
	q := serversPlan()
	q.Defaults.Ports = 3
	if got := ServerPorts(p, q).String(); got != "8080,9000-9002,9004-9008" {
		t.Errorf("ServerPorts over two combinations = %q", got)
	}
	url := serversPlan()
	url.Servers = url.Servers[1:2]
	if got := ServerPorts(url); len(got) != 0 {
		t.Errorf("a url: target only: %v, want none", got)
	}
}

// TestTuneReservesServerPorts: with --tune, the server ports inside the
// client's port range (the plan's, else the host's) join
// net.ipv4.ip_local_reserved_ports, merged with the host's reservation and
// the plan's own; the previous list is saved and put back by Restore. All
// on a fake /proc/sys.
func TestTuneReservesServerPorts(t *testing.T) {
	const (
		rangeKey = sysctl.PortRangeKey
		resKey   = sysctl.ReservedPortsKey
	)
	for _, tc := range []struct {
		name         string
		hostRange    string
		hostReserved string            // "-": the key does not exist here
		plan         map[string]string // host.sysctl
		during       string            // the reserved list during the run
		why          bool              // the change says wsplan added ports
		changed      bool              // the reserved key is among the changes
		warning      string
	}{
		{name: "plan widens the range", hostRange: "32768\t60999", plan: map[string]string{rangeKey: "1024 65535"},
			during: "8080,9000-9001,9004-9005", why: true, changed: true},
		{name: "merged with the host's reservation", hostRange: "32768\t60999", hostReserved: "8080,9001,20000-20010",
			plan:   map[string]string{rangeKey: "1024 65535"},
			during: "8080,9000-9001,9004-9005,20000-20010", why: true, changed: true},
		{name: "the host's wide range, plan sets none", hostRange: "1024\t65535",
			during: "8080,9000-9001,9004-9005", why: true, changed: true},
		{name: "only the ports in the range", hostRange: "9001\t60999",
			during: "9001,9004-9005", why: true, changed: true},
		{name: "range clear of the servers", hostRange: "32768\t60999", plan: map[string]string{"net.core.somaxconn": "4096"},
			during: ""},
		{name: "the plan reserves them already: one change, no reason", hostRange: "32768\t60999",
			plan:   map[string]string{rangeKey: "1024 65535", resKey: "8000-9999"},
			during: "8000-9999", changed: true},
		{name: "the plan's reservation is merged with the host's", hostRange: "32768\t60999", hostReserved: "20000",
			plan:   map[string]string{resKey: "8000-9999"},
			during: "8000-9999,20000", changed: true},
		{name: "the host reserves them already", hostRange: "1024\t65535", hostReserved: "8000-9999",
			during: "8000-9999"},
		{name: "no such key here: a warning, the rest is applied", hostRange: "32768\t60999", hostReserved: "-",
			plan:    map[string]string{rangeKey: "1024 65535"},
			warning: "the client's port range covers server ports 8080,9000-9001,9004-9005, and they cannot be reserved: sysctl net.ipv4.ip_local_reserved_ports: no such sysctl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := map[string]string{rangeKey: tc.hostRange, "net.core.somaxconn": "128"}
			if tc.hostReserved != "-" {
				keys[resKey] = tc.hostReserved
			}
			fs := fakeProcSys(t, keys)
			p := serversPlan()
			p.Host.Sysctl = tc.plan
			file := filepath.Join(t.TempDir(), SavedSysctlFile)
			tu, err := Tune(fs, noSys, []*plan.Plan{p}, file)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := fs.Get(resKey); got != tc.during {
				t.Errorf("reserved during the run = %q, want %q", got, tc.during)
			}
			var res []Change
			for _, c := range tu.Changes() {
				if c.Name == resKey {
					res = append(res, c)
				}
			}
			if tc.changed != (len(res) == 1) || len(res) > 1 {
				t.Fatalf("reserved-port changes %+v, want changed=%v (once)", res, tc.changed)
			}
			if tc.changed {
				if res[0].Want != tc.during || res[0].Was != tc.hostReserved {
					t.Errorf("change %+v, want %q (was %q)", res[0], tc.during, tc.hostReserved)
				}
				if got := strings.Contains(res[0].Why, ReserveWhy); got != tc.why {
					t.Errorf("change says %q; want the reason %v", res[0].Why, tc.why)
				}
				saved, err := sysctl.ReadSaved(file)
				if prev, ok := saved.Sysctl[resKey]; err != nil || !ok || prev != tc.hostReserved {
					t.Errorf("saved file: %+v, %v; want %s = %q", saved.Sysctl, err, resKey, tc.hostReserved)
				}
			}
			if got := strings.Join(tu.Warnings, "\n"); !strings.HasPrefix(got, tc.warning) || (got == "") != (tc.warning == "") {
				t.Errorf("warnings %q, want %q", got, tc.warning)
			}
			if err := tu.Restore(); err != nil {
				t.Fatal(err)
			}
			if tc.hostReserved != "-" {
				if got, _ := fs.Get(resKey); got != tc.hostReserved {
					t.Errorf("reserved after Restore = %q, want %q", got, tc.hostReserved)
				}
			}
			if got, _ := fs.Get(rangeKey); got != tc.hostRange {
				t.Errorf("port range after Restore = %q, want %q", got, tc.hostRange)
			}
		})
	}
}

// TestPreflightReservedPorts: without --tune, a host range that covers
// server ports nothing reserves is a warning (not fatal) with the fix; with
// --tune the run reserves them, so nothing is said.
func TestPreflightReservedPorts(t *testing.T) {
	for _, tc := range []struct {
		name, hostRange, hostReserved string
		tune                          bool
		want                          string // the finding; "" = none
	}{
		{name: "covered, nothing reserved", hostRange: "1024\t65535",
			want: `net.ipv4.ip_local_port_range "1024 65535" (the client's ephemeral ports) covers server ports 8080,9000-9001,9004-9005, and net.ipv4.ip_local_reserved_ports does not reserve them` +
				`: a client socket holding one, even in TIME_WAIT, keeps the next server from binding it: run with --tune (wsplan reserves them for the run and restores the list afterwards), or reserve them yourself: sysctl -w net.ipv4.ip_local_reserved_ports=8080,9000-9001,9004-9005,20000`,
			hostReserved: "20000"},
		{name: "covered and reserved", hostRange: "1024\t65535", hostReserved: "8080,9000-9999"},
		{name: "not covered", hostRange: "32768\t60999"},
		{name: "covered, --tune reserves them", hostRange: "1024\t65535", tune: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := fakeProcSys(t, map[string]string{sysctl.PortRangeKey: tc.hostRange, sysctl.ReservedPortsKey: tc.hostReserved})
			c, err := Preflight(fs, noSys, serversPlan(), tc.tune)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range c.Findings {
				if strings.Contains(f.What, sysctl.ReservedPortsKey) {
					if f.Fatal {
						t.Errorf("fatal: %s", f)
					}
					got = append(got, f.String())
				}
			}
			if want := []string{tc.want}; tc.want == "" && len(got) != 0 || tc.want != "" && !reflect.DeepEqual(got, want) {
				t.Errorf("findings:\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
