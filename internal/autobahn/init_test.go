package autobahn

import (
	"os"
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

// atStart is how many cases were registered when the test binary's
// TestMain began: after every package's init, before any test.
var atStart int

func TestMain(m *testing.M) {
	atStart = len(registry)
	os.Exit(m.Run())
}

// TestCasesLoadLazily: loading the package registers no case (a wsplan
// server or shard never pays for the table); Cases registers all of them.
func TestCasesLoadLazily(t *testing.T) {
	if atStart != 0 {
		t.Errorf("%d cases registered at start-up, want 0 (they load on the first Cases call)", atStart)
	}
	if n := len(Cases()); n < 500 {
		t.Errorf("Cases() = %d cases, want every case (> 500)", n)
	}
}
