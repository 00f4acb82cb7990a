package engine

import (
	"errors"
	"fmt"

	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/sysctl"
)

// ErrPreflight matches (errors.Is) every error Preflight returns: the plan
// does not fit this host as it is, and nothing was started (exit code 2).
var ErrPreflight = errors.New("preflight failed")

// preflightError is an error of Preflight; its message is the cause's.
type preflightError struct{ error }

func (e preflightError) Unwrap() error        { return e.error }
func (e preflightError) Is(target error) bool { return target == ErrPreflight }

// HostCheck is what Preflight found out before a run. The caller shows it;
// Preflight itself never prints.
type HostCheck struct {
	// Layout is the CPU split between servers and the client.
	Layout Layout
	// Warnings are problems that do not stop the run, one line each.
	Warnings []string
	// Findings are the shortfalls sysctl.Preflight found, fatal or not,
	// in its order; a fatal one makes Preflight fail.
	Findings []sysctl.Finding
	// Sysctl are the plan's host.sysctl keys, and its keys under /sys
	// (host.idle_poll, named "/sys/…"), that differ from the host or cannot
	// be read; empty when tune is set (the run applies them).
	Sysctl []sysctl.Row
}

// Preflight prepares this process for the plan and checks the host: it
// raises the open-file soft limit (and sets host.nofile), checks declared
// library limits, splits the CPUs, and checks what the plan needs against
// the host as fs shows it — as it will be after Tune when tune is set. It
// returns what it found, and an error wrapping ErrPreflight that names
// every fatal problem when the run cannot start. sys is the /sys tree
// host.idle_poll is read from.
func Preflight(fs, sys sysctl.FS, p *plan.Plan, tune bool) (HostCheck, error) {
	var c HostCheck
	if _, _, err := sysctl.RaiseNoFile(); err != nil {
		c.Warnings = append(c.Warnings, fmt.Sprintf("raising the open-file soft limit: %v", err))
	}
	if p.Host.NoFile > 0 {
		if _, hard, err := sysctl.SetNoFile(uint64(p.Host.NoFile)); err != nil {
			return c, preflightError{fmt.Errorf("%s: host.nofile %d: %w (the hard limit is %d: lower host.nofile or raise `ulimit -Hn`)", p.File, p.Host.NoFile, err, hard)}
		}
	}
	if errs := CheckLimits(p); len(errs) > 0 {
		return c, preflightError{errors.Join(errs...)}
	}
	layout, err := ComputeLayout(p.Host.ServerCPUs, p.Host.ClientCPUs, sysctl.OnlineCPUs())
	c.Layout = layout
	if err != nil {
		return c, preflightError{fmt.Errorf("%s: preflight: %w", p.File, err)}
	}
	facts, err := readFacts(fs, p, tune)
	if err != nil {
		c.Warnings = append(c.Warnings, fmt.Sprintf("some host facts could not be read, their checks are skipped: %v", err))
	}
	c.Findings = sysctl.Preflight(Needs(p, layout, facts.NoFileHard), facts)
	if len(p.Client.Remote) > 0 {
		f, err := remotePreflight(p)
		if err != nil {
			return c, preflightError{err}
		}
		c.Findings = append(c.Findings, f...)
	}
	idle := sysctl.ReadIdle(sys)
	wantSys, warning := HostSys(idle, p)
	if warning != "" {
		c.Warnings = append(c.Warnings, warning)
	}
	if w := idleHint(idle, p); w != "" {
		c.Warnings = append(c.Warnings, w)
	}
	if !tune {
		for _, r := range HostRows(fs, sys, p.Host.Sysctl, wantSys) {
			if r.Err != nil || !r.OK {
				c.Sysctl = append(c.Sysctl, r)
			}
		}
	}
	if n := fatal(c.Findings); n > 0 {
		return c, preflightError{fmt.Errorf("%s: preflight failed (%d problems above); nothing was started", p.File, n)}
	}
	return c, nil
}

// idleHint points at host.idle_poll for a plan with paced phases against a
// server on this host, where idle CPUs halt at once; "" otherwise.
func idleHint(idle sysctl.Idle, p *plan.Plan) string {
	if p.Host.IdlePoll != nil || allExternal(p) || !idle.HaltsAtOnce() {
		return ""
	}
	for _, ph := range p.Phases {
		if k, ok := scenarios.Lookup(ph.Kind); ok && k.Paced {
			return fmt.Sprintf("idle CPUs here halt at once (cpuidle haltpoll, no polling): each wake-up of an idle CPU is a VM exit, and on loopback the client of phase %s pays one each time its write wakes the server (at sparse rates, nearly every message); host.idle_poll: 200us with --tune measures as a host with cheap wake-ups would (wsplan help tuning)", ph.Name)
		}
	}
	return ""
}

// HostRows compares the plan's sysctls (want) and its keys under /sys
// (wantSys, from HostSys) with the host: one row per key, the sysctls
// first, the others named by their path ("/sys/…").
func HostRows(fs, sys sysctl.FS, want, wantSys map[string]string) []sysctl.Row {
	rows := sysctl.Check(fs, want)
	for _, r := range sysctl.Check(sys, wantSys) {
		r.Key = sysctl.SysLabel + r.Key
		rows = append(rows, r)
	}
	return rows
}

// readFacts reads the host and, when tune is set, assumes what Tune will
// write applied (the plan's sysctls and the reserved server ports), so
// preflight judges the host as the run will see it.
func readFacts(fs sysctl.FS, p *plan.Plan, tune bool) (sysctl.HostFacts, error) {
	h, err := sysctl.ReadHostFacts(fs, "")
	if tune {
		h = h.Assume(TuneSysctls(fs, []*plan.Plan{p}).Sysctl)
	}
	return h, err
}

// fatal counts the findings that stop a run.
func fatal(findings []sysctl.Finding) int {
	n := 0
	for _, f := range findings {
		if f.Fatal {
			n++
		}
	}
	return n
}
