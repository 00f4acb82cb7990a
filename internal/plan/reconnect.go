package plan

import (
	"github.com/wsplan/wsplan/internal/client"
)

// client.reconnect: is client.Reconnect, declared there once (its keys'
// defaults, bounds and docs); the plan reads it like any section of its
// own (declared.go) and checks here what a tag cannot say.

// ReconnectPolicy is the client's policy, every default applied; nil for
// none.
func (c *Client) ReconnectPolicy() *client.Reconnect {
	if !c.Reconnect.On() {
		return nil
	}
	r := c.Reconnect
	return &r
}

// checkReconnect reports what r's declaration cannot say: max >= base.
func (l *loader) checkReconnect(r *client.Reconnect) {
	if r.Base > 0 && r.Max > 0 && r.Max < r.Base {
		l.fieldErr("client.reconnect.max", "must be >= base (%s), got %s", r.Base, r.Max)
	}
}
