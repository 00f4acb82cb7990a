package engine

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/sysctl"
)

// fakeProcSys writes a sysctl tree under a temporary directory: tests read
// and write it instead of the host's /proc/sys.
func fakeProcSys(t *testing.T, values map[string]string) sysctl.FS {
	t.Helper()
	fs := sysctl.FS{Root: t.TempDir()}
	for k, v := range values {
		path, err := fs.Path(k)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

// noSys is a /sys with nothing in it, for plans without host.idle_poll.
var noSys = sysctl.SysFS("/nonexistent/sys")

// fakeSys is a /sys tree whose cpuidle driver is haltpoll, polling for
// poll nanoseconds.
func fakeSys(t *testing.T, poll string) sysctl.FS {
	t.Helper()
	return sysctl.SysFS(fakeProcSys(t, map[string]string{sysctl.CPUIdleDriverKey: "haltpoll", sysctl.HaltPollKey: poll}).Root)
}

func TestPreflight(t *testing.T) {
	fs := fakeProcSys(t, map[string]string{"net.core.somaxconn": "128", "net.ipv4.ip_local_port_range": "1024\t65535"})
	cases := []struct {
		name     string
		conns    int
		sysctl   map[string]string
		tune     bool
		err      string // "" = fits
		diffKeys []string
	}{
		{"fits", 100, nil, false, "", nil},
		{"sysctl differs", 100, map[string]string{"net.core.somaxconn": "4096"}, false, "", []string{"net.core.somaxconn"}},
		{"sysctl applied by --tune", 100, map[string]string{"net.core.somaxconn": "4096"}, true, "", nil},
		{"sysctl missing", 100, map[string]string{"net.core.wsplan_nope": "1"}, false, "", []string{"net.core.wsplan_nope"}},
		{"too many fds", 100_000_000, nil, false, "p.yaml: preflight failed (", nil},
	}
	for _, c := range cases {
		p := planWith([]int{c.conns}, 0, nil)
		p.File = "p.yaml"
		p.Host.Sysctl = c.sysctl
		got, err := Preflight(fs, noSys, p, c.tune)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.err)
		}
		if err != nil && !errors.Is(err, ErrPreflight) {
			t.Errorf("%s: %v is not ErrPreflight", c.name, err)
		}
		if c.err != "" && fatal(got.Findings) == 0 {
			t.Errorf("%s: no fatal finding in %v", c.name, got.Findings)
		}
		var keys []string
		for _, r := range got.Sysctl {
			keys = append(keys, r.Key)
		}
		if !reflect.DeepEqual(keys, c.diffKeys) {
			t.Errorf("%s: sysctl differences %v, want %v", c.name, keys, c.diffKeys)
		}
		if len(got.Layout.ServerCPUs) == 0 || len(got.Layout.ClientCPUs) == 0 {
			t.Errorf("%s: layout %+v", c.name, got.Layout)
		}
	}
	// A bad CPU list stops preflight with the plan's file named.
	p := planWith([]int{1}, 0, nil)
	p.File = "p.yaml"
	p.Host.ServerCPUs = "4096"
	if _, err := Preflight(fs, noSys, p, false); !errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), "p.yaml: preflight: host.server_cpus") {
		t.Errorf("bad server_cpus: %v", err)
	}
}

