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
// (run --tune).
type Tuning struct {
	fs, sys sysctl.FS
	File    string            // where the previous values were saved
	Want    map[string]string // the plan's sysctls
	WantSys map[string]string // the plan's keys under /sys (HostSys)
	Applied sysctl.Saved      // the keys Tune wrote, with their previous values
}

// Change is one value Tune wrote: Name is a sysctl's key or a path under
// /sys.
type Change struct{ Name, Want, Was string }

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

// Tune applies the plan's sysctls through fs, and its host.idle_poll
// through sys, first saving the values it will change to file (run --tune
// uses <out>/SavedSysctlFile), so that `wsplan tune --restore FILE` can
// undo a crashed run. With nothing to apply it changes and saves nothing
// and returns a Tuning that restores nothing. Its errors match
// ErrPreflight: nothing was started. Call Restore on every exit path.
func Tune(fs, sys sysctl.FS, p *plan.Plan, file string) (*Tuning, error) {
	wantSys, _ := HostSys(sysctl.ReadIdle(sys), p) // Preflight has shown the warning
	t := &Tuning{fs: fs, sys: sys, Want: p.Host.Sysctl, WantSys: wantSys, Applied: sysctl.Saved{Sysctl: map[string]string{}}}
	if len(p.Host.Sysctl) == 0 && len(wantSys) == 0 {
		return t, nil
	}
	saved := sysctl.Previous(sysctl.Check(fs, p.Host.Sysctl))
	saved.Sys = sysctl.Previous(sysctl.Check(sys, wantSys)).Sysctl
	saved.Plan = p.File
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, preflightError{err}
	}
	t.File = file
	if err := saved.WriteFile(file); err != nil {
		return nil, preflightError{fmt.Errorf("saving sysctls before tuning: %w", err)}
	}
	applied, err := sysctl.Apply(fs, p.Host.Sysctl)
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
		cs = append(cs, Change{k, t.Want[k], t.Applied.Sysctl[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(t.Applied.Sys)) {
		cs = append(cs, Change{sysctl.SysLabel + k, t.WantSys[k], t.Applied.Sys[k]})
	}
	return cs
}

// Restore puts back every value Tune changed, the keys under /sys first
// (the reverse of Tune's order).
func (t *Tuning) Restore() error {
	return errors.Join(sysctl.RestoreSys(t.sys, t.Applied), sysctl.Restore(t.fs, t.Applied))
}
