package autobahn

import (
	"fmt"
	"strings"
)

// Verdict is a case's outcome in Autobahn|Testsuite's vocabulary.
type Verdict string

// The verdicts, worst last. OK: the server did what the case expects.
// NON-STRICT: it broke a SHOULD (or a canonical behavior left open by the
// RFC) but is still conformant, e.g. it closed with 1002 where 1007 was
// expected, or failed a bad UTF-8 message only once it was complete.
// INFORMATIONAL: the RFC leaves the behavior open; the case only records it.
// UNIMPLEMENTED: the case needs a feature the server did not negotiate.
// FAILED: the server broke a MUST.
const (
	OK            Verdict = "OK"
	NonStrict     Verdict = "NON-STRICT"
	Informational Verdict = "INFORMATIONAL"
	Unimplemented Verdict = "UNIMPLEMENTED"
	Failed        Verdict = "FAILED"
)

// Behavior says what NON-STRICT counts as.
type Behavior string

const (
	// Strict counts NON-STRICT as failing (the default).
	Strict Behavior = "strict"
	// Lenient counts NON-STRICT as passing.
	Lenient Behavior = "lenient"
)

// Passes reports whether v counts as passing under b: OK, INFORMATIONAL
// and UNIMPLEMENTED always pass, FAILED never does, NON-STRICT passes only
// under Lenient.
func (b Behavior) Passes(v Verdict) bool {
	switch v {
	case OK, Informational, Unimplemented:
		return true
	case NonStrict:
		return b == Lenient
	}
	return false
}

// Autobahn's close behaviors (its behaviorClose field).
const (
	closeOK             = "OK"
	closeFailed         = "FAILED"
	closeWrongCode      = "WRONG CODE"
	closeUnclean        = "UNCLEAN"
	closeFailedByClient = "FAILED BY CLIENT"
	closeInformational  = "INFORMATIONAL"
)

// judge computes Autobahn's behavior and behaviorClose exactly as its
// Case.onConnectionLost does, then the case's own adjustments.
func (s *session) judge() {
	for _, o := range s.expected {
		if equalEvents(s.received, o.events) {
			s.behavior = o.verdict
			s.result = "Actual events match at least one expected."
			break
		}
	}
	e := s.expClose
	switch {
	case e.closedByMe != s.closedByMe:
		s.closeBehavior = closeFailed
		s.resultClose = "The connection was failed by the wrong endpoint"
	case e.requireClean && !s.wasClean:
		s.closeBehavior = closeUnclean
		s.resultClose = "The spec requires the connection to be failed cleanly here"
	case s.remoteCloseCode >= 0 && !containsInt(e.codes, s.remoteCloseCode):
		s.closeBehavior = closeWrongCode
		s.resultClose = fmt.Sprintf("The close code should have been %s or empty", joinInts(e.codes))
	case s.droppedByMe:
		s.closeBehavior = closeFailedByClient
		s.resultClose = "It is preferred that the server close the TCP connection"
	default:
		s.closeBehavior = closeOK
		s.resultClose = "Connection was properly closed"
	}
	if e.wrongEndpointFatal && e.closedByMe != s.closedByMe {
		s.behavior = Failed
	}
	if s.c.post != nil {
		s.c.post(s)
	}
}

// verdict folds behavior and behaviorClose into one verdict: a broken
// closing handshake (FAILED, UNCLEAN) fails an otherwise passing case; a
// wrong close code or a client-side TCP drop (WRONG CODE, FAILED BY CLIENT)
// makes it at best NON-STRICT, as Autobahn's report colours them.
func (s *session) verdict() Verdict {
	v := s.behavior
	if v != OK && v != NonStrict {
		return v
	}
	switch s.closeBehavior {
	case closeFailed, closeUnclean:
		return Failed
	case closeWrongCode, closeFailedByClient:
		return NonStrict
	}
	return v
}

// observed describes what happened, for any verdict but OK.
func (s *session) observed() string {
	var b strings.Builder
	if s.timedOut {
		fmt.Fprintf(&b, "case timeout after %v (the case's own timers had not ended it)", s.timeout)
		if s.progress != "" {
			fmt.Fprintf(&b, ", %s", s.progress)
		}
		b.WriteString("; ")
	}
	if len(s.expected) == 0 && !s.timedOut {
		// The case judges its events itself (9.x): its result says how.
		b.WriteString(strings.TrimSuffix(s.result, "."))
		if len(s.received) > 0 {
			fmt.Fprintf(&b, ": got %s", describeEvents(s.received))
		}
	} else {
		fmt.Fprintf(&b, "got %s", describeEvents(s.received))
	}
	if s.behavior != OK && s.behavior != Informational && len(s.expected) > 0 {
		var alts []string
		for _, o := range s.expected {
			alts = append(alts, fmt.Sprintf("%s (%s)", describeEvents(o.events), o.verdict))
		}
		fmt.Fprintf(&b, ", expected %s", strings.Join(alts, " or "))
	}
	if s.violation != "" {
		fmt.Fprintf(&b, "; server sent a bad frame: %s", s.violation)
	}
	b.WriteString("; ")
	switch {
	case s.closedByMe && s.killed:
		fmt.Fprintf(&b, "server did not close, client failed the connection (close %d)", s.localCloseCode)
	case s.closedByMe:
		b.WriteString("client started the closing handshake")
	case s.gotClose:
		b.WriteString("server started the closing handshake")
	default:
		b.WriteString("no closing handshake")
	}
	if s.gotClose {
		if s.remoteCloseCode >= 0 {
			fmt.Fprintf(&b, ", server close code %d", s.remoteCloseCode)
		} else {
			b.WriteString(", server close without code")
		}
	} else {
		b.WriteString(", no close frame from server")
	}
	want := joinInts(s.expClose.codes)
	if !s.expClose.closedByMe {
		fmt.Fprintf(&b, " (expected the server to fail the connection: close %s or drop)", want)
	} else if s.closeBehavior == closeWrongCode {
		fmt.Fprintf(&b, " (expected %s or none)", want)
	}
	if s.droppedByMe {
		b.WriteString(", TCP dropped by client")
	} else {
		b.WriteString(", TCP dropped by server")
	}
	if !s.wasClean && s.wasNotCleanReason != "" {
		fmt.Fprintf(&b, " (unclean: %s)", s.wasNotCleanReason)
	}
	fmt.Fprintf(&b, "; close behavior %s: %s", s.closeBehavior, s.resultClose)
	return b.String()
}

func describeEvents(evs []event) string {
	if len(evs) == 0 {
		return "nothing"
	}
	var parts []string
	for _, e := range evs {
		parts = append(parts, e.String())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// String renders an event for humans: kind, size and a short quote.
func (e event) String() string {
	kind := e.kind
	if e.kind == "message" {
		kind = "text"
		if e.binary {
			kind = "binary"
		}
	}
	if e.kind == "timeout" {
		return "timeout " + string(e.payload)
	}
	if len(e.payload) <= 24 {
		return fmt.Sprintf("%s %q", kind, e.payload)
	}
	return fmt.Sprintf("%s %d B %q…", kind, len(e.payload), e.payload[:16])
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func joinInts(xs []int) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ",")
}
