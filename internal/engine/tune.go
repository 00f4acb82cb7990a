package engine

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/sysctl"
)

// SavedSysctlFile is the file in a run's output directory that holds the
// sysctl values Tune changed, for `wsplan tune --restore` after a crash.
const SavedSysctlFile = "sysctl-saved.json"

// Tuning is the plan's host.sysctl (and host.idle_poll) applied for one run
// (run --tune), with the servers' ports reserved (see TuneSysctls).
type Tuning struct {
	fs, sys sysctl.FS
	File    string            // where the previous values were saved
	Want    map[string]string // the sysctls written: the plan's, and the reserved ports (HostTune.Sysctl)
	WantSys map[string]string // the plan's keys under /sys (HostSys)
	Applied sysctl.Saved      // the keys Tune wrote, with their previous values
	// Reserved are the server ports Tune added to
	// net.ipv4.ip_local_reserved_ports (HostTune.Reserved).
	Reserved sysctl.Ranges
	// Warnings are what Tune could not do and the run goes on without, one
	// line each (HostTune.Warning).
	Warnings []string
}

// Change is one value Tune wrote: Name is a sysctl's key or a path under
// /sys; Why says why wsplan wrote what the plan does not ask for ("" for
// the plan's own values).
type Change struct{ Name, Want, Was, Why string }

// HostSys returns the keys under /sys that the plan's host.idle_poll sets
// on a host whose idle CPUs wait as idle says, or a warning when this host
// cannot have them; nil and "" without host.idle_poll.
func HostSys(idle sysctl.Idle, p *plan.Plan) (want map[string]string, warning string) {
	if p.Host.IdlePoll == nil {
		return nil, ""
	}
	want, err := idle.Keys(p.Host.IdlePoll.D())
	if err != nil {
		return nil, fmt.Sprintf("host.idle_poll %s is not applied: %v; on bare metal an idle CPU is woken without an interrupt, in a virtual machine without haltpoll each wake-up of an idle CPU costs the waker an interrupt and a VM exit", p.Host.IdlePoll, err)
	}
	return want, ""
}

// Tune applies the sysctls TuneSysctls works out for plans (the run's
// matrix combinations; the first one's host settings apply) through fs, and
// the first plan's host.idle_poll through sys, first saving the values it
// will change to file (run --tune uses <out>/SavedSysctlFile), so that
// `wsplan tune --restore FILE` can undo a crashed run. With nothing to
// apply it changes and saves nothing and returns a Tuning that restores
// nothing. Its errors match ErrPreflight: nothing was started. Call Restore
// on every exit path.
func Tune(fs, sys sysctl.FS, plans []*plan.Plan, file string) (*Tuning, error) {
	p := plans[0]
	host := TuneSysctls(fs, plans)
	wantSys, _ := HostSys(sysctl.ReadIdle(sys), p) // Preflight has shown the warning
	t := &Tuning{fs: fs, sys: sys, Want: host.Sysctl, WantSys: wantSys, Applied: sysctl.Saved{Sysctl: map[string]string{}}}
	if host.Warning != "" {
		t.Warnings = append(t.Warnings, host.Warning)
	}
	if len(host.Sysctl) == 0 && len(wantSys) == 0 {
		return t, nil
	}
	saved := sysctl.Previous(sysctl.Check(fs, host.Sysctl))
	saved.Sys = sysctl.Previous(sysctl.Check(sys, wantSys)).Sysctl
	saved.Plan = p.File
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, preflightError{err}
	}
	t.File = file
	if err := saved.WriteFile(file); err != nil {
		return nil, preflightError{fmt.Errorf("saving sysctls before tuning: %w", err)}
	}
	applied, err := sysctl.Apply(fs, host.Sysctl)
	if err != nil {
		return nil, preflightError{fmt.Errorf("tuning: %w", err)}
	}
	appliedSys, err := sysctl.Apply(sys, wantSys)
	if err != nil {
		if rerr := sysctl.Restore(fs, applied); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, preflightError{fmt.Errorf("tuning: %w", err)}
	}
	t.Applied = applied
	t.Applied.Sys = appliedSys.Sysctl
	if _, ok := applied.Sysctl[sysctl.ReservedPortsKey]; ok {
		t.Reserved = host.Reserved
	}
	return t, nil
}

// Restoring is the Tuning that saved (from Saved.WriteFile) describes, for
// `wsplan tune --restore` after a crash: Restore puts the values back,
// Changes lists them (Want is unknown there: "").
func Restoring(fs, sys sysctl.FS, saved sysctl.Saved) *Tuning {
	return &Tuning{fs: fs, sys: sys, Applied: saved}
}

// Changes returns what Tune changed: the sysctls sorted by key, then the
// keys under /sys.
func (t *Tuning) Changes() []Change {
	var cs []Change
	for _, k := range slices.Sorted(maps.Keys(t.Applied.Sysctl)) {
		c := Change{Name: k, Want: t.Want[k], Was: t.Applied.Sysctl[k]}
		if k == sysctl.ReservedPortsKey && len(t.Reserved) > 0 {
			c.Why = fmt.Sprintf("adds the servers' ports %s: %s", t.Reserved, ReserveWhy)
		}
		cs = append(cs, c)
	}
	for _, k := range slices.Sorted(maps.Keys(t.Applied.Sys)) {
		cs = append(cs, Change{Name: sysctl.SysLabel + k, Want: t.WantSys[k], Was: t.Applied.Sys[k]})
	}
	return cs
}

// Restore puts back every value Tune changed, the keys under /sys first
// (the reverse of Tune's order).
func (t *Tuning) Restore() error {
	return errors.Join(sysctl.RestoreSys(t.sys, t.Applied), sysctl.Restore(t.fs, t.Applied))
}
