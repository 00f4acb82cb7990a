package client

import ()

// Why a phase ended early (StopReason) and why a message or a connection
// failed (Reason, counted in Reasons).

// StopReason says why a phase ended early; "" = it ran to its end.
type StopReason string

// Reasons a phase stopped early.
const (
	StopCanceled      StopReason = "canceled"       // the context was canceled
	StopDeadline      StopReason = "deadline"       // the phase's deadline passed (PhasePlan.Deadline)
	StopClosed        StopReason = "closed"         // Close was called
	StopNoConnections StopReason = "no connections" // every usable connection was lost with work left
)

// MergeStop is the stop reason of two parts of a phase: the first other
// than StopNoConnections, which holds only when both parts lost all of
// their connections. Merging starts from the first part (not from ""), so
// that "every part" is what StopNoConnections means.
func MergeStop(a, b StopReason) StopReason {
	switch {
	case a != "" && a != StopNoConnections:
		return a
	case b != "" && b != StopNoConnections:
		return b
	case a == StopNoConnections && b == StopNoConnections:
		return StopNoConnections
	}
	return ""
}

// Reason is why a message or a connection failed. Fixed reasons are the
// constants below; system call failures read "<call>: <errno text>", a
// server's close "server close <code>", a bad handshake its own text.
type Reason string

// Failure reasons.
const (
	ReasonTimeout         Reason = "timeout"                 // no echo, pong or handshake in time
	ReasonEOF             Reason = "eof"                     // the server closed the TCP connection
	ReasonHandshakeEOF    Reason = "handshake eof"           // closed during the upgrade
	ReasonServerClose     Reason = "server close"            // a close frame without a code
	ReasonWrongLength     Reason = "wrong length"            // an echo of another length
	ReasonPayloadMismatch Reason = "payload mismatch"        // an echo with other bytes
	ReasonWrongOpcode     Reason = "wrong opcode"            // text for binary or the reverse
	ReasonMarkerMismatch  Reason = "marker mismatch"         // a rate echo out of order or altered
	ReasonUnexpected      Reason = "unexpected message"      // a message nobody sent
	ReasonBadSubprotocol  Reason = "subprotocol not offered" // the server picked a subprotocol the client did not offer (or answered twice)
	// ReasonDeclined is a handshake whose server answered an offer of
	// permessage-deflate without it (pmdeflate.ErrDeclined's text).
	ReasonDeclined Reason = "compression asked, server declined"
)

// Corrupt reports whether r is a message that came back wrong, as opposed
// to a connection that was lost.
func (r Reason) Corrupt() bool {
	switch r {
	case ReasonWrongLength, ReasonPayloadMismatch, ReasonWrongOpcode, ReasonMarkerMismatch, ReasonUnexpected:
		return true
	}
	return false
}

// Reasons counts failures by reason.
type Reasons map[Reason]int64

// Add counts one failure; it allocates the map on first use.
func (m *Reasons) Add(r Reason) {
	if *m == nil {
		*m = Reasons{}
	}
	(*m)[r]++
}

// Merge adds o's counts.
func (m *Reasons) Merge(o Reasons) {
	if len(o) == 0 {
		return
	}
	if *m == nil {
		*m = Reasons{}
	}
	for k, v := range o {
		(*m)[k] += v
	}
}
