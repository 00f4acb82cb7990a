package main

import (
	"fmt"
	"io"
	"os"

	"github.com/wsplan/wsplan/internal/engine"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/sysctl"
)

// EnvProcSysRoot names a directory that stands in for /proc/sys. It exists
// for tests only, so that `run --tune` and `tune` can be tested against a
// fake sysctl tree without changing the host; users never need it.
const EnvProcSysRoot = "WSPLAN_PROCSYS_ROOT"

// EnvSysRoot names a directory that stands in for /sys (host.idle_poll),
// for tests only, as EnvProcSysRoot does for /proc/sys.
const EnvSysRoot = "WSPLAN_SYS_ROOT"

// sysctlFS is where `run --tune`, `tune` and preflight read and write
// sysctls: /proc/sys, unless a test set EnvProcSysRoot.
func sysctlFS() sysctl.FS { return sysctl.FS{Root: os.Getenv(EnvProcSysRoot)} }

// sysFS is where they read and write host.idle_poll: /sys, unless a test
// set EnvSysRoot.
func sysFS() sysctl.FS { return sysctl.SysFS(os.Getenv(EnvSysRoot)) }

// preflight runs engine.Preflight and prints what it found to w.
func preflight(p *plan.Plan, tune bool, w io.Writer) (engine.Layout, error) {
	c, err := engine.Preflight(sysctlFS(), sysFS(), p, tune)
	for _, s := range c.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	for _, f := range c.Findings {
		if f.Fatal {
			fmt.Fprintf(w, "preflight: %s\n", f)
		} else {
			fmt.Fprintf(w, "preflight warning: %s\n", f)
		}
	}
	for _, r := range c.Sysctl {
		if r.Err != nil {
			fmt.Fprintf(w, "host: %s: %v\n", r.Key, r.Err)
		} else {
			fmt.Fprintf(w, "host: %s is %q, the plan wants %q (apply with --tune)\n", r.Key, r.Current, r.Want)
		}
	}
	return c.Layout, err
}

// printTuned says what `run --tune` (and `tune --apply`) changed, why when
// the plan did not ask for it, and where the old values are.
func printTuned(w io.Writer, t *engine.Tuning) {
	for _, s := range t.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	for _, c := range t.Changes() {
		why := ""
		if c.Why != "" {
			why = ": " + c.Why
		}
		fmt.Fprintf(w, "tune: %s = %q (was %q; saved in %s)%s\n", c.Name, c.Want, c.Was, t.File, why)
	}
}

// restoreHost undoes `run --tune` and says what it did.
func restoreHost(w io.Writer, t *engine.Tuning) {
	if err := t.Restore(); err != nil {
		fmt.Fprintf(w, "restore FAILED: %v\nrun `wsplan tune --restore %s`\n", err, t.File)
		return
	}
	for _, c := range t.Changes() {
		fmt.Fprintf(w, "restored %s = %q\n", c.Name, c.Was)
	}
}

// preflightMatrix checks the other combinations of a matrix: the first was
// checked (and printed) by preflight; a fatal finding of another one is
// printed with its combination.
func preflightMatrix(plans []*plan.Plan, tune bool, w io.Writer) error {
	for _, p := range plans {
		c, err := engine.Preflight(sysctlFS(), sysFS(), p, tune)
		if err == nil {
			continue
		}
		combo := result.VarsString(p.Combo, nil)
		for _, f := range c.Findings {
			if f.Fatal {
				fmt.Fprintf(w, "preflight (%s): %s\n", combo, f)
			}
		}
		return err
	}
	return nil
}
