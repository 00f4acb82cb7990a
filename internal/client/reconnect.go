package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/units"
)

// Reconnecting lives below the kinds: each loop has a reconnector (when
// Options.Reconnect asks for one) with a dialer of its own. A connection
// of the open pool that the server drops (loop.lost: not one the client
// closed) comes back by the policy; the run in progress hears of the new
// connection through adopter, and takes it in the dropped one's place.
// Messages in flight on the dropped connection were charged by the run's
// lost hook (lost, failed): nothing is sent again. A run that is not an
// adopter (its connections are its own: broadcast, script) gets no
// reconnects while it runs; between phases every dropped connection of
// the pool comes back.

// ReconnectPolicy is Reconnect.Policy.
type ReconnectPolicy string

// Values implements decl.Enum.
func (ReconnectPolicy) Values() []string {
	return []string{ReconnectNone, ReconnectImmediate, ReconnectBackoff}
}

// ReconnectJitter is Reconnect.Jitter.
type ReconnectJitter string

// Values implements decl.Enum.
func (ReconnectJitter) Values() []string { return []string{JitterFull, JitterEqual, JitterNone} }

// Reconnect policies (Reconnect.Policy).
const (
	ReconnectNone      = "none"      // a dropped connection stays closed
	ReconnectImmediate = "immediate" // dial again at once; a failed attempt again after Base
	ReconnectBackoff   = "backoff"   // wait Base × 2^attempt, at most Max, jittered, before each attempt
)

// Jitters of a backoff (Reconnect.Jitter): the wait d is drawn as
const (
	JitterFull  = "full"  // uniform in [0, d]
	JitterEqual = "equal" // d/2 + uniform in [0, d/2]
	JitterNone  = "none"  // exactly d: every client of a herd at the same moment
)

// Reconnect is how dropped connections come back (Options.Reconnect),
// and `client.reconnect:` of a plan: each key declared once, here
// (package decl), for the plan's loader, its schema and docs, and Check.
type Reconnect struct {
	Policy  ReconnectPolicy `yaml:"policy" json:"policy" default:"none" doc:"none (a dropped connection stays closed), immediate (dial again at once; a failed attempt again after base) or backoff (wait base × 2^attempt, at most max, jittered, before each attempt)"`
	Base    units.Duration  `yaml:"base" json:"base,omitempty" default:"100ms" min:"1ns" doc:"backoff: the first wait; immediate: the wait after a failed attempt"`
	Max     units.Duration  `yaml:"max" json:"max,omitempty" default:"10s" min:"1ns" doc:"backoff: the longest wait"`
	Jitter  ReconnectJitter `yaml:"jitter" json:"jitter,omitempty" default:"full" doc:"how a backoff's wait d is drawn: full (uniform in [0, d]), equal (d/2 + uniform in [0, d/2]) or none (d: the whole herd at once)"`
	Timeout units.Duration  `yaml:"timeout" json:"timeout,omitempty" default:"5s" min:"1ns" doc:"time allowed for one attempt"`
}

// Check fills r's zero keys with their defaults and validates it: its
// declaration's bounds, and max >= base.
func (r *Reconnect) Check() error {
	decl.Defaults(r)
	var errs []error
	for _, e := range decl.Check(r) {
		errs = append(errs, e)
	}
	if r.Max < r.Base {
		errs = append(errs, fmt.Errorf("max: must be >= base (%s), got %s", r.Base, r.Max))
	}
	if len(errs) > 0 {
		return fmt.Errorf("client: reconnect: %w", errors.Join(errs...))
	}
	return nil
}

// On reports whether r brings dropped connections back (a policy but
// none).
func (r *Reconnect) On() bool { return r != nil && r.Policy != "" && r.Policy != ReconnectNone }

// wait is how long before attempt n (0 = the first after the drop); u is
// uniform in [0, 1).
func (r *Reconnect) wait(n int, u float64) time.Duration {
	if r.Policy == ReconnectImmediate {
		if n == 0 {
			return 0
		}
		return r.Base.D()
	}
	d := r.Max.D()
	if n < 40 {
		d = min(r.Base.D()<<n, r.Max.D())
	}
	switch r.Jitter {
	case JitterFull:
		return time.Duration(u * float64(d))
	case JitterEqual:
		return d/2 + time.Duration(u*float64(d/2))
	}
	return d
}

// ReconnectStats is what the reconnectors did over a phase, merged over
// loops and shards (Client.Reconnects).
type ReconnectStats struct {
	Drops      int64   `json:"drops"`      // connections of the pool the server dropped
	Reconnects int64   `json:"reconnects"` // dropped connections open again
	Failed     int64   `json:"failed"`     // attempts that failed (each followed by the next wait)
	Errors     Reasons `json:"errors"`     // why attempts failed
	Pending    int64   `json:"pending"`    // dropped and not back when the phase ended
	// Latency is each reconnect's time from its drop to the new
	// connection's 101 response.
	Latency Hist `json:"latency"`
	// PerTick counts reconnects (handshakes that succeeded) per
	// PeakWindow of the wall clock (Unix time / PeakWindow), for the
	// storm's peak; merged window by window.
	PerTick map[int64]int64 `json:"per_tick,omitempty"`
	// FirstDrop, FirstBack and LastBack are wall clock times (Unix ns;
	// 0 = none): the first drop, the first and the last reconnect.
	FirstDrop int64 `json:"first_drop,omitempty"`
	FirstBack int64 `json:"first_back,omitempty"`
	LastBack  int64 `json:"last_back,omitempty"`
}

// Merge adds o into s.
func (s *ReconnectStats) Merge(o ReconnectStats) {
	s.Drops += o.Drops
	s.Reconnects += o.Reconnects
	s.Failed += o.Failed
	s.Errors.Merge(o.Errors)
	s.Pending += o.Pending
	s.Latency.Add(o.Latency)
	s.FirstDrop = minSet(s.FirstDrop, o.FirstDrop)
	s.FirstBack = minSet(s.FirstBack, o.FirstBack)
	s.LastBack = max(s.LastBack, o.LastBack)
	for k, v := range o.PerTick {
		if s.PerTick == nil {
			s.PerTick = map[int64]int64{}
		}
		s.PerTick[k] += v
	}
}

// minSet is the smaller of a and b, 0 meaning unset.
func minSet(a, b int64) int64 {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}

// PeakWindow is the window the storm's peak is counted in: a herd that
// comes back within a few hundred milliseconds shows as one second
// whatever its shape; 100 ms tells a spike from a spread.
const PeakWindow = 100 * time.Millisecond

// Peak is the most reconnects in one PeakWindow, per second.
func (s *ReconnectStats) Peak() int64 {
	var p int64
	for _, v := range s.PerTick {
		p = max(p, v)
	}
	return p * int64(time.Second/PeakWindow)
}

// adopter is a run that holds the pool's connections (and keeps them in
// tables of its own): it takes a reconnected connection c in place of
// old, the dropped one, whose conn.slot still says where it was. A run
// that did not hold old ignores it; c stays on the pool for the next
// phases either way.
type adopter interface {
	Adopt(l *Loop, old, c *Conn)
}

// Reconnects returns what the reconnectors did over the last phase Run
// ran (zero without Options.Reconnect).
func (c *Client) Reconnects() ReconnectStats {
	c.rcMu.Lock()
	defer c.rcMu.Unlock()
	return c.rcLast
}
