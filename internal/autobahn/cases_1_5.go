package autobahn

import (
	"fmt"
	"strings"
	"time"
)

// Sections 1-5 of Autobahn|Testsuite: framing, pings and pongs, reserved
// bits, reserved opcodes, fragmentation. Each case follows the matching
// autobahn/case/caseX_Y_Z.py: same frames, same chopping, same timers,
// same expected events and close behavior.

// normalClose: the client closes with 1000 once the expected events are
// in, and the handshake must be clean.
func normalClose() closeExpect {
	return closeExpect{closedByMe: true, codes: []int{closeNormal}, requireClean: true}
}

// serverFails: the server must fail the connection, with code (or a drop).
func serverFails(code int) closeExpect {
	return closeExpect{closedByMe: false, codes: []int{code}}
}

// registerSections1To5 registers sections 1–5 (framing, pings, reserved bits and opcodes, fragmentation).
func registerSections1To5() {
	registerFraming()
	registerPings()
	registerReservedBits()
	registerReservedOpcodes()
	registerFragmentation()
	registerNothingToContinue()
	registerFragmentsWithPause()
}

// hello is the small text message many cases send.
const hello = "Hello, world!"

// registerFraming registers 1.1.x / 1.2.x: text and binary messages of the
// edge sizes of the 7-bit, 16-bit and 64-bit length encodings, echoed.
func registerFraming() {
	sizes := []int{0, 125, 126, 127, 128, 65535, 65536, 65536}
	for i, n := range sizes {
		chop := 0
		kill := time.Second
		if n >= 65535 {
			kill = 10 * time.Second
		}
		if i == 7 {
			chop = 997
		}
		for sec, kind := range []string{"text", "binary"} {
			id := fmt.Sprintf("1.%d.%d", sec+1, i+1)
			op, payload, ev := opText, strings.Repeat("*", n), message
			if kind == "binary" {
				op, payload, ev = opBinary, strings.Repeat("\xfe", n), binMessage
			}
			desc := fmt.Sprintf("Send %s message with payload of length %d.", kind, n)
			if chop > 0 {
				desc = fmt.Sprintf("Send %s message with payload of length %d, in chops of %d octets.", kind, n, chop)
			}
			register(&Case{
				ID: id, Description: desc,
				Expectation: fmt.Sprintf("Receive echo'ed %s message (with payload as sent). Clean close with normal code.", kind),
				open: func(s *session) {
					s.expect(OK, ev(payload))
					s.expClose = normalClose()
					s.send(fr(op, payload).chopped(chop))
					s.killAfter(kill)
				},
			})
		}
	}
}

// registerPings registers 2.x: pings and pongs.
func registerPings() {
	pingCase := func(id, desc, payload string, chop int, wait time.Duration) {
		register(&Case{
			ID: id, Description: desc,
			Expectation: "Pong with payload echo'ed is sent in reply to Ping. Clean close with normal code.",
			open: func(s *session) {
				s.expect(OK, pong(payload))
				s.expClose = normalClose()
				s.send(fr(opPing, payload).chopped(chop))
				s.closeAfter(wait)
			},
		})
	}
	pingCase("2.1", "Send ping without payload.", "", 0, time.Second)
	pingCase("2.2", "Send ping with small text payload.", "Hello, world!", 0, time.Second)
	pingCase("2.3", "Send ping with small binary (non UTF-8) payload.", "\x00\xff\xfe\xfd\xfc\xfb\x00\xff", 0, time.Second)
	pingCase("2.4", "Send ping with binary payload of 125 octets.", strings.Repeat("\xfe", 125), 0, time.Second)
	register(&Case{
		ID: "2.5", Description: "Send ping with binary payload of 126 octets.",
		Expectation: "Connection is failed immediately (1002/Protocol Error), since control frames are only allowed to have payload up to and including 125 octets.",
		open: func(s *session) {
			s.expect(OK)
			s.expClose = serverFails(closeProtocolError)
			s.send(fr(opPing, strings.Repeat("\xfe", 126)))
			s.killAfter(time.Second)
		},
	})
	pingCase("2.6", "Send ping with binary payload of 125 octets, sent in octet-wise chops.", strings.Repeat("\xfe", 125), 1, 2*time.Second)
	for _, c := range []struct{ id, desc, payload string }{
		{"2.7", "Send unsolicited pong without payload. Verify nothing is received. Clean close with normal code.", ""},
		{"2.8", "Send unsolicited pong with payload. Verify nothing is received. Clean close with normal code.", "unsolicited pong payload"},
	} {
		register(&Case{
			ID: c.id, Description: c.desc, Expectation: "Nothing.",
			open: func(s *session) {
				s.expect(OK)
				s.expClose = normalClose()
				s.send(fr(opPong, c.payload))
				s.sendClose(closeNormal, "")
				s.closeAfter(time.Second)
			},
		})
	}
	register(&Case{
		ID: "2.9", Description: "Send unsolicited pong with payload. Send ping with payload. Verify pong for ping is received.",
		Expectation: "Nothing in reply to own Pong, but Pong with payload echo'ed in reply to Ping. Clean close with normal code.",
		open: func(s *session) {
			s.expect(OK, pong("ping payload"))
			s.expClose = normalClose()
			s.send(fr(opPong, "unsolicited pong payload"), fr(opPing, "ping payload"))
			s.closeAfter(time.Second)
		},
	})
	for id, chop := range map[string]int{"2.10": 0, "2.11": 1} {
		desc := "Send 10 Pings with payload."
		if chop > 0 {
			desc = "Send 10 Pings with payload. Send out octets in octet-wise chops."
		}
		register(&Case{
			ID: id, Description: desc,
			Expectation: "Pongs for our Pings with all the payloads. Note: This is not required by the Spec .. but we check for this behaviour anyway. Clean close with normal code.",
			open: func(s *session) {
				var evs []event
				for i := range 10 {
					p := fmt.Sprintf("payload-%d", i)
					evs = append(evs, pong(p))
					s.send(fr(opPing, p).chopped(chop))
				}
				s.expect(OK, evs...)
				s.expClose = normalClose()
				s.closeAfter(3 * time.Second)
			},
		})
	}
}

