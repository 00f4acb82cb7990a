package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/wsplan/wsplan/internal/assert"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/scenarios"
)

func newValidateCmd(stdout, stderr io.Writer) *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "validate PLAN",
		Short: "Load and check a plan without starting anything; print it resolved",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			plans, err := f.loadMatrix(args[0])
			if err != nil {
				return err
			}
			p := plans[0]
			if _, err := assert.Compile(p); err != nil {
				return usageErr(err)
			}
			printPlan(stdout, p)
			printMatrix(stdout, p)
			if _, err = preflight(p, false, stderr); err != nil {
				return err
			}
			return preflightMatrix(plans[1:], false, stderr)
		},
	}
	f.register(cmd)
	return cmd
}

// printPlan writes the resolved plan: vars, servers with their options, and
// every phase with its defaults applied.
func printPlan(w io.Writer, p *plan.Plan) {
	fmt.Fprintf(w, "plan %s (%s): %d servers, %d phases, %d assertions\n", p.Name, p.File, len(p.Servers), len(p.Phases), len(p.Assert))
	if len(p.Vars) > 0 {
		keys := make([]string, 0, len(p.Vars))
		for k := range p.Vars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(w, "vars:")
		for _, k := range keys {
			fmt.Fprintf(w, "  %s: %s\n", k, p.Vars[k])
		}
	}
	if c := plan.Changed(&p.Client); c != "" {
		fmt.Fprintf(w, "client: %s\n", p.Redact(c))
	}
	fmt.Fprintln(w, "servers:")
	for i := range p.Servers {
		printServer(w, p, &p.Servers[i])
	}
	fmt.Fprintln(w, "phases:")
	for _, ph := range p.Phases {
		lines := scenarios.Describe(ph.Spec)
		fmt.Fprintf(w, "  - %s (%s): %s\n", ph.Name, ph.Kind, p.Redact(lines[0]))
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "      %s\n", p.Redact(l))
		}
		if f := faultsLine(ph); f != "" {
			fmt.Fprintf(w, "      %s\n", f)
		}
	}
	for _, a := range p.Assert {
		fmt.Fprintf(w, "assert: %s\n", a.Expr)
	}
}

// printServer writes one server of the resolved plan: how wsplan reaches
// it (a url, a command, or a framework with its options) and what its
// handshake carries.
func printServer(w io.Writer, p *plan.Plan, s *plan.Server) {
	switch {
	case s.External():
		res := "n/a (no pid:, pid_file: or metrics_url:)"
		switch {
		case s.PID != 0:
			res = fmt.Sprintf("pid %d", s.PID)
		case s.PIDFile != "":
			res = "pid_file " + s.PIDFile
		case s.MetricsURL != "":
			res = "metrics_url " + s.MetricsURL
		}
		fmt.Fprintf(w, "  - %s: url %s (not started by wsplan; server resources: %s)\n", s.Name, p.Redact(strings.Join(s.URLs, ", ")), res)
	case len(s.Command) > 0:
		fmt.Fprintf(w, "  - %s: command %q on %s\n", s.Name, s.Command, strings.Join(s.Addrs, ","))
	default:
		fw := s.Framework
		if fw == "" {
			fw = s.Name
		}
		keys := make([]string, 0, len(s.Options))
		for k := range s.Options {
			keys = append(keys, k+"="+s.Options[k])
		}
		sort.Strings(keys)
		tls := ""
		if s.ServeTLS {
			tls = " (tls: served with the run's certificate)"
		}
		fmt.Fprintf(w, "  - %s: %s%s\n", s.Name, strings.Join(append([]string{fw}, keys...), " "), tls)
	}
	if len(s.Headers) > 0 {
		keys := make([]string, 0, len(s.Headers))
		for k := range s.Headers {
			keys = append(keys, k+"="+p.Redact(s.Headers[k]))
		}
		sort.Strings(keys)
		fmt.Fprintf(w, "    headers: %s\n", strings.Join(keys, " "))
	}
	if len(s.Subprotocols) > 0 {
		fmt.Fprintf(w, "    subprotocols: %s\n", strings.Join(s.Subprotocols, ", "))
	}
	if s.Origin != "" {
		fmt.Fprintf(w, "    origin: %s\n", p.Redact(s.Origin))
	}
	if s.Protocol != nil {
		fmt.Fprintf(w, "    protocol: %s\n", p.Redact(s.Protocol.String()))
	}
	if s.TLS != nil && s.TLS.String() != "" {
		fmt.Fprintf(w, "    tls: %s\n", s.TLS)
	}
}

// faultsLine says which counts fail a phase (scenarios.PhaseFaults) and
// what the plan allows of each: "faults: failed, lost (allowed: 5%),
// dropped (allowed: 100%)"; the parts of a fault (a script's exchanges'
// login_errors within errors) by their exchange, "per exchange: login_*"
// unless allowed. "" for a phase that counts none.
func faultsLine(ph plan.Phase) string {
	var parts, each []string
	seen := map[string]bool{}
	for _, f := range scenarios.PhaseFaults(ph.Kind, ph.Spec) {
		a, allowed := ph.Allow[f.Metric]
		if prefix, ok := strings.CutSuffix(f.Metric, "_"+f.Within); ok && f.Within != "" && !allowed {
			if !seen[prefix] {
				seen[prefix] = true
				each = append(each, prefix+"_*")
			}
			continue
		}
		s := f.Metric
		if allowed {
			s += " (allowed: " + a.String() + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	line := "faults: " + strings.Join(parts, ", ")
	if len(each) > 0 {
		line += "; per exchange: " + strings.Join(each, ", ")
	}
	return line
}
