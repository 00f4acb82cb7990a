package servers

import (
	"testing"

	"github.com/wsplan/wsplan/frameworks"
)

// TestImplementationsMatchDeclarations: the two sides of every adapter
// match. Every declared adapter has an implementation with a Start, a
// broadcast server exactly when its declaration has a Broadcast, and
// every implementation (and every lingering-goroutine record) names a
// declared adapter.
func TestImplementationsMatchDeclarations(t *testing.T) {
	if len(frameworks.Adapters()) == 0 {
		t.Fatal("no adapter is declared")
	}
	for _, a := range frameworks.Adapters() {
		impl, ok := frameworks.Implementation(a.Name)
		switch {
		case !ok:
			t.Errorf("%s is declared but has no implementation: call frameworks.Implement(frameworks.%s, ...) in frameworks/servers", a.Name, a.Name)
			continue
		case impl.Start == nil:
			t.Errorf("%s: its implementation has no Start", a.Name)
		}
		switch {
		case a.Broadcast != nil && impl.Broadcast == nil:
			t.Errorf("%s declares a Broadcast, but its implementation has no broadcast server", a.Name)
		case a.Broadcast == nil && impl.Broadcast != nil:
			t.Errorf("%s has a broadcast server, but its declaration has no Broadcast (%s)", a.Name, a.NoBroadcastWhy())
		}
	}
	for _, name := range frameworks.Implemented() {
		if _, ok := frameworks.LookupAdapter(name); !ok {
			t.Errorf("implementation of %q: no adapter of that name is declared in package frameworks", name)
		}
	}
	lingeringMu.RLock()
	defer lingeringMu.RUnlock()
	for name := range lingering {
		if _, ok := frameworks.LookupAdapter(name); !ok {
			t.Errorf("lingering goroutines of %q: no adapter of that name is declared", name)
		}
	}
}
