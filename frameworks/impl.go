package frameworks

import (
	"fmt"
	"maps"
	"slices"
)

// StartFunc starts an adapter's server: it listens on every address in
// cfg.Addrs (host:port) and serves WebSocket upgrades on cfg.Path. It
// returns once the listeners are open.
type StartFunc func(cfg Config) (Server, error)

// Impl is an adapter's implementation, which package frameworks/servers
// attaches to the adapter's declaration with Implement.
type Impl struct {
	// Start serves the echo server.
	Start StartFunc
	// Broadcast serves BroadcastPath; nil exactly when the declaration
	// has no Broadcast.
	Broadcast StartFunc
}

// implementations holds what Implement attached, by adapter name (under
// mu, with the declarations).
var implementations = map[string]Impl{}

// Implement attaches impl to the adapter declared under name; the
// implementation package calls it from init, once per adapter, next to
// the code it names. It panics on a second Implement of one name or a nil
// Start, programming errors. It does not check that name is declared: the
// implementation package's tests check both sides match.
func Implement(name string, impl Impl) {
	mu.Lock()
	defer mu.Unlock()
	if impl.Start == nil {
		panic("frameworks: Implement " + name + " without a Start")
	}
	if _, dup := implementations[name]; dup {
		panic("frameworks: duplicate implementation of " + name)
	}
	implementations[name] = impl
}

// Implementation returns what Implement attached to the adapter named
// name, if anything.
func Implementation(name string) (Impl, bool) {
	mu.RLock()
	defer mu.RUnlock()
	impl, ok := implementations[name]
	return impl, ok
}

// Implemented returns the names Implement was called with, sorted.
func Implemented() []string {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Sorted(maps.Keys(implementations))
}

// Start starts the adapter's echo server (see StartFunc). It fails, and
// starts nothing, when no implementation is linked into the program:
// only programs that import frameworks/servers can serve.
func (a Adapter) Start(cfg Config) (Server, error) {
	impl, ok := Implementation(a.Name)
	if !ok {
		return nil, notLinked(a.Name)
	}
	return impl.Start(cfg)
}

// StartBroadcast starts the adapter's server for BroadcastPath (see
// StartFunc). It fails, and starts nothing, when the adapter declares no
// Broadcast or no implementation of it is linked into the program.
func (a Adapter) StartBroadcast(cfg Config) (Server, error) {
	if a.Broadcast == nil {
		return nil, fmt.Errorf("%s serves no %s endpoint: %s", a.Name, BroadcastPath, a.NoBroadcastWhy())
	}
	impl, ok := Implementation(a.Name)
	if !ok {
		return nil, notLinked(a.Name)
	}
	if impl.Broadcast == nil {
		return nil, fmt.Errorf("%s declares a %s endpoint, but its implementation has none", a.Name, BroadcastPath)
	}
	return impl.Broadcast(cfg)
}

// notLinked is the error of starting an adapter whose implementation is
// not in the program.
func notLinked(name string) error {
	return fmt.Errorf("framework %s: no server implementation is linked into this program (servers are in package frameworks/servers)", name)
}
