package proto

import (
	"fmt"
	"strings"
	"unsafe"
)

// Recorder is a Link that keeps what a protocol wrote, for tests and
// fuzzers that drive a protocol without an event loop (as
// net/http/httptest's ResponseRecorder does a handler).
type Recorder struct {
	Sent    [][]byte // each message written, copied, oldest first
	Ops     []byte   // their opcodes
	Refused bool     // Refuse was called
	Keep    bool     // keep what is written; false = count it only
	N       int      // messages written
}

// Write implements Link.
func (r *Recorder) Write(op byte, b []byte) {
	r.N++
	if r.Keep {
		r.Sent = append(r.Sent, append([]byte(nil), b...))
		r.Ops = append(r.Ops, op)
	}
}

// Refuse implements Link.
func (r *Recorder) Refuse() { r.Refused = true }

// Next returns the oldest message written and not yet taken, as text;
// "" when none is left.
func (r *Recorder) Next() string {
	if len(r.Sent) == 0 {
		return ""
	}
	b := r.Sent[0]
	r.Sent, r.Ops = r.Sent[1:], r.Ops[1:]
	return string(b)
}

// NewEnv returns an Env whose Link is a Recorder that keeps what it is
// written.
func NewEnv() (*Env, *Recorder) {
	r := &Recorder{Keep: true}
	return &Env{Link: r}, r
}

// Within reports whether part lies inside whole's array: fuzzers check
// that what a protocol decoded points into the message or its Conn.
func Within(part, whole []byte) bool {
	if cap(whole) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(whole)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(part)))
	return p >= start && p < start+uintptr(cap(whole))
}

// CheckDecoded is what every protocol's fuzzer asserts of a Decode (or
// Greeting) of msg on s: each part of each message it emitted lies in
// msg or in what the protocol keeps (s.Buf, s.Part), an error answer
// says why, and a failure's reason is one line that starts with the
// protocol's words (prefix). It returns what is wrong, "" when nothing.
func CheckDecoded(e *Env, s *Conn, msg []byte, fail Reason, prefix string) string {
	for _, m := range e.Msgs {
		for _, part := range [][]byte{m.Topic, m.ID, m.Body} {
			if len(part) > 0 && !Within(part, msg) && !Within(part, s.Buf) && !Within(part, s.Part) {
				return fmt.Sprintf("a decoded part %q points outside the message", part)
			}
		}
		if m.Type == MsgError && m.Why == "" && m.Grant == 0 && prefix != "stomp" {
			return fmt.Sprintf("an error answer %q without a reason", m.Body)
		}
	}
	if fail != "" && (!strings.HasPrefix(string(fail), prefix) || strings.ContainsAny(string(fail), "\r\n")) {
		return fmt.Sprintf("reason %q: want one line starting %q", fail, prefix)
	}
	return ""
}