// registerReservedBits registers 3.x: reserved bits set without an
// extension.
func registerReservedBits() {
	const rsvExpect = "Echo for first message is received, but then connection is failed immediately, since RSV must be 0, when no extension defining RSV meaning has been negotiated. The Pong is not received."
	register(&Case{
		ID: "3.1", Description: "Send small text message with RSV = 1.",
		Expectation: "The connection is failed immediately (1002/protocol error), since RSV must be 0, when no extension defining RSV meaning has been negotiated.",
		open: func(s *session) {
			s.expect(OK)
			s.expClose = serverFails(closeProtocolError)
			s.send(fr(opText, hello).withRSV(1))
			s.killAfter(time.Second)
		},
	})
	for _, c := range []struct {
		id, desc string
		rsv      byte
		shape    func(frame) frame
	}{
		{"3.2", "Send small text message, then send again with RSV = 2, then send Ping.", 2, func(f frame) frame { return f }},
		{"3.3", "Send small text message, then send again with RSV = 3, then send Ping. Octets are sent in frame-wise chops.", 3, frame.synced},
		{"3.4", "Send small text message, then send again with RSV = 4, then send Ping. Octets are sent in octet-wise chops.", 4, func(f frame) frame { return f.chopped(1) }},
	} {
		register(&Case{
			ID: c.id, Description: c.desc, Expectation: rsvExpect,
			open: func(s *session) {
				s.expect(OK, message(hello))
				s.expect(NonStrict)
				s.expClose = serverFails(closeProtocolError)
				s.send(c.shape(fr(opText, hello)), c.shape(fr(opText, hello).withRSV(c.rsv)), c.shape(fr(opPing, "")))
				s.killAfter(time.Second)
			},
		})
	}
	for _, c := range []struct {
		id, desc string
		f        frame
	}{
		{"3.5", "Send small binary message with RSV = 5.", fr(opBinary, "\x00\xff\xfe\xfd\xfc\xfb\x00\xff").withRSV(5)},
		// Autobahn's 3.6 says "Ping" but sends a binary frame; we send what it sends.
		{"3.6", "Send Ping with RSV = 6 (as in Autobahn: a binary frame).", fr(opBinary, hello).withRSV(6)},
		{"3.7", "Send Close with RSV = 7.", fr(opClose, "").withRSV(7)},
	} {
		register(&Case{
			ID: c.id, Description: c.desc, Expectation: "The connection is failed immediately, since RSV must be 0.",
			open: func(s *session) {
				s.expect(OK)
				s.expClose = serverFails(closeProtocolError)
				s.send(c.f)
				s.killAfter(time.Second)
			},
		})
	}
}

