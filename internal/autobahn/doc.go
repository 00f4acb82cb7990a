// Package autobahn is a Go-native port of the fuzzingclient cases of
// Autobahn|Testsuite (github.com/crossbario/autobahn-testsuite): it checks
// that a WebSocket echo server follows RFC 6455, case by case, and reports
// each case with Autobahn's verdicts. It is the engine of the `conformance`
// phase kind; it knows nothing of plans, engines or shards, and imports
// only the standard library.
//
// # Place in the data flow
//
// A phase (scenarios/conformance.go, on the phase contract) turns its YAML
// into a Target and Options, calls Run, and turns the Report into metrics
// (cases, ok, non_strict, informational, unimplemented, failed, failing)
// and a table of the cases that did not pass. Run opens one TCP
// connection per case, each with its own timeout; this is a protocol
// check, not a load test, so it uses plain blocking net.Conn I/O and a few
// goroutines per case.
//
// # Cases and ids
//
// Case ids are Autobahn's ("1.1.1", "2.10", "6.4.1", "7.9.3") and each case
// does what autobahn/case/caseX_Y_Z.py does: the same frames (masked, with
// any RSV bits, opcode, fragmentation), the same chopping of the byte
// stream (octet-wise chops, frame-wise "sync" writes), the same timers
// (killAfter, closeAfter, continueLater, and the client's 1 s close
// handshake and server-drop timeouts) and the same expected events and
// close behavior. Implemented (517 cases):
//
//	1.1.1-1.2.8   text and binary messages of 0, 125, 126, 127, 128, 65535
//	              and 65536 bytes, the last also in 997-byte chops
//	2.1-2.11      pings with 0-125 byte payloads, a 126-byte ping (must fail),
//	              unsolicited pongs, 10 pings in a row, octet-wise chops
//	3.1-3.7       RSV bits 1-7 set without an extension (must fail)
//	4.1.1-4.2.5   reserved opcodes 3-7 and 11-15 (must fail)
//	5.1-5.20      fragmentation: fragmented control frames, continuation
//	              without a start, control frames between fragments,
//	              pauses between fragments
//	6.1.1-6.23.7  UTF-8: empty and fragmented text, valid text split inside
//	              code points, invalid text (must close 1007), 6.4.x fail
//	              fast, and 6.5-6.23 generated from Markus Kuhn's UTF-8
//	              decoder stress test exactly as case6_x_x.py generates them
//	              (145 cases, as in Autobahn)
//	7.1.1-7.13.2  closing handshake: data after close, close after close,
//	              close payload sizes 0-126, invalid UTF-8 reason, valid
//	              (7.7.x) and invalid (7.9.x) close codes, 5000 and 65535
//	              (7.13.x, informational)
//	9.1.1-9.8.6   limits: text and binary messages of 64 KiB to 16 MiB
//	              (9.1, 9.2), 4 MiB in fragments of 64 B-4 MiB (9.3, 9.4),
//	              1 MiB written in 64 B-2 KiB chops (9.5, 9.6), 1000
//	              messages of 0 B-4 KiB one after the other (9.7, 9.8)
//	10.1.1        a 64 KiB text message in 1300-byte fragments
//	12.1.1-12.5.18  permessage-deflate, default offer: 1000 compressed
//	              messages of 16 B to 128 KiB each, whole or auto-fragmented
//	              into 256 B-32 KiB frames, on five data sets
//	13.1.1-13.7.18  the same on the JSON data set with seven offers
//	              (server_no_context_takeover, server_max_window_bits 9/15,
//	              and a list of three offers)
//
// Case.Big marks the heavy cases: 9.1.3-9.1.6, 9.2.3-9.2.6 and 9.3-9.6
// (messages of 1-16 MiB, about a second each on loopback) and 12.x/13.x
// from the 4 KiB size up (12.x.5-18, 13.x.5-18: 1000 compressed messages
// of 4-128 KiB each, seconds per case).
//
// Deflate cases offer permessage-deflate as Autobahn's client does
// (client_no_context_takeover and client_max_window_bits always, plus the
// case's server parameters); a server that does not accept gets
// UNIMPLEMENTED. Every other case offers no extension, and a server that
// answers with one fails the opening handshake. The client compresses
// with context takeover unless the server asks client_no_context_takeover,
// Huffman-only when the server limits client_max_window_bits (Go's flate
// always uses a 32 KiB window), and inflates with the server's window
// carried over unless server_no_context_takeover. Autobahn's deflate data
// sets are files shipped with the testsuite (Faust, the Lena bitmap, a
// PDF, a JSON and an HTML file); they are not copied here but replaced by
// deterministic generated data of the same nature, so verdicts are
// comparable and compression ratios are not.
//
// Every fuzzingclient case of Autobahn is ported; 10.1.1's extra check of
// the client's own frame counts always holds here. Where Autobahn's case
// text and code disagree
// (3.6 says "ping" but sends a binary frame) the code is followed. 9.1-9.6
// also check the echoed bytes, not only the length (Autobahn's FIXME).
// Autobahn reports the time of 9.x, 12.x and 13.x; here every case has
// its wall time in Result.Duration.
//
// # Verdicts
//
// Autobahn records two results per case; Result keeps both. Behavior is
// whether the events the client saw (messages, pongs, the case's own
// "timeout" marks) equal one of the case's expected sequences, each tied
// to a verdict: OK, NON-STRICT (e.g. 6.4.x when the server rejects bad
// UTF-8 only at the end of the message), INFORMATIONAL (7.1.6, 7.13.x:
// the RFC leaves it open), UNIMPLEMENTED (12.x/13.x when the server does
// not negotiate permessage-deflate),
// or FAILED. CloseBehavior judges the closing handshake, in this order:
// FAILED (the wrong side started it), UNCLEAN (a clean close was required
// and did not happen), WRONG CODE (the server's close code is not one the
// case accepts; none is always accepted), FAILED BY CLIENT (the client had
// to drop TCP), OK. 6.x cases fail outright when the client had to close
// (the server never noticed the bad UTF-8); 7.x cases fail outright on a
// WRONG CODE, as in Autobahn.
//
// Verdict folds the two: INFORMATIONAL, UNIMPLEMENTED and FAILED behaviors
// stand; an OK or NON-STRICT behavior becomes FAILED when CloseBehavior is
// FAILED or UNCLEAN, and at best NON-STRICT when it is WRONG CODE or FAILED
// BY CLIENT. Observed says what happened for every verdict but OK (events
// got and expected, who closed, the server's close code, who dropped TCP,
// any bad frame the server sent).
//
// Behavior Strict (the default) counts NON-STRICT as failing; Lenient
// counts it as passing. OK, INFORMATIONAL and UNIMPLEMENTED always pass,
// FAILED never does. Report.Failing counts the cases that do not pass;
// the counts per verdict do not depend on Behavior.
//
// # The client
//
// The client side mirrors Autobahn's (failByDrop off): it answers pings,
// replies to the server's close with 1000, fails the connection with 1002
// (1007 for invalid UTF-8) when the server sends a bad frame (RSV bits,
// masked frame, reserved opcode, fragmented or oversized control frame,
// bad continuation, non-minimal length, invalid close code or reason,
// invalid UTF-8 text, checked fail-fast), and waits 1 s for the server to
// answer its close and 1 s for the server to drop TCP. A server's own
// pings are answered but not recorded, as in Autobahn.
package autobahn
