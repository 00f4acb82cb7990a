package client

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/units"
)

// TestPacedWake: the loop wakes for the next due message, but never sooner
// than slack after its last pump; NoSlack wakes for each message on time.
func TestPacedWake(t *testing.T) {
	us := int64(time.Microsecond)
	for _, tc := range []struct {
		name      string
		slack     time.Duration
		last, due int64
		want      int64
	}{
		{"default slack, due within it: wait for the window", 0, 1000 * us, 1050 * us, 1200 * us},
		{"default slack, due after it: on time", 0, 1000 * us, 1300 * us, 1300 * us},
		{"1ms, due at the pump: after the window", time.Millisecond, 1000 * us, 1000 * us, 2000 * us},
		{"1ms, overdue: after the window", time.Millisecond, 1000 * us, 500 * us, 2000 * us},
		{"no slack: on time", NoSlack, 1000 * us, 1001 * us, 1001 * us},
		{"no slack, overdue: at once", NoSlack, 1000 * us, 900 * us, 1000 * us},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewPacedWake(tc.slack)
			if got := w.Wake(tc.due); got != tc.due {
				t.Errorf("before any pump: wake(%d) = %d, want the due time", tc.due, got)
			}
			w.Pumped(tc.last)
			if got := w.Wake(tc.due); got != tc.want {
				t.Errorf("wake(%d) after a pump at %d = %d, want %d", tc.due, tc.last, got, tc.want)
			}
		})
	}
}

// TestSlackOf: a declared slack becomes the sender's as every paced kind
// passes it: absent is the default, 0s is none (a wake-up per message),
// any other value itself.
func TestSlackOf(t *testing.T) {
	d := func(v time.Duration) *units.Duration { u := units.Duration(v); return &u }
	for _, tc := range []struct {
		slack *units.Duration
		want  time.Duration
	}{
		{nil, DefaultSlack},
		{d(0), NoSlack},
		{d(time.Millisecond), time.Millisecond},
	} {
		if got := SlackOf(tc.slack); got != tc.want {
			t.Errorf("slack %v: client gets %v, want %v", tc.slack, got, tc.want)
		}
	}
}
