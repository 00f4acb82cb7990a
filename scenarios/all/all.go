// Package all registers every built-in phase kind: each is a package of
// its own under scenarios/ that registers itself in init, and importing
// this package imports them all. cmd/wsplan imports it, and so do the
// tests of packages that load plans or walk the kinds. Adding a kind is
// its package plus one line here; internal/layering's
// TestKindPackagesApart builds the module without each in turn.
package all

import (
	_ "github.com/wsplan/wsplan/scenarios/broadcast" // fan-out to rooms
	_ "github.com/wsplan/wsplan/scenarios/churn"     // connections closed and reopened
	_ "github.com/wsplan/wsplan/scenarios/close"     // close handshakes
	_ "github.com/wsplan/wsplan/scenarios/echo"      // closed loop of echoes
	_ "github.com/wsplan/wsplan/scenarios/hold"      // connections held open
	_ "github.com/wsplan/wsplan/scenarios/ping"      // closed loop of pings
	_ "github.com/wsplan/wsplan/scenarios/rate"      // open loop on a timetable
	_ "github.com/wsplan/wsplan/scenarios/script"    // scripted conversations
	_ "github.com/wsplan/wsplan/scenarios/search"    // capacity under an SLO, over rate's steps (removing rate removes it too)
)
