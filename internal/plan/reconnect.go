package plan

import (
	"time"

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

// JSONSchema states the values (internal/schema).
func (Policy) JSONSchema() map[string]any {
	return map[string]any{"enum": []any{client.ReconnectNone, client.ReconnectImmediate, client.ReconnectBackoff}}
}

// Jitter is client.reconnect.jitter.
type Jitter string

// JSONSchema states the values (internal/schema).
func (Jitter) JSONSchema() map[string]any {
	return map[string]any{"enum": []any{client.JitterFull, client.JitterEqual, client.JitterNone}}
}

// Options is the client's policy; nil for none.
func (r Reconnect) Options() *client.Reconnect {
	if r.Policy == "" || r.Policy == client.ReconnectNone {
		return nil
	}
	return &client.Reconnect{Policy: string(r.Policy), Base: r.Base.D(), Max: r.Max.D(), Jitter: string(r.Jitter), Timeout: r.Timeout.D()}
}

// setDefaults fills r's zero fields (the tags' defaults).
func (r *Reconnect) setDefaults() {
	if r.Policy == "" {
		r.Policy = client.ReconnectNone
	}
	if r.Jitter == "" {
		r.Jitter = client.JitterFull
	}
	orDuration(&r.Base, client.DefaultReconnectBase)
	orDuration(&r.Max, client.DefaultReconnectMax)
	orDuration(&r.Timeout, client.DefaultReconnectTimeout)
}

// check reports r's problems.
func (l *loader) checkReconnect(r *Reconnect) {
	c := client.Reconnect{Policy: string(r.Policy), Base: r.Base.D(), Max: r.Max.D(), Jitter: string(r.Jitter), Timeout: r.Timeout.D()}
	switch c.Policy {
	case client.ReconnectNone, client.ReconnectImmediate, client.ReconnectBackoff:
	default:
		l.fieldErr("client.reconnect.policy", "must be %s, %s or %s, got %q", client.ReconnectNone, client.ReconnectImmediate, client.ReconnectBackoff, c.Policy)
	}
	switch c.Jitter {
	case client.JitterFull, client.JitterEqual, client.JitterNone:
	default:
		l.fieldErr("client.reconnect.jitter", "must be %s, %s or %s, got %q", client.JitterFull, client.JitterEqual, client.JitterNone, c.Jitter)
	}
	for _, f := range []struct {
		key string
		d   time.Duration
	}{{"base", c.Base}, {"max", c.Max}, {"timeout", c.Timeout}} {
		if f.d <= 0 {
			l.fieldErr("client.reconnect."+f.key, "must be > 0, got %s", f.d)
		}
	}
	if c.Base > 0 && c.Max < c.Base {
		l.fieldErr("client.reconnect.max", "must be >= base (%s), got %s", c.Base, c.Max)
	}
}
