package plan

import (
	"fmt"
	"reflect"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// Fault is one entry of a phase's `faults:` (written in the phase's body,
// as name: is, for any kind): something done to the server while the
// phase runs, at a time after its start.
type Fault struct {
	At      units.Duration `yaml:"at" default:"0s" min:"0s" doc:"when, after the phase's start"`
	Restart FaultTarget    `yaml:"restart" required:"true" doc:"what restarts: server (one wsplan started: SIGTERM, then the stop grace, then started again on the same addresses; a url: server: its restart_command)"`
	// Line is the line of the entry, for messages.
	Line int `yaml:"-"`
	// index is the entry's place in the list as written (the list is
	// sorted by time), for paths.
	index int
}

// path is the fault's path, as written in phase i of kind.
func (f *Fault) path(i int, kind string) string {
	return fmt.Sprintf("phases[%d].%s.faults[%d]", i, kind, f.index)
}

// FaultServer is what a restart fault restarts (Fault.Restart).
const FaultServer = "server"

// FaultTarget is what a fault is done to.
type FaultTarget string

// Values implements decl.Enum.
func (FaultTarget) Values() []string { return []string{FaultServer} }

// checkFaults checks the phases' faults against the servers: a url:
// server can be restarted only by its restart_command, and its pid then
// changes (pid_file:, read again after the restart, not pid:).
func (l *loader) checkFaults(p *Plan) {
	for i, ph := range p.Phases {
		for _, f := range ph.Faults {
			path := f.path(i, ph.Kind)
			if f.Restart != FaultServer || f.At < 0 {
				continue // its declaration says what is wrong (declared.go)
			}
			if d, ok := phaseDuration(ph.Spec); ok && f.At >= d {
				l.errf(f.Line, path+".at", "%s is not within the phase's duration (%s): the fault would never happen", f.At, d)
			}
			for _, s := range p.Servers {
				switch {
				case s.External() && len(s.RestartCommand) == 0:
					l.errf(f.Line, path+".restart", "server %s is a url: target wsplan did not start: give it restart_command: (the command that restarts it)", s.Name)
				case s.External() && s.PID != 0:
					l.errf(f.Line, path+".restart", "server %s: pid: cannot follow a restart (the pid changes): give pid_file:, read again after restart_command", s.Name)
				}
			}
		}
	}
	for _, s := range p.Servers {
		if len(s.RestartCommand) > 0 && !s.External() {
			l.errf(s.Line, "servers", "server %s: restart_command is for url: servers; wsplan restarts the servers it starts itself", s.Name)
		}
	}
}

// phaseDuration returns a phase's `duration:` when it has one and it is
// set: how long the phase runs, which a fault's time must fall within.
func phaseDuration(spec scenarios.Phase) (units.Duration, bool) {
	v := reflect.ValueOf(spec)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return 0, false
	}
	for _, f := range decl.Fields(v) {
		if d, ok := f.Value.Interface().(units.Duration); ok && f.Key == "duration" && d > 0 {
			return d, true
		}
	}
	return 0, false
}

// faults decodes a phase's faults: (n at path) into ph, each with its
// line, in time order.
func (l *loader) faults(n *yaml.Node, path string, ph *Phase) {
	if !l.decode(n, path, reflect.ValueOf(&ph.Faults).Elem()) {
		return
	}
	for i := range ph.Faults {
		decl.Defaults(&ph.Faults[i])
	}
	if n = deref(n); n != nil && n.Kind == yaml.SequenceNode {
		for i := range ph.Faults {
			if i < len(n.Content) {
				ph.Faults[i].Line = n.Content[i].Line
			}
			ph.Faults[i].index = i
		}
	}
	sort.SliceStable(ph.Faults, func(i, j int) bool { return ph.Faults[i].At < ph.Faults[j].At })
}

// HasFaults reports whether any phase has faults: the engine then keeps
// its servers restartable.
func (p *Plan) HasFaults() bool {
	for _, ph := range p.Phases {
		if len(ph.Faults) > 0 {
			return true
		}
	}
	return false
}

// allow reads a phase's `allow:`: a mapping of the phase's fault metrics
// to a count or a percentage (scenarios.ParseAllowance). Which keys the
// phase counts is checked once the phase is decoded (phases).
func (l *loader) allow(n *yaml.Node, path string, ph *Phase) {
	n = deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		l.errf(n.Line, path, "want a mapping of fault counts to what is allowed (allow: {failed: 10, lost: 0.1%%}), got %s", describe(n))
		return
	}
	ph.Allow = scenarios.Allow{}
	for _, p := range l.pairs(n, path) {
		if p.key.Kind != yaml.ScalarNode {
			l.errf(p.key.Line, path, "want a fault's name as the key, got %s", describe(p.key))
			continue
		}
		kp := keyPath(path, p.key.Value)
		l.lines.set(kp, p.key.Line)
		v := deref(p.value)
		if v == nil || v.Kind != yaml.ScalarNode || isNull(v) {
			l.errf(p.key.Line, kp, "want a count (10) or a percentage (0.1%%), got %s", describe(v))
			continue
		}
		a, err := scenarios.ParseAllowance(v.Value)
		if err != nil {
			l.errf(v.Line, kp, "%s", err)
			continue
		}
		ph.Allow[p.key.Value] = a
	}
}
