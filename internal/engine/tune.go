package engine

import (
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

// Tuning is the plan's host.sysctl applied for one run (run --tune).
type Tuning struct {
	fs      sysctl.FS
	File    string            // where the previous values were saved
	Want    map[string]string // the plan's values
	Applied sysctl.Saved      // the keys Tune wrote, with their previous values
}

// Tune applies the plan's sysctls through fs, first saving the values it
// will change to file (run --tune uses <out>/SavedSysctlFile), so that
// `wsplan tune --restore FILE` can undo a crashed run. With no host.sysctl
// it changes and saves nothing and returns a Tuning that restores nothing.
// Its errors match ErrPreflight: nothing was started. Call Restore on every
// exit path.
func Tune(fs sysctl.FS, p *plan.Plan, file string) (*Tuning, error) {
	t := &Tuning{fs: fs, Want: p.Host.Sysctl, Applied: sysctl.Saved{Sysctl: map[string]string{}}}
	if len(p.Host.Sysctl) == 0 {
		return t, nil
	}
	saved := sysctl.Previous(sysctl.Check(fs, p.Host.Sysctl))
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
	t.Applied = applied
	return t, nil
}

// Keys returns the keys Tune changed, sorted.
func (t *Tuning) Keys() []string { return slices.Sorted(maps.Keys(t.Applied.Sysctl)) }

// Restore puts back every value Tune changed.
func (t *Tuning) Restore() error {
	return sysctl.Restore(t.fs, t.Applied)
}
