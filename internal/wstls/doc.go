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
// Session.Close's close_notify; a connection that may stay idle drops
// its record ciphers with Session.Idle. NewRunCA (NewRunCAKey: ECDSA
// P-256 or RSA-2048) makes the throw-away CA and server certificate of a
// run with tls: true, ClientConfig the client side of a target's tls:
// block (ClientOptions: ca_file, server_name, insecure_skip_verify,
// session_resumption, max_version).
//
// # How it works
//
// The handshake is crypto/tls's own (SNI, key exchange, the server's
// handshake signature, session resumption, TLS 1.2 and 1.3), run as a
// coroutine (iter.Pull) on
// the caller's goroutine over an in-memory net.Conn: when crypto/tls needs
// input, the coroutine yields and Handshake returns what to write; the
// next Handshake call resumes it with the bytes read. A loop's Pool
// hands a finished handshake's coroutine, its stack grown to crypto/tls's
// depth, to the next handshake (Pool.NewClient). The in-memory conn
// hands crypto/tls one record at a time, so it knows exactly which records
// crypto/tls consumed. The certificate chain is verified by the config's
// Verifier (verify.go, installed by ClientConfig in place of crypto/tls's
// own verification, with the same x509 call and errors): once per
// distinct chain, its verdict reused for the exact same bytes and name
// while the chain is valid. Once established on the fast path a session
// keeps nothing of crypto/tls or of the handshake (with a session cache,
// once the TLS 1.3 tickets are in): its keys, sequence numbers and a few
// buffers; the AEADs are made from the keys when a record needs them.
//
// After the handshake, application data goes through this package's own
// record layer (RFC 8446 §5, RFC 5246 §6.2 for AEAD suites, RFC 7905):
// AES-128/256-GCM and ChaCha20-Poly1305, keyed from the secrets crypto/tls
// reports to its KeyLogWriter (TLS 1.3 traffic secrets; the TLS 1.2 master
// secret, or the resumed session's) — the same keys kernel TLS would be
// given. Records are opened in place in the caller's read buffer and
// sealed into the caller's write buffer. TLS 1.3 session tickets that
// follow the handshake go to crypto/tls (which stores them in the
// ClientSessionCache) as long as it has seen every record — at handshake
// end already when they came with the server's last flight, as crypto/tls
// servers send them, so that the next connection resumes; KeyUpdate is
// handled here; CBC suites (TLS 1.2 only) stay on crypto/tls's record
// layer (State.Fast is false; correct, but it allocates). Every record is
// authenticated, so a key or sequence mistake fails the connection with
// "tls: bad record MAC" rather than corrupting data.
//
// # Why this design (measured 2026-12-03, 2-core shared VM, Go 1.26)
//
// Benchmarks in this package (bench_test.go; full figures and commands in
// the h6-tls figures note). BenchmarkEcho: one goroutine locked to its
// thread drives non-blocking sockets through edge-triggered epoll, one
// 1 KiB echo in flight per connection, against crypto/tls echo servers in
// the same process; client CPU is the loop thread's CPU clock, and varies
// with how many echoes each epoll_wait returns (reported as echoes/wait).
// BenchmarkProtocol: the same client work per echo without the socket
// (seal, hand in recorded ciphertext, read), which is what TLS adds.
//
//	client CPU per 1 KiB echo     2,000 conns (×plain)  no socket   allocs/echo    heap/idle conn
//	plain TCP                      5.96 µs (1.00)        0.20 µs     0              24 B
//	wstls TLS 1.3 (this package)   7.52 µs (1.26)        0.73 µs     0           2,116 B
//	wstls TLS 1.2                  7.72 µs (1.30)        0.62 µs     0           2,051 B
//	crypto/tls on a mem conn, 1.3  9.77 µs (1.64)        0.93 µs     2 (48 B)   27,036 B
//	lesismal/llib tls, 1.3         9.63 µs (1.62)        1.87 µs     2 (1176 B)  7,179 B
//	kernel TLS (TCP_ULP "tls")     not available on this kernel
//
// With 100 connections the loop's CPU per echo is 2.8-2.9 µs plain and
// 3.2-4.4 µs wstls TLS 1.3, depending on batching. The client's full
// per-echo cost in a real run is ~15.7 µs (docs/results.md, Client cost), so the
// 0.4-1.6 µs that this record layer adds is 1.03-1.10× there, within the
// issue's 1.4×. Handshakes (BenchmarkHandshake, client thread CPU, TCP
// connect included): TLS 1.3 0.55 ms (1,800 per core-second; Go's default
// hybrid X25519MLKEM768 key share costs ~0.2 ms of it, X25519 alone
// 0.33 ms), TLS 1.3 resumed 0.35 ms, TLS 1.2 0.43 ms (2,300/s), TLS 1.2
// resumed 0.18 ms (5,600/s).
//
// crypto/tls through an in-memory conn works (a temporary net.Error leaves
// it usable) but allocates per record (its atLeastReader escapes in
// readFromUntil) and keeps ~25 KB per connection (buffers, parsed peer
// certificates). llib is a 2021 fork of crypto/tls whose client handshake
// is blocking (nbio dials it in a goroutine), with its own Config type,
// no upstream fixes since, and 1 KiB allocated per record. Kernel TLS
// needs the tls module: setsockopt(fd, SOL_TCP, TCP_ULP, "tls") fails here
// with ENOENT (errno 2); /proc/sys/net/ipv4/tcp_available_ulp lists only
// mptcp. This package keeps crypto/tls for what is hard to get right (the
// handshake, verification, resumption) and does only the per-message part.
package wstls
