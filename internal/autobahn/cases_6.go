package autobahn

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// Section 6 of Autobahn|Testsuite: UTF-8 handling of text messages.
// 6.1-6.4 are hand-written cases; 6.5-6.23 are generated from Markus Kuhn's
// UTF-8 decoder stress test exactly as autobahn/case/case6_x_x.py does.

// kosme is "κόσμε", Autobahn's favourite valid multi-byte sample.
const kosme = "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5"

// utf8Group is one 6.N section: its title and its payloads in order.
type utf8Group struct {
	title    string
	payloads []string
}

// utf8Groups returns Autobahn's createUtf8TestSequences: groups 6.5, 6.6, …
// Validity of each payload is decided with utf8.Valid, which implements
// the same RFC 3629 rules as Autobahn's Utf8Validator (no overlongs, no
// surrogates, nothing above U+10FFFF).
func utf8Groups() []utf8Group {
	var gs []utf8Group
	add := func(title string, ps ...string) { gs = append(gs, utf8Group{title, ps}) }

	add("Some valid UTF-8 sequences",
		"hello\x24world", "hello\xC2\xA2world", "hello\xE2\x82\xACworld", "hello\xF0\xA4\xAD\xA2world", kosme)
	var prefixes []string
	for i := 1; i <= len(kosme); i++ {
		prefixes = append(prefixes, kosme[:i])
	}
	add("All prefixes of a valid UTF-8 string that contains multi-byte code points", prefixes...)
	add("First possible sequence of a certain length", "\x00", "\xc2\x80", "\xe0\xa0\x80", "\xf0\x90\x80\x80")
	add("First possible sequence length 5/6 (invalid codepoints)", "\xf8\x88\x80\x80\x80", "\xfc\x84\x80\x80\x80\x80")
	add("Last possible sequence of a certain length", "\x7f", "\xdf\xbf", "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf")
	add("Last possible sequence length 4/5/6 (invalid codepoints)", "\xf7\xbf\xbf\xbf", "\xfb\xbf\xbf\xbf\xbf", "\xfd\xbf\xbf\xbf\xbf\xbf")
	add("Other boundary conditions", "\xed\x9f\xbf", "\xee\x80\x80", "\xef\xbf\xbd", "\xf4\x8f\xbf\xbf", "\xf4\x90\x80\x80")
	var cont []byte
	for c := 0x80; c < 0xbf; c++ {
		cont = append(cont, byte(c))
	}
	add("Unexpected continuation bytes", "\x80", "\xbf", "\x80\xbf", "\x80\xbf\x80", "\x80\xbf\x80\xbf", "\x80\xbf\x80\xbf\x80", "\x80\xbf\x80\xbf\x80\xbf", string(cont))
	var lonely []string
	for _, r := range [][2]int{{0xc0, 0xdf}, {0xe0, 0xef}, {0xf0, 0xf7}, {0xf8, 0xfb}, {0xfc, 0xfd}} {
		var b []byte
		for c := r[0]; c < r[1]; c++ {
			b = append(b, byte(c), 0x20)
		}
		lonely = append(lonely, string(b))
	}
	add("Lonely start characters", lonely...)
	missing := []string{"\xc0", "\xe0\x80", "\xf0\x80\x80", "\xf8\x80\x80\x80", "\xfc\x80\x80\x80\x80",
		"\xdf", "\xef\xbf", "\xf7\xbf\xbf", "\xfb\xbf\xbf\xbf", "\xfd\xbf\xbf\xbf\xbf"}
	add("Sequences with last continuation byte missing", missing...)
	var concat string
	for _, m := range missing {
		concat += m
	}
	add("Concatenation of incomplete sequences", concat)
	add("Impossible bytes", "\xfe", "\xff", "\xfe\xfe\xff\xff")
	add("Examples of an overlong ASCII character", "\xc0\xaf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf", "\xf8\x80\x80\x80\xaf", "\xfc\x80\x80\x80\x80\xaf")
	add("Maximum overlong sequences", "\xc1\xbf", "\xe0\x9f\xbf", "\xf0\x8f\xbf\xbf", "\xf8\x87\xbf\xbf\xbf", "\xfc\x83\xbf\xbf\xbf\xbf")
	add("Overlong representation of the NUL character", "\xc0\x80", "\xe0\x80\x80", "\xf0\x80\x80\x80", "\xf8\x80\x80\x80\x80", "\xfc\x80\x80\x80\x80\x80")
	add("Single UTF-16 surrogates", "\xed\xa0\x80", "\xed\xad\xbf", "\xed\xae\x80", "\xed\xaf\xbf", "\xed\xb0\x80", "\xed\xbe\x80", "\xed\xbf\xbf")
	add("Paired UTF-16 surrogates",
		"\xed\xa0\x80\xed\xb0\x80", "\xed\xa0\x80\xed\xbf\xbf", "\xed\xad\xbf\xed\xb0\x80", "\xed\xad\xbf\xed\xbf\xbf",
		"\xed\xae\x80\xed\xb0\x80", "\xed\xae\x80\xed\xbf\xbf", "\xed\xaf\xbf\xed\xb0\x80", "\xed\xaf\xbf\xed\xbf\xbf")
	nonChars := []string{"\xef\xbf\xbe", "\xef\xbf\xbf"}
	for _, z1 := range []byte{0xf0, 0xf1, 0xf2, 0xf3, 0xf4} {
		for _, z2 := range []byte{0x8f, 0x9f, 0xaf, 0xbf} {
			if z1 == 0xf4 && z2 != 0x8f {
				continue // above U+10FFFF
			}
			for _, z3 := range []byte{0xbe, 0xbf} {
				zz := string([]byte{z1, z2, 0xbf, z3})
				if zz == "\xf0\x8f\xbf\xbe" || zz == "\xf0\x8f\xbf\xbf" {
					continue // overlong
				}
				nonChars = append(nonChars, zz)
			}
		}
	}
	add("Non-character code points (valid UTF-8)", nonChars...)
	add("Unicode specials (i.e. replacement char)",
		"\xef\xbf\xb9", "\xef\xbf\xba", "\xef\xbf\xbb", "\xef\xbf\xbc", "\xef\xbf\xbd", "\xef\xbf\xbe", "\xef\xbf\xbf")
	return gs
}

