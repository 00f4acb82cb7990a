// Package servers implements the echo servers that package frameworks
// declares: one file per library holding its Start and broadcast Start,
// attached to the library's declaration from init with one call,
//
//	frameworks.Implement(frameworks.Hertz, frameworks.Impl{Start: startHertz, Broadcast: startHertzBroadcast})
//
// together with what the servers share (listeners, connection tracking,
// broadcast rooms), the library goroutines that outlive Close by design,
// and Serve, the `wsplan serve` process. It imports every WebSocket and
// HTTP library the presets measure, so only programs that serve import
// it (cmd/wsplan); plan loading and validation read package frameworks
// alone. Starting an adapter in a program without this package fails
// with an error (frameworks.Adapter.Start), not a panic.
package servers
