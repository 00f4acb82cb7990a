package autobahn

import (
	"runtime"
	"testing"
)

// TestRegisterIsCheap: registering the cases builds no payload. Every
// wsplan process loads this package (servers and shards too), so building
// the 9.x messages at load time cost each of them ~160 MB of RSS and
// ~0.2 s, and inflated every server memory figure.
func TestRegisterIsCheap(t *testing.T) {
	saved := registry
	defer func() { registry = saved }()
	registry = map[string]*Case{}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	registerLimits() // section 9: the big messages
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Errorf("registering section 9 allocated %d bytes, want < 4 MiB (payloads are built when a case runs)", got)
	}
	if len(registry) != 54 {
		t.Errorf("section 9 registered %d cases, want 54", len(registry))
	}
}