// registerSection6 registers section 6 (UTF-8 handling).
func registerSection6() {
	registerEchoes()
	registerFailFast()
	registerUTF8Stress()
}

// registerEchoes registers 6.1.x-6.3.x: empty and valid UTF-8 text
// messages, whole and in fragments, echoed; an invalid one (6.3.x) fails
// the connection.
func registerEchoes() {
	echo := func(id, desc string, evText string, send func(s *session)) {
		register(&Case{
			ID: id, Description: desc, Expectation: "A message is echo'ed back to us.",
			open: func(s *session) {
				s.expect(OK, message(evText))
				s.expClose = normalClose()
				send(s)
				s.closeAfter(time.Second)
			},
		})
	}
	echo("6.1.1", "Send text message of length 0.", "", func(s *session) { s.send(fr(opText, "")) })
	echo("6.1.2", "Send fragmented text message, 3 fragments each of length 0.", "", func(s *session) {
		s.send(fr(opText, "").noFin(), fr(opCont, "").noFin(), fr(opCont, ""))
	})
	const middle = "middle frame payload"
	echo("6.1.3", "Send fragmented text message, 3 fragments, first and last of length 0, middle non-empty.", middle, func(s *session) {
		s.send(fr(opText, "").noFin(), fr(opCont, middle).noFin(), fr(opCont, ""))
	})
	const hello = "Hello-\xc2\xb5@\xc3\x9f\xc3\xb6\xc3\xa4\xc3\xbc\xc3\xa0\xc3\xa1-UTF-8!!" // Hello-µ@ßöäüàá-UTF-8!!
	p1, p2 := hello[:len("Hello-\xc2\xb5@\xc3\x9f\xc3\xb6\xc3\xa4")], hello[len("Hello-\xc2\xb5@\xc3\x9f\xc3\xb6\xc3\xa4"):]
	echo("6.2.1", "Send a valid UTF-8 text message in one fragment.", hello, func(s *session) { s.sendMessage(hello, false, 0) })
	echo("6.2.2", "Send a valid UTF-8 text message in two fragments, fragmented on UTF-8 code point boundary.", hello, func(s *session) {
		s.send(fr(opText, p1).noFin(), fr(opCont, p2))
	})
	echo("6.2.3", "Send a valid UTF-8 text message in fragments of 1 octet, resulting in frames ending on positions which are not code point ends.", hello, func(s *session) {
		s.sendMessage(hello, false, 1)
	})
	echo("6.2.4", "Send a valid UTF-8 text message in fragments of 1 octet, resulting in frames ending on positions which are not code point ends.", kosme, func(s *session) {
		s.sendMessage(kosme, false, 1)
	})

	// 6.3.x: invalid exactly on byte 12 (\xa0, a surrogate).
	const bad = kosme + "\xed\xa0\x80" + "edited"
	for _, c := range []struct {
		id, desc string
		frag     int
	}{
		{"6.3.1", "Send invalid UTF-8 text message unfragmented.", 0},
		{"6.3.2", "Send invalid UTF-8 text message in fragments of 1 octet, resulting in frames ending on positions which are not code point ends.", 1},
	} {
		register(&Case{
			ID: c.id, Description: c.desc + fmt.Sprintf(" Message: %x", bad),
			Expectation: "The connection is failed immediately, since the payload is not valid UTF-8.",
			open: func(s *session) {
				s.expect(OK)
				s.expClose = utf8Fails()
				s.sendMessage(bad, false, c.frag)
				s.killAfter(time.Second)
			},
		})
	}
}

