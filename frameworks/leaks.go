package frameworks

// globalGoroutines lists, per adapter name, functions that appear in the
// stacks of goroutines the library starts once per process and never stops
// (a date-header ticker, a timer wheel, a memory-pool janitor). The
// conformance test's goroutine-leak check ignores goroutines whose stack
// contains one of them; everything else still running after Close is a
// leak. Adapter files fill it from init with knownGlobalGoroutines, next to
// the code that triggers them, so the reason is documented where it lives.
var globalGoroutines = map[string][]string{}

// knownGlobalGoroutines records library goroutines that outlive Close (see
// globalGoroutines). funcs are fully qualified function names as they appear
// in a goroutine dump, e.g. "github.com/valyala/fasthttp.updateServerDate.func1".
func knownGlobalGoroutines(adapter string, funcs ...string) {
	mu.Lock()
	defer mu.Unlock()
	globalGoroutines[adapter] = append(globalGoroutines[adapter], funcs...)
}

// globalGoroutinesOf returns the recorded functions for one adapter.
func globalGoroutinesOf(adapter string) []string {
	mu.RLock()
	defer mu.RUnlock()
	return append([]string(nil), globalGoroutines[adapter]...)
}