// registerReservedOpcodes registers 4.x: reserved opcodes. 4.1.x
// non-control (3-7), 4.2.x control (11-15).
func registerReservedOpcodes() {
	for sec, ops := range [][]byte{{3, 4, 5, 6, 7}, {11, 12, 13, 14, 15}} {
		kind := "non-control"
		if sec == 1 {
			kind = "control"
		}
		for i, op := range ops {
			id := fmt.Sprintf("4.%d.%d", sec+1, i+1)
			switch i {
			case 0, 1:
				payload, desc := "", fmt.Sprintf("Send frame with reserved %s Opcode = %d.", kind, op)
				if i == 1 {
					payload, desc = "reserved opcode payload", fmt.Sprintf("Send frame with reserved %s Opcode = %d and non-empty payload.", kind, op)
				}
				register(&Case{
					ID: id, Description: desc, Expectation: "The connection is failed immediately.",
					open: func(s *session) {
						s.expect(OK)
						s.expClose = serverFails(closeProtocolError)
						s.send(fr(op, payload))
						s.killAfter(time.Second)
					},
				})
			default:
				payload, desc := "", fmt.Sprintf("Send small text message, then send frame with reserved %s Opcode = %d, then send Ping.", kind, op)
				if i > 2 {
					payload, desc = hello, fmt.Sprintf("Send small text message, then send frame with reserved %s Opcode = %d and non-empty payload, then send Ping.", kind, op)
				}
				chop := 0
				if i == 4 {
					chop = 1
					desc += " Octets are sent in octet-wise chops."
				}
				register(&Case{
					ID: id, Description: desc,
					Expectation: "Echo for first message is received, but then connection is failed immediately, since reserved opcode frame is used. A Pong is not received.",
					open: func(s *session) {
						s.expect(OK, message(hello))
						s.expect(NonStrict)
						s.expClose = serverFails(closeProtocolError)
						s.send(fr(opText, hello).chopped(chop), fr(op, payload).chopped(chop), fr(opPing, "").chopped(chop))
						s.killAfter(time.Second)
					},
				})
			}
		}
	}
}

// failsAtOnce registers a case whose frames the server must answer by
// failing the connection (1002) at once.
func failsAtOnce(id, desc, exp string, fs ...frame) {
	register(&Case{
		ID: id, Description: desc, Expectation: exp,
		open: func(s *session) {
			s.expect(OK)
			s.expClose = serverFails(closeProtocolError)
			s.send(fs...)
			s.killAfter(time.Second)
		},
	})
}

// registerFragmentation registers 5.1-5.8: fragmented control frames, and
// text messages in two fragments (with a ping between them), in one
// chop, per-frame chops and octet-wise chops.
func registerFragmentation() {
	failsAtOnce("5.1", "Send Ping fragmented into 2 fragments.", "Connection is failed immediately, since control message MUST NOT be fragmented.",
		fr(opPing, "fragment1").noFin(), fr(opCont, "fragment2"))
	failsAtOnce("5.2", "Send Pong fragmented into 2 fragments.", "Connection is failed immediately, since control message MUST NOT be fragmented.",
		fr(opPong, "fragment1").noFin(), fr(opCont, "fragment2"))

	frags := []string{"fragment1", "fragment2"}
	for _, c := range []struct {
		id, desc string
		shape    func(frame) frame
	}{
		{"5.3", "Send text Message fragmented into 2 fragments.", func(f frame) frame { return f }},
		{"5.4", "Send text Message fragmented into 2 fragments, octets are sent in frame-wise chops.", frame.synced},
		{"5.5", "Send text Message fragmented into 2 fragments, octets are sent in octet-wise chops.", func(f frame) frame { return f.chopped(1) }},
	} {
		register(&Case{
			ID: c.id, Description: c.desc, Expectation: "Message is processed and echo'ed back to us.",
			open: func(s *session) {
				s.expect(OK, message(frags[0]+frags[1]))
				s.expClose = normalClose()
				s.send(c.shape(fr(opText, frags[0]).noFin()), c.shape(fr(opCont, frags[1])))
				s.closeAfter(time.Second)
			},
		})
	}
	for _, c := range []struct {
		id, desc string
		shape    func(frame) frame
	}{
		{"5.6", "Send text Message fragmented into 2 fragments, one ping with payload in-between.", func(f frame) frame { return f }},
		{"5.7", "Send text Message fragmented into 2 fragments, one ping with payload in-between. Octets are sent in frame-wise chops.", frame.synced},
		{"5.8", "Send text Message fragmented into 2 fragments, one ping with payload in-between. Octets are sent in octet-wise chops.", func(f frame) frame { return f.chopped(1) }},
	} {
		register(&Case{
			ID: c.id, Description: c.desc, Expectation: "A pong is received, then the message is echo'ed back to us.",
			open: func(s *session) {
				s.expect(OK, pong("ping payload"), message(frags[0]+frags[1]))
				s.expClose = normalClose()
				s.send(c.shape(fr(opText, frags[0]).noFin()), c.shape(fr(opPing, "ping payload")), c.shape(fr(opCont, frags[1])))
				s.closeAfter(time.Second)
			},
		})
	}
}

// noContinue is the expectation of the cases that continue nothing.
const noContinue = "The connection is failed immediately, since there is no message to continue."