// registerUTF8Stress registers 6.5-6.23: one case per payload of the
// stress test, sent in one frame.
func registerUTF8Stress() {
	for gi, g := range utf8Groups() {
		for pi, p := range g.payloads {
			id := fmt.Sprintf("6.%d.%d", gi+5, pi+1)
			valid := utf8.ValidString(p)
			desc := fmt.Sprintf("Send a text message with payload which is not valid UTF-8 in one fragment (%s). Payload: 0x%x", g.title, p)
			exp := "The connection is failed immediately, since the payload is not valid UTF-8."
			if valid {
				desc = fmt.Sprintf("Send a text message with payload which is valid UTF-8 in one fragment (%s). Payload: 0x%x", g.title, p)
				exp = "The message is echo'ed back to us."
			}
			register(&Case{
				ID: id, Description: desc, Expectation: exp,
				open: func(s *session) {
					if valid {
						s.expect(OK, message(p))
						s.expClose = normalClose()
					} else {
						s.expect(OK)
						s.expClose = utf8Fails()
					}
					s.sendMessage(p, false, 0)
					s.killAfter(500 * time.Millisecond)
				},
			})
		}
	}
}

// utf8Fails: the server must fail the connection with 1007 (or drop it);
// if the client has to close, the server did not notice at all: FAILED.
func utf8Fails() closeExpect {
	return closeExpect{closedByMe: false, codes: []int{closeInvalidPayload}, wrongEndpointFatal: true}
}

// splitFrame encodes one final, masked frame whose payload is the parts
// concatenated, and returns its bytes cut at the part boundaries (the
// header goes with the first part): Autobahn's beginMessageFrame and
// sendMessageFrameData.
func splitFrame(op byte, parts []string) [][]byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	key := newKey()
	out := [][]byte{appendHeader(nil, true, 0, op, n, key)}
	off := 0
	for i, p := range parts {
		if i > 0 {
			out = append(out, nil)
		}
		start := len(out[i])
		out[i] = append(out[i], p...)
		mask(out[i][start:], key, off)
		off += len(p)
	}
	return out
}

// registerFailFast adds 6.4.1-6.4.4: an invalid text message in three
// parts with 1 s pauses. A server that fails on the part making the text
// invalid is OK; one that waits for the end of the message is NON-STRICT.
func registerFailFast() {
	const part2 = "\xf4\x90\x80\x80" // 0x110000: valid encoding scheme, invalid code point
	const payload = kosme + part2 + "edited"
	const exp = "The first frame is accepted, we expect to timeout on the first wait. The 2nd frame should be rejected immediately (fail fast on UTF-8). If we timeout, we expect the connection is failed at least then, since the complete message payload is not valid UTF-8."
	type parts [3]string
	for _, c := range []struct {
		id, desc string
		p        parts
		oneFrame bool
	}{
		{"6.4.1", "Send invalid UTF-8 text message in 3 fragments (frames). First frame payload is valid, then wait, then 2nd frame which contains the payload making the sequence invalid, then wait, then 3rd frame with rest.",
			parts{kosme, part2, "edited"}, false},
		{"6.4.2", "Same as Case 6.4.1, but in 2nd frame, we send only up to and including the octet making the complete payload invalid.",
			parts{payload[:12], payload[12:13], payload[13:]}, false},
		{"6.4.3", "Same as Case 6.4.1, but we send message not in 3 frames, but in 3 chops of the same message frame.",
			parts{kosme, part2, "edited"}, true},
		{"6.4.4", "Same as Case 6.4.2, but we send message not in 3 frames, but in 3 chops of the same message frame.",
			parts{payload[:12], payload[12:13], payload[13:]}, true},
	} {
		register(&Case{
			ID: c.id, Description: c.desc, Expectation: exp,
			open: func(s *session) {
				s.expect(OK, timeoutMark("A"))
				s.expect(NonStrict, timeoutMark("A"), timeoutMark("B"))
				s.expClose = utf8Fails()
				// The one-frame variants write one frame in three parts.
				chunks := splitFrame(opText, c.p[:])
				sendPart := func(i int) {
					if !c.oneFrame {
						f := fr(opCont, c.p[i])
						if i == 0 {
							f.op = opText
						}
						f.fin = i == 2
						s.send(f)
						return
					}
					s.write(chunks[i], 0, false)
				}
				sendPart(0)
				s.continueLater(time.Second, func() {
					if s.state != stateOpen {
						return
					}
					s.received = append(s.received, timeoutMark("A"))
					sendPart(1)
					s.continueLater(time.Second, func() {
						if s.state != stateOpen {
							return
						}
						s.received = append(s.received, timeoutMark("B"))
						sendPart(2)
						s.killAfter(time.Second)
					})
				})
			},
		})
	}
}
