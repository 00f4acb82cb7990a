// Package prototest holds the protocol servers that internal/client's own
// tests and the phase kinds' tests (scenarios/script above all) both run
// against: a JSON-RPC 2.0 server (RPCServer), a graphql-transport-ws
// server (GQLServer), a server that refuses or fails connections on
// purpose (Refuser), a mosquitto broker of the test's own
// (StartMosquitto; LaunchMosquitto where no test is at hand, as in
// cmd/wsplan's fault matrix; WriteMosquittoConf where a plan starts the
// broker), and the check both make of a phase's connect times
// (CheckConnectLatency).
//
// Only _test.go files import it, and it imports nothing that imports
// internal/client — the protocols' leaves (internal/proto/<name>, for
// their constants), the test-only packages and internal/launch (the
// broker's process) — so internal/client's in-package tests can use it
// without an import cycle (internal/layering's TestServers rule).
// internal/clienttest, which imports the client, cannot serve them.
package prototest
