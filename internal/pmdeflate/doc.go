// Package pmdeflate is the client side of permessage-deflate (RFC 7692)
// for wsplan's event-loop client: it builds the extension offer, checks
// the server's answer, compresses what a connection sends and inflates
// what it receives, with no allocation per message and little state per
// connection. It imports no other package of this module; internal/client
// calls it (issue 15, item 4).
//
// # Data flow
//
// Handshake: the request carries Sec-WebSocket-Extensions: Offer(p); the
// response's value goes to Accept(header, p), which returns the negotiated
// Params or an error that fails the connection. An empty answer is
// ErrDeclined ("compression asked, server declined"): a plan that asks
// for compression must never be measured uncompressed. Params.String is
// the negotiated form that results record.
//
// Sending: a message's payload is Compressor.Compress(dst, msg), sent in a
// frame with RSV1 set. A client that sends one fixed message over and over
// (the echo phase) calls Precompute once and keeps sending that
// pre-encoded frame, masked per send: a message compressed on its own is
// valid under any negotiated context takeover.
//
// Receiving: a message whose first frame has RSV1 set is inflated with
// Decompressor.Feed(dst, chunk, end), given its payload bytes in the
// pieces the frame decoder hands out (or Decompress, given them joined),
// and compared byte for byte after inflation; a message without RSV1 is
// not compressed (servers skip small messages). With server context
// takeover every compressed message must be inflated, verified or not:
// the history has to follow the server's.
//
// # Shared and per-connection state
//
// A flate writer costs about 0.8 MiB and a flate reader about 38 KiB, far
// too much per connection at 10k connections. So each event loop owns one
// Deflater and one Inflater, shared by all its connections (the loop runs
// one connection at a time, so no locking), and every message starts the
// shared writer or reader afresh: from nothing without context takeover,
// or from the connection's own history with it (klauspost's
// Writer.ResetDict, the reader's Reset(r, dict)). Per connection only
// that history is kept:
//
//	                          Compressor        Decompressor
//	struct                    48 B              56 B
//	no context takeover       0 B history       0 B history
//	context takeover          4 KiB history     2^server_max_window_bits B (32 KiB by default)
//	(MaxCompressHistory, or the client window if smaller)
//
//	per loop: Deflater 812 KB (window 15; another 1.08 MB for each client
//	window below 15 in use, made on first use), Inflater 38 KB.
//
// At 10k connections: no context takeover either way, about 1 MB in all;
// both takeovers at the default windows, about 370 MB (the 32 KiB inflate
// history dominates: offer server_max_window_bits=10 to get 2 KiB per
// connection, if the server honours it; gorilla, nbio and nhooyr answer
// without context takeover, and gws answers 12-bit windows).
//
// The compressor's history is bounded by MaxCompressHistory (4 KiB)
// because priming the shared writer costs about as much as compressing
// the history again; referring back less far than the window allows is
// always valid.
//
// # Library
//
// github.com/klauspost/compress/flate, level 1 (BestSpeed, as gorilla,
// gws and nbio compress), rather than compress/flate: it is cheaper per
// 1 KiB message, has Writer.ResetDict (a shared writer primed with one
// connection's history; compress/flate can only reset to the dictionary
// it was made with) and NewWriterWindow (match distances within
// client_max_window_bits; compress/flate always uses 32 KiB). CPU per
// 1 KiB chat message, one message on its own, process CPU time, 2 shared
// cores under load:
//
//	                compress/flate        klauspost
//	compress        10.1-11.7 µs, 366 B   7.3-8.1 µs, 343 B
//	inflate         4.6-4.9 µs            4.2-4.3 µs
//
// # Cost per message
//
// BenchmarkMessage, one echo's deflate work on the client (compress a
// different 1 KiB chat message, inflate the server's compressed echo),
// CPU ns per message, 0 allocations (TestAllocs proves it with
// testing.AllocsPerRun):
//
//	no context takeover          22-26 µs   wire/payload 0.34
//	context takeover (15 bits)   21-22 µs   wire/payload 0.14
//	context takeover (10 bits)   25-28 µs   wire/payload 0.16
//	pre-computed frame, inflate only    4.3-4.8 µs
//
// Compressing a different message each time costs about twice compressing
// the same one again (cache misses in the writer's 128 KiB hash table),
// which is why the echo phase's pre-computed frame matters: it leaves
// only the inflate per echo.
//
// # Payload kinds
//
// Ratios of wire bytes to payload bytes at 1 KiB, each message compressed
// on its own (TestRatios; payload kinds are internal/payload's):
//
//	random, binary messages   1.006   incompressible by design
//	random, text messages     1.006   klauspost stores a block in which level 1
//	                                  finds no match (compress/flate's
//	                                  Huffman-only block would be 0.61)
//	text                      0.335   JSON chat events (compress/flate: 0.357)
//	file (deflate.go)         0.593   depends on the file
//
// Against real servers (TestInterop: 40 different, then 40 identical
// 1 KiB text messages), bytes on the wire / payload bytes, sent and
// received: 0.34 and 0.36 with gorilla, nhooyr and nbio without context
// takeover (gws 0.34 and 0.34); with context takeover gws 0.27 and 0.11,
// nhooyr 0.28 and 0.19. An echo of one fixed message with server context
// takeover compresses to a few bytes (the server refers back to its last
// echo), so such a wire ratio says little about real traffic.
package pmdeflate
