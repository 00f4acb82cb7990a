// Package sysctl checks and tunes the host a run measures on: kernel
// parameters under /proc/sys, idle polling under /sys (IdlePoll), the
// RLIMIT_NOFILE of this process, and CPU affinity. It also holds the preflight, the capacity check that decides
// whether a plan can run here at all.
//
// Its place in a run (see DESIGN.md §1 and §7):
//
//	load      → plan.Plan (host.sysctl, host.nofile, host.*_cpus)
//	preflight → Preflight(Needs, ReadHostFacts(...)): fatal findings stop the
//	            run before anything starts; Check reports sysctls that differ
//	tune      → with --tune only: Apply writes the differing sysctls and
//	            returns Saved (written to a file at once, so that
//	            `wsplan tune --restore FILE` can undo a crashed run);
//	            RaiseNoFile lifts the soft fd limit for this process and every
//	            child it starts; PinProcess pins the client
//	run       → servers and client start (children inherit limits and affinity)
//	restore   → Restore(fs, saved) on every exit path
//
// Ranges is the kernel's list syntax ("8080,9000-9999") of CPU lists and
// of net.ipv4.ip_local_reserved_ports, which the engine merges the servers'
// ports into under --tune.
//
// Everything here returns values and errors; nothing prints. Preflight is a
// pure function of its inputs, and FS reads and writes under a configurable
// root, so tests work on a temporary directory instead of the host.
package sysctl