// TestTune applies and restores a plan's sysctls on a fake /proc/sys: the
// previous values are saved first, only changed keys are restored.
func TestTune(t *testing.T) {
	fs := fakeProcSys(t, map[string]string{"net.core.somaxconn": "128", "net.ipv4.ip_local_port_range": "1024\t65535"})
	p := planWith([]int{1}, 0, nil)
	p.File = "p.yaml"
	p.Host.Sysctl = map[string]string{"net.core.somaxconn": "4096", "net.ipv4.ip_local_port_range": "1024 65535"}
	dir := filepath.Join(t.TempDir(), "out")
	tu, err := Tune(fs, noSys, []*plan.Plan{p}, filepath.Join(dir, SavedSysctlFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := tu.Changes(); !reflect.DeepEqual(got, []Change{{"net.core.somaxconn", "4096", "128", ""}}) {
		t.Errorf("changed %v, want only somaxconn (the port range already matched)", got)
	}
	if v, _ := fs.Get("net.core.somaxconn"); v != "4096" {
		t.Errorf("somaxconn during the run = %q", v)
	}
	saved, err := sysctl.ReadSaved(filepath.Join(dir, SavedSysctlFile))
	if err != nil || saved.Sysctl["net.core.somaxconn"] != "128" || saved.Plan != "p.yaml" {
		t.Errorf("saved file: %+v, %v", saved, err)
	}
	if err := tu.Restore(); err != nil {
		t.Fatal(err)
	}
	if v, _ := fs.Get("net.core.somaxconn"); v != "128" {
		t.Errorf("somaxconn after Restore = %q", v)
	}

	// No host.sysctl: nothing written, nothing saved.
	p.Host.Sysctl = nil
	dir = filepath.Join(t.TempDir(), "none")
	if tu, err = Tune(fs, noSys, []*plan.Plan{p}, filepath.Join(dir, SavedSysctlFile)); err != nil || len(tu.Changes()) != 0 || tu.Restore() != nil {
		t.Errorf("no sysctl: %+v, %v", tu, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("no sysctl created %s: %v", dir, err)
	}

	// A key that cannot be read: nothing changes, and the error stops the
	// run before anything starts.
	p.Host.Sysctl = map[string]string{"net.core.somaxconn": "4096", "net.core.wsplan_nope": "1"}
	if _, err := Tune(fs, noSys, []*plan.Plan{p}, filepath.Join(t.TempDir(), SavedSysctlFile)); !errors.Is(err, ErrPreflight) {
		t.Errorf("unreadable key: %v", err)
	}
	if v, _ := fs.Get("net.core.somaxconn"); v != "128" {
		t.Errorf("somaxconn after a failed Tune = %q", v)
	}
}

// TestIdlePoll: host.idle_poll is checked like a sysctl (a row named by
// its path under /sys), applied and restored by Tune with the sysctls and
// saved in the same file; a host without haltpoll gets a warning, not an
// error, and nothing is written.
func TestIdlePoll(t *testing.T) {
	fs := fakeProcSys(t, map[string]string{"net.core.somaxconn": "128"})
	sys := fakeSys(t, "0")
	p := planWith([]int{1}, 0, nil)
	p.File = "p.yaml"
	d := units.Duration(200 * time.Microsecond)
	p.Host.IdlePoll = &d
	p.Host.Sysctl = map[string]string{"net.core.somaxconn": "4096"}

	c, err := Preflight(fs, sys, p, false)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range c.Sysctl {
		rows = append(rows, r.Key+"="+r.Current+"→"+r.Want)
	}
	if want := []string{"net.core.somaxconn=128→4096", "/sys/" + sysctl.HaltPollKey + "=0→200000"}; !reflect.DeepEqual(rows, want) {
		t.Errorf("preflight rows %v, want %v", rows, want)
	}
	if w := idleWarnings(c.Warnings); len(w) != 0 {
		t.Errorf("warnings on a haltpoll host: %v", w)
	}

	file := filepath.Join(t.TempDir(), SavedSysctlFile)
	tu, err := Tune(fs, sys, []*plan.Plan{p}, file)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{{"net.core.somaxconn", "4096", "128", ""}, {"/sys/" + sysctl.HaltPollKey, "200000", "0", ""}}
	if got := tu.Changes(); !reflect.DeepEqual(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	if v, _ := sys.Get(sysctl.HaltPollKey); v != "200000" {
		t.Errorf("poll window during the run = %q", v)
	}
	saved, err := sysctl.ReadSaved(file)
	if err != nil || saved.Sys[sysctl.HaltPollKey] != "0" || saved.Sysctl["net.core.somaxconn"] != "128" {
		t.Errorf("saved file: %+v, %v", saved, err)
	}
	if err := tu.Restore(); err != nil {
		t.Fatal(err)
	}
	if v, _ := sys.Get(sysctl.HaltPollKey); v != "0" {
		t.Errorf("poll window after Restore = %q", v)
	}

	// Not a haltpoll host: a warning naming the driver; Tune writes only
	// the sysctls.
	other := sysctl.SysFS(fakeProcSys(t, map[string]string{sysctl.CPUIdleDriverKey: "intel_idle"}).Root)
	c, err = Preflight(fs, other, p, false)
	if w := idleWarnings(c.Warnings); err != nil || len(w) != 1 || !strings.Contains(w[0], `host.idle_poll 200µs is not applied: the cpuidle driver is not haltpoll, so idle polling cannot be set here (this host's is "intel_idle")`) {
		t.Errorf("intel_idle host: %q, %v", idleWarnings(c.Warnings), err)
	}
	if tu, err = Tune(fs, other, []*plan.Plan{p}, filepath.Join(t.TempDir(), SavedSysctlFile)); err != nil || len(tu.Changes()) != 1 || tu.Restore() != nil {
		t.Errorf("intel_idle host: Tune %+v, %v", tu, err)
	}
}

// idleWarnings are the warnings about host.idle_poll (the fake /proc/sys
// lacks the facts the other checks read).
func idleWarnings(ws []string) []string {
	var idle []string
	for _, w := range ws {
		if strings.Contains(w, "idle_poll") {
			idle = append(idle, w)
		}
	}
	return idle
}

// TestIdleHint: a plan with a paced phase against a server on this host,
// on a haltpoll host that does not poll, is pointed at host.idle_poll;
// not when the host polls, the plan sets it, or no phase is paced.
func TestIdleHint(t *testing.T) {
	p := planWith([]int{1}, 0, nil)
	p.Servers = []plan.Server{{Name: "gws"}}
	p.Phases = append(p.Phases, plan.Phase{Kind: "rate", PhaseKeys: plan.PhaseKeys{Name: "rate#2"}})
	if got := idleHint(sysctl.ReadIdle(fakeSys(t, "0")), p); !strings.Contains(got, "idle CPUs here halt at once") || !strings.Contains(got, "phase rate#2") {
		t.Errorf("no polling: %q", got)
	}
	if got := idleHint(sysctl.ReadIdle(fakeSys(t, "200000")), p); got != "" {
		t.Errorf("polling host: %q", got)
	}
	d := units.Duration(0)
	p.Host.IdlePoll = &d
	if got := idleHint(sysctl.ReadIdle(fakeSys(t, "0")), p); got != "" {
		t.Errorf("plan sets idle_poll: %q", got)
	}
	p.Host.IdlePoll = nil
	p.Phases = p.Phases[:1] // connect only
	if got := idleHint(sysctl.ReadIdle(fakeSys(t, "0")), p); got != "" {
		t.Errorf("no paced phase: %q", got)
	}
}
