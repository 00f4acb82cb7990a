// Package wstls is the TLS layer of wsplan's event-loop client (wss://
// targets): a client Session per connection that never touches the socket
// itself. The loop that owns the non-blocking socket reads ciphertext,
// hands it in, and writes what the session returns; no goroutine runs per
// connection, and nothing is allocated per message once a connection is
// established.
//
// # Place in the data flow
//
// A wss connection in internal/client goes: TCP connect (the loop's
// connect timing) → TLS handshake (Session.Handshake, called once with nil
// when the socket is writable, then with each read, until done; its
// duration is Session.HandshakeTime) → the WebSocket upgrade and frames,
// which the loop seals with Session.Seal before writing and gets back from
// Session.Feed + Session.Next (or ReadPlain) before its frame decoder. On
// a handshake timeout the loop calls Session.Abort; at shutdown it writes
// Session.Close's close_notify. NewRunCA makes the throw-away CA and
// server certificate of a run with tls: true, ClientConfig the client
// side of a target's tls: block (ca_file, server_name,
// insecure_skip_verify, session_resumption).
//
// # How it works
//
// The handshake is crypto/tls's own (certificate verification, SNI,
// session resumption, TLS 1.2 and 1.3), run as a coroutine (iter.Pull) on
// the caller's goroutine over an in-memory net.Conn: when crypto/tls needs
// input, the coroutine yields and Handshake returns what to write; the
// next Handshake call resumes it with the bytes read. The in-memory conn
// hands crypto/tls one record at a time, so it knows exactly which records
// crypto/tls consumed.
//
// After the handshake, application data goes through this package's own
// record layer (RFC 8446 §5, RFC 5246 §6.2 for AEAD suites, RFC 7905):
// AES-128/256-GCM and ChaCha20-Poly1305, keyed from the secrets crypto/tls
// reports to its KeyLogWriter (TLS 1.3 traffic secrets; the TLS 1.2 master
// secret, or the resumed session's) — the same keys kernel TLS would be
// given. Records are opened in place in the caller's read buffer and
// sealed into the caller's write buffer. TLS 1.3 session tickets that
// follow the handshake go to crypto/tls (which stores them in the
// ClientSessionCache) as long as it has seen every record; KeyUpdate is
// handled here; CBC suites (TLS 1.2 only) stay on crypto/tls's record
// layer (State.Fast is false; correct, but it allocates). Every record is
// authenticated, so a key or sequence mistake fails the connection with
// "tls: bad record MAC" rather than corrupting data.
//
// # Why this design (measured 2026-12-03, 2-core shared VM, Go 1.26)
//
// One goroutine locked to its thread drives 100 non-blocking sockets
// through edge-triggered epoll, one 1 KiB echo in flight per connection,
// against crypto/tls echo servers in the same process; client CPU is the
// loop thread's CPU clock (BenchmarkEcho, median of 3; allocations from
// BenchmarkAllocs, memory from BenchmarkIdleMemory with 2,000 connections):
//
//	candidate                        CPU/echo   ×plain  allocs/echo  heap/idle conn
//	plain TCP                         2.80 µs    1.00       0            ~0 B
//	wstls, TLS 1.3 (this package)     3.20 µs    1.14       0         2,500 B
//	wstls, TLS 1.2                    3.71 µs    1.33       0         2,435 B
//	crypto/tls over a mem conn, 1.3   4.37 µs    1.56       2 (48 B) 24,988 B
//	crypto/tls over a mem conn, 1.2   5.04 µs    1.80       2 (48 B) 24,243 B
//	lesismal/llib tls (nbio), 1.3     5.68 µs    2.03       2 (1,176 B) 7,194 B
//	lesismal/llib tls (nbio), 1.2     5.79 µs    2.07       2 (1,176 B) 7,163 B
//	kernel TLS (TCP_ULP "tls")        not measured: this kernel has no tls ULP
//
// The record layer alone (BenchmarkRecordLayer, seal + open of 1 KiB)
// costs 0.45-0.6 µs with AES-GCM in either version; the 1.2/1.3 gap above
// is loop timing noise. Handshakes (BenchmarkHandshake, client thread
// CPU, TCP connect included): TLS 1.3 0.50-0.55 ms (about 1,900 per
// core-second; Go's default hybrid X25519MLKEM768 key share costs
// ~0.17 ms of it: X25519 only is 0.33 ms, 3,000/s), TLS 1.3 resumed
// 0.31-0.38 ms, TLS 1.2 0.41-0.44 ms (2,300/s), TLS 1.2 resumed
// 0.17-0.19 ms (5,500/s).
//
// crypto/tls through an in-memory conn works (a temporary net.Error leaves
// it usable) but allocates per record (crypto/tls's atLeastReader escapes
// in readFromUntil) and keeps ~25 KB per connection (its buffers and the
// parsed peer certificates). llib is a 2021 fork of crypto/tls whose
// client handshake is blocking (nbio dials it in a goroutine), with its
// own Config type, no fixes since, and 1 KiB allocated per record. Kernel
// TLS needs the tls module: setsockopt(fd, SOL_TCP, TCP_ULP, "tls") fails
// here with ENOENT (errno 2) and /proc/sys/net/ipv4/tcp_available_ulp
// lists only mptcp. This package keeps crypto/tls for everything that is
// hard to get right (the handshake, verification, resumption) and does
// only the part that runs per message, at 1.14× plain TCP CPU in TLS 1.3,
// within the 1.4× target.
package wstls
