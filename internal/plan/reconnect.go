package plan

import (
	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
)

// Reconnect is `client.reconnect:`: how the client brings back the
// connections the server drops (client.Reconnect), in every phase whose
// kind holds the open connections (hold, rate, ping, echo, churn) and
// between phases.
type Reconnect struct {
	Policy  Policy         `yaml:"policy" default:"none" doc:"none (a dropped connection stays closed), immediate (dial again at once; a failed attempt again after base) or backoff (wait base × 2^attempt, at most max, jittered, before each attempt)"`
	Base    units.Duration `yaml:"base" default:"100ms" min:"1ns" doc:"backoff: the first wait; immediate: the wait after a failed attempt"`
	Max     units.Duration `yaml:"max" default:"10s" min:"1ns" doc:"backoff: the longest wait"`
	Jitter  Jitter         `yaml:"jitter" default:"full" doc:"how a backoff's wait d is drawn: full (uniform in [0, d]), equal (d/2 + uniform in [0, d/2]) or none (d: the whole herd at once)"`
	Timeout units.Duration `yaml:"timeout" default:"5s" min:"1ns" doc:"time allowed for one attempt"`
}

// Policy is client.reconnect.policy.
type Policy string

// Values implements decl.Enum.
func (Policy) Values() []string {
	return []string{client.ReconnectNone, client.ReconnectImmediate, client.ReconnectBackoff}
}

// Jitter is client.reconnect.jitter.
type Jitter string

// Values implements decl.Enum.
func (Jitter) Values() []string {
	return []string{client.JitterFull, client.JitterEqual, client.JitterNone}
}

// Options is the client's policy; nil for none.
func (r Reconnect) Options() *client.Reconnect {
	if r.Policy == "" || r.Policy == client.ReconnectNone {
		return nil
	}
	return &client.Reconnect{Policy: string(r.Policy), Base: r.Base.D(), Max: r.Max.D(), Jitter: string(r.Jitter), Timeout: r.Timeout.D()}
}

// checkReconnect reports what r's declaration cannot say: max >= base.
// Its defaults and bounds are its tags' (declared.go).
func (l *loader) checkReconnect(r *Reconnect) {
	if r.Base > 0 && r.Max > 0 && r.Max < r.Base {
		l.fieldErr("client.reconnect.max", "must be >= base (%s), got %s", r.Base, r.Max)
	}
}
