package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/wsplan/wsplan/internal/engine"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/sysctl"
)

// preflight raises the fd limit, splits the CPUs, and checks what the plan
// needs against the host (as it will be after --tune when tune is set). It
// prints warnings and the sysctl differences to w and returns a usage error
// naming every fatal shortfall.
func preflight(p *plan.Plan, tune bool, w io.Writer) (engine.Layout, error) {
	if _, _, err := sysctl.RaiseNoFile(); err != nil {
		fmt.Fprintf(w, "warning: raising the open-file soft limit: %v\n", err)
	}
	if p.Host.NoFile > 0 {
		if _, hard, err := sysctl.SetNoFile(uint64(p.Host.NoFile)); err != nil {
			return engine.Layout{}, usageErr(fmt.Errorf("%s: host.nofile %d: %w (the hard limit is %d: lower host.nofile or raise `ulimit -Hn`)", p.File, p.Host.NoFile, err, hard))
		}
	}
	if errs := engine.CheckLimits(p); len(errs) > 0 {
		return engine.Layout{}, usageErr(errors.Join(errs...))
	}
	layout, err := engine.ComputeLayout(p.Host.ServerCPUs, p.Host.ClientCPUs, sysctl.OnlineCPUs())
	if err != nil {
		return layout, usageErr(fmt.Errorf("%s: preflight: %w", p.File, err))
	}
	facts, err := engine.Facts(p, tune)
	if err != nil {
		fmt.Fprintf(w, "warning: some host facts could not be read, their checks are skipped: %v\n", err)
	}
	var fatal []error
	for _, f := range sysctl.Preflight(engine.Needs(p, layout, facts.NoFileHard), facts) {
		if f.Fatal {
			fmt.Fprintf(w, "preflight: %s\n", f)
			fatal = append(fatal, errors.New(f.What))
		} else {
			fmt.Fprintf(w, "preflight warning: %s\n", f)
		}
	}
	if !tune {
		for _, r := range sysctl.Check(sysctl.FS{}, p.Host.Sysctl) {
			switch {
			case r.Err != nil:
				fmt.Fprintf(w, "host: %s: %v\n", r.Key, r.Err)
			case !r.OK:
				fmt.Fprintf(w, "host: %s is %q, the plan wants %q (apply with --tune)\n", r.Key, r.Current, r.Want)
			}
		}
	}
	if len(fatal) > 0 {
		return layout, usageErr(fmt.Errorf("%s: preflight failed (%d problems above); nothing was started", p.File, len(fatal)))
	}
	return layout, nil
}

// tuneHost applies the plan's sysctls, first saving the previous values to
// dir/sysctl-saved.json (so `wsplan tune --restore` can undo a crashed run).
// The returned func restores them; call it on every exit path.
func tuneHost(p *plan.Plan, dir string, w io.Writer) (func(), error) {
	if len(p.Host.Sysctl) == 0 {
		return func() {}, nil
	}
	fs := sysctl.FS{}
	saved := sysctl.Previous(sysctl.Check(fs, p.Host.Sysctl))
	saved.Plan = p.File
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "sysctl-saved.json")
	if err := saved.WriteFile(file); err != nil {
		return nil, fmt.Errorf("saving sysctls before --tune: %w", err)
	}
	applied, err := sysctl.Apply(fs, p.Host.Sysctl)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--tune: %w", err))
	}
	for k, old := range applied.Sysctl {
		fmt.Fprintf(w, "tune: %s = %q (was %q; saved in %s)\n", k, p.Host.Sysctl[k], old, file)
	}
	return func() {
		if err := sysctl.Restore(fs, applied); err != nil {
			fmt.Fprintf(w, "restore FAILED: %v\nrun `wsplan tune --restore %s`\n", err, file)
			return
		}
		for k, old := range applied.Sysctl {
			fmt.Fprintf(w, "restored %s = %q\n", k, old)
		}
	}, nil
}
