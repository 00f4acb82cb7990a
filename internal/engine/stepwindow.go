package engine

import (
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/scenarios"
)

// stepWindow returns the scenarios.Env.Window of a phase against a server
// measured as sres says: each call starts a sampling window of its own (the
// server and every client process, as the phase's window), and its stop
// writes the same figures the phase's row gets, so a search's steps carry
// server and client CPU, client_bound and server_bound, and each side's
// CPU while the step was behind its timetable, exactly as a rate phase's
// row.
func (e *runner) stepWindow(sres resources, drv Driver) func() func(metrics.Values, *scenarios.Efficiency, []scenarios.Span) string {
	return func() func(metrics.Values, *scenarios.Efficiency, []scenarios.Span) string {
		w := e.newWindow(sres, drv)
		w.start()
		return func(m metrics.Values, eff *scenarios.Efficiency, behind []scenarios.Span) string {
			sv, cv, si := w.stop()
			warning := windowMetrics(m, sv, cv, si, e.o.Layout, e.usableClientCPU(), eff)
			behindMetrics(m, behind, sv, cv, e.usableClientCPU())
			return warning
		}
	}
}
