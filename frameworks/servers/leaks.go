package servers

import "sync"

// lingering lists, per adapter name, functions that appear in the stacks of
// library goroutines which outlive the adapter's Close by design: started
// once per process and never stopped (a Date-header ticker, a timer wheel),
// or stopped but only noticing it after a sleep. The conformance test's
// goroutine-leak check ignores goroutines whose stack contains one of them;
// anything else still running after Close is a leak. Implementation files fill it
// from init with lingeringGoroutines, next to the code that starts them, so
// the reason is written where it lives.
var (
	lingeringMu sync.RWMutex
	lingering   = map[string][]string{}
)

// lingeringGoroutines records library goroutines that outlive Close (see
// lingering). why says why they cannot be stopped; funcs are fully
// qualified function names as they appear in a goroutine dump, e.g.
// "github.com/valyala/fasthttp.updateServerDate.func1".
func lingeringGoroutines(adapter, why string, funcs ...string) {
	if why == "" {
		panic("servers: lingeringGoroutines for " + adapter + " needs a reason")
	}
	lingeringMu.Lock()
	defer lingeringMu.Unlock()
	lingering[adapter] = append(lingering[adapter], funcs...)
}

// lingeringOf returns the recorded functions for one adapter.
func lingeringOf(adapter string) []string {
	lingeringMu.RLock()
	defer lingeringMu.RUnlock()
	return append([]string(nil), lingering[adapter]...)
}
