package script

import (
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/units"
)

// TestTagDefaultsMatchClient: script's late_after default, declared in its
// tag, is the paced kinds' (client.DefaultLateAfter), so that "late" means
// the same in every kind's table.
func TestTagDefaultsMatchClient(t *testing.T) {
	got, ok := decl.Default(&Phase{}, "late_after")
	if !ok {
		t.Fatal("late_after: no default tag")
	}
	if want := units.Duration(client.DefaultLateAfter); got != want {
		t.Errorf("late_after: tag default %v (%T), client.DefaultLateAfter is %v", got, got, want)
	}
}