// registerNothingToContinue registers 5.9-5.18: continuation frames where
// there is nothing to continue, and a second fragment with opcode text.
func registerNothingToContinue() {
	const nc = "non-continuation payload"
	for _, c := range []struct {
		id, desc string
		fin      bool
		shape    func(frame) frame
	}{
		{"5.9", "Send unfragmented Text Message after Continuation Frame with FIN = true, where there is nothing to continue, sent in one chop.", true, func(f frame) frame { return f }},
		{"5.10", "Send unfragmented Text Message after Continuation Frame with FIN = true, where there is nothing to continue, sent in per-frame chops.", true, frame.synced},
		{"5.11", "Send unfragmented Text Message after Continuation Frame with FIN = true, where there is nothing to continue, sent in octet-wise chops.", true, func(f frame) frame { return f.chopped(1) }},
		{"5.12", "Send unfragmented Text Message after Continuation Frame with FIN = false, where there is nothing to continue, sent in one chop.", false, func(f frame) frame { return f }},
		{"5.13", "Send unfragmented Text Message after Continuation Frame with FIN = false, where there is nothing to continue, sent in per-frame chops.", false, frame.synced},
		{"5.14", "Send unfragmented Text Message after Continuation Frame with FIN = false, where there is nothing to continue, sent in octet-wise chops.", false, func(f frame) frame { return f.chopped(1) }},
	} {
		first := fr(opCont, nc)
		first.fin = c.fin
		failsAtOnce(c.id, c.desc, noContinue, c.shape(first), c.shape(fr(opText, hello)))
	}
	register(&Case{
		ID: "5.15", Description: "Send text Message fragmented into 2 fragments, then Continuation Frame with FIN = false where there is nothing to continue, then unfragmented Text Message, all sent in one chop.",
		Expectation: noContinue,
		open: func(s *session) {
			s.expect(OK, message("fragment1fragment2"))
			s.expect(NonStrict)
			s.expClose = serverFails(closeProtocolError)
			s.send(fr(opText, "fragment1").noFin(), fr(opCont, "fragment2"), fr(opCont, "fragment3").noFin(), fr(opText, "fragment4"))
			s.killAfter(time.Second)
		},
	})
	for _, c := range []struct {
		id  string
		fin bool
	}{{"5.16", false}, {"5.17", true}} {
		first := fr(opCont, "fragment1")
		first.fin = c.fin
		seq := []frame{first, fr(opText, "fragment2").noFin(), fr(opCont, "fragment3")}
		failsAtOnce(c.id, fmt.Sprintf("Repeated 2x: Continuation Frame with FIN = %t (where there is nothing to continue), then text Message fragmented into 2 fragments.", c.fin),
			noContinue, append(seq, seq...)...)
	}
	failsAtOnce("5.18", "Send text Message fragmented into 2 fragments, with both frame opcodes set to text, sent in one chop.",
		"The connection is failed immediately, since all data frames after the initial data frame must have opcode 0.",
		fr(opText, "fragment1").noFin(), fr(opText, "fragment2"))
}

// registerFragmentsWithPause registers 5.19 and 5.20: a text message in
// five fragments with pings between them and a pause of a second, which
// the server must answer as it goes.
func registerFragmentsWithPause() {
	for _, c := range []struct {
		id   string
		sync bool
	}{{"5.19", false}, {"5.20", true}} {
		desc := "A fragmented text message is sent in multiple frames. After sending the first 2 frames of the text message, a Ping is sent. Then we wait 1s, then we send 2 more text fragments, another Ping and then the final text fragment. Everything is legal."
		exp := "The peer immediately answers the first Ping before it has received the last text message fragment. The peer pong's back the Ping's payload exactly, and echo's the payload of the fragmented message back to us."
		if c.sync {
			desc = "Same as Case 5.19, but send all frames with SYNC = True. Note, this does not change the octets sent in any way, only how the stream is chopped up on the wire."
			exp = "Same as Case 5.19. Implementations must be agnostic to how octet stream is chopped up on wire (must be TCP clean)."
		}
		register(&Case{
			ID: c.id, Description: desc, Expectation: exp,
			open: func(s *session) {
				f := []string{"fragment1", "fragment2", "fragment3", "fragment4", "fragment5"}
				pings := []string{"pongme 1!", "pongme 2!"}
				shape := func(x frame) frame { x.sync = c.sync; return x }
				s.expect(OK, pong(pings[0]), pong(pings[1]), message(strings.Join(f, "")))
				s.expClose = normalClose()
				s.send(shape(fr(opText, f[0]).noFin()), shape(fr(opCont, f[1]).noFin()), shape(fr(opPing, pings[0])))
				s.continueLater(time.Second, func() {
					s.send(shape(fr(opCont, f[2]).noFin()), shape(fr(opCont, f[3]).noFin()), shape(fr(opPing, pings[1])), shape(fr(opCont, f[4])))
					s.closeAfter(time.Second)
				})
			},
		})
	}
}
