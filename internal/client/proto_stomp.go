package client

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"time"
)

// STOMP 1.2 over WebSocket (subprotocols v12.stomp, v11.stomp, v10.stomp):
// RabbitMQ's Web STOMP plugin, ActiveMQ, Spring's brokers. The client
// speaks first:
//
//	client: CONNECT accept-version host login passcode heart-beat:cx,cy
//	server: CONNECTED version heart-beat:sx,sy      (ERROR refuses)
//	client: SUBSCRIBE id destination ack:auto receipt
//	client: SEND destination content-length receipt
//	server: RECEIPT receipt-id · MESSAGE destination … body · ERROR message
//
// Heart-beats are lone EOLs. The client sends one when it wrote nothing
// for max(cx, sy) (cx is the keepalive option, default 10s); the server's
// heart-beats are read and dropped, and a server silent for twice
// max(sx, cy) fails the connection. An ERROR frame ends the connection
// (STOMP 1.2) with its message as the reason, after an ERROR that names a
// receipt-id was delivered (the awaited receipt gets an error answer).
//
// A WebSocket message may carry several frames and heart-beats, and a
// frame may continue in the next message (kept in protoConn.part).

// ProtoSTOMP is STOMP's name.
const ProtoSTOMP = "stomp"

func init() { registerProtocol(ProtoSTOMP, newSTOMP) }

// DefaultSTOMPHeartBeat is the client's heart-beat, both ways, when the
// protocol's keepalive is 0.
const DefaultSTOMPHeartBeat = 10 * time.Second

// DefaultSTOMPHost is the CONNECT frame's host header when the protocol's
// host is "": RabbitMQ's default virtual host (RabbitMQ reads host as a
// virtual host's name and refuses one it does not have, such as the
// target's address; other brokers ignore it).
const DefaultSTOMPHost = "/"

type stomp struct {
	connect []byte // the CONNECT frame, the same for every connection
	beat    int64  // cx = cy, ms
}

// defaults fills in the heart-beat (DefaultSTOMPHeartBeat) and the
// virtual host (DefaultSTOMPHost).
func (*stomp) defaults(o ProtocolOptions) ProtocolOptions {
	if o.Keepalive == 0 {
		o.Keepalive = DefaultSTOMPHeartBeat
	}
	if o.Host == "" {
		o.Host = DefaultSTOMPHost
	}
	return o
}

func newSTOMP(o ProtocolOptions) (wireProtocol, error) {
	o = (*stomp)(nil).defaults(o)
	beat, host := o.Keepalive, o.Host
	if beat < time.Millisecond {
		return nil, errors.New("stomp: keepalive (the heart-beat) must be at least 1ms")
	}
	ms := beat.Milliseconds()
	// CONNECT's values are not escaped (STOMP 1.2), but they cannot hold a
	// line break.
	for _, v := range []string{host, o.Username, o.Password} {
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, errors.New("stomp: host, username and password cannot hold line breaks or NUL bytes")
		}
	}
	f := []byte("CONNECT\naccept-version:1.0,1.1,1.2\nhost:" + host + "\n")
	if o.Username != "" {
		f = append(f, "login:"+o.Username+"\n"...)
	}
	if o.Password != "" {
		f = append(f, "passcode:"+o.Password+"\n"...)
	}
	f = append(f, "heart-beat:"...)
	f = strconv.AppendInt(f, ms, 10)
	f = append(f, ',')
	f = strconv.AppendInt(f, ms, 10)
	f = append(f, "\n\n\x00"...)
	return &stomp{connect: f, beat: ms}, nil
}

// Connection states (protoConn.state): the greeting's, then open; the
// version bit says the server speaks STOMP 1.0 (no escapes in headers).
const (
	stompWaitConnected = iota
	stompOpen

	stompV10 = 1 << 7
)

func (*stomp) subprotocols() []string { return []string{"v12.stomp", "v11.stomp", "v10.stomp"} }

func (*stomp) waiting(*protoConn) Reason { return "stomp: no CONNECTED" }

func (*stomp) verbs() []uint8 { return []uint8{verbSend, verbPublish, verbSubscribe, verbUnsubscribe} }

func (p *stomp) greet(l *loop, c *conn, s *protoConn, _ int64) (bool, Reason) {
	s.state = stompWaitConnected
	l.sendProto(c, opText, p.connect)
	return false, ""
}

func (p *stomp) greeting(_ *loop, c *conn, s *protoConn, _ byte, msg []byte, _ int64) (bool, Reason) {
	data, fromPart := s.input(msg)
	var f stompFrame
	off, found, perr := stompParse(data, 0, &f)
	switch {
	case perr == stompIncomplete:
		s.keep(data, 0, fromPart)
		return false, stompTooLarge(data)
	case perr != stompOK:
		return false, Reason("stomp: " + perr.String())
	case !found:
		s.keep(data, off, fromPart)
		return false, "" // heart-beats
	case string(f.cmd) == "ERROR": // CONNECT refused (credentials, virtual host): not retried
		return false, refuse(c, stompErrorReason(&f))
	case string(f.cmd) != "CONNECTED":
		return false, Reason("stomp: " + clip(f.cmd) + " frame before CONNECTED")
	}
	if len(f.version) == 0 || string(f.version) == "1.0" {
		s.state |= stompV10
	}
	// The server sends every max(sx, cy) and wants a frame every
	// max(cx, sy); 0 on either side = none.
	sx, sy := stompHeartBeat(f.heartBeat)
	if sy > 0 {
		s.every = max(p.beat, sy) * int64(time.Millisecond)
	}
	if sx > 0 {
		s.silence = 2 * max(sx, p.beat) * int64(time.Millisecond)
	}
	s.state = s.state&stompV10 | stompOpen
	// The server has nothing else to send before the client subscribes,
	// but an ERROR; a frame's first part waits for the next message.
	for off < len(data) {
		next, found, perr := stompParse(data, off, &f)
		switch {
		case perr == stompIncomplete:
			s.keep(data, off, fromPart)
			return true, stompTooLarge(data[off:])
		case perr != stompOK:
			return false, Reason("stomp: " + perr.String())
		case found && string(f.cmd) == "ERROR":
			return false, stompErrorReason(&f)
		}
		off = next
	}
	s.keep(data, off, fromPart)
	return true, ""
}

// stompMaxFrame bounds a frame kept in pieces over WebSocket messages.
const stompMaxFrame = maxPayload

// stompTooLarge is the reason of a partial frame past stompMaxFrame.
func stompTooLarge(part []byte) Reason {
	if len(part) > stompMaxFrame {
		return "stomp: a frame larger than 64 MiB"
	}
	return ""
}

// stompErrorReason is an ERROR frame's message header and the first line
// of its body, the server's words, as the connection's failure reason.
func stompErrorReason(f *stompFrame) Reason {
	r := "stomp: ERROR"
	if w := serverWords(f.message); w != "" {
		r += ": " + w
	}
	line := f.body
	if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	if w := serverWords(line); w != "" {
		r += " (" + w + ")"
	}
	return Reason(r)
}

// stompErrorWhy is an ERROR answer's reason: "stomp ERROR" and its
// message header, clipped ("stomp ERROR: not_found").
func stompErrorWhy(f *stompFrame) Reason {
	var buf [64]byte
	b := append(buf[:0], "stomp ERROR"...)
	if len(f.message) > 0 {
		b = append(append(b, ": "...), clipText(f.message, 40)...)
	}
	return internReason(b)
}

func (p *stomp) decode(l *loop, _ *conn, s *protoConn, op byte, msg []byte, _ int64) Reason {
	data, fromPart := s.input(msg)
	var f stompFrame
	off := 0
	for off < len(data) {
		next, found, perr := stompParse(data, off, &f)
		switch {
		case perr == stompIncomplete: // the rest comes in the next message
			s.keep(data, off, fromPart)
			return stompTooLarge(data[off:])
		case perr != stompOK:
			return Reason("stomp: " + perr.String())
		case !found: // heart-beats
			s.keep(data, next, fromPart)
			return ""
		}
		off = next
		if fail := p.frame(l, s, op, &f); fail != "" {
			return fail
		}
	}
	s.keep(data, off, fromPart)
	return ""
}

// frame takes one frame after the greeting.
func (p *stomp) frame(l *loop, s *protoConn, op byte, f *stompFrame) Reason {
	var ok bool
	switch string(f.cmd) {
	case "MESSAGE":
		var dest []byte
		if dest, ok = p.value(s, f.destination, f.escaped); ok {
			l.msgs = append(l.msgs, newMessage(msgEvent, op, dest, nil, f.body))
		}
	case "RECEIPT":
		var id []byte
		if id, ok = p.value(s, f.receiptID, f.escaped); ok {
			l.msgs = append(l.msgs, newMessage(msgAck, op, nil, id, f.body))
		}
	case "ERROR":
		// The answer to the frame whose receipt it names; without a
		// receipt-id (RabbitMQ's refusals) only the connection's end.
		if id, _ := p.value(s, f.receiptID, f.escaped); len(id) > 0 {
			l.msgs = append(l.msgs, answerMessage(msgError, op, id, f.body, 0, stompErrorWhy(f)))
		}
		return stompErrorReason(f)
	default:
		return Reason("stomp: unexpected " + clip(f.cmd) + " frame")
	}
	if !ok {
		return "stomp: a header with an escape STOMP does not define"
	}
	return ""
}

// value returns a header's value unescaped: v itself, or its unescaped
// copy in s.buf (which lives until the run took the messages).
func (*stomp) value(s *protoConn, v []byte, escaped bool) ([]byte, bool) {
	if !escaped || s.state&stompV10 != 0 || bytes.IndexByte(v, '\\') < 0 {
		return v, true
	}
	n := len(s.buf)
	var ok bool
	s.buf, ok = stompUnescape(s.buf, v)
	return s.buf[n:len(s.buf):len(s.buf)], ok
}

func (*stomp) tick(l *loop, c *conn, s *protoConn, now int64) Reason {
	if s.silence > 0 && now-s.lastRecv > s.silence {
		return "stomp: no heart-beat from the server for 2 of its intervals"
	}
	// Sent so that the next tick cannot come too late for it.
	if s.every > 0 && now-s.lastSent+int64(protoTick) > s.every {
		l.sendProto(c, opText, stompEOL)
	}
	return ""
}

// stompEOL is a heart-beat.
var stompEOL = []byte{'\n'}

func (p *stomp) encode(dst []byte, s *protoConn, m *outMsg, id []byte) ([]byte, byte, []byte, error) {
	op := byte(opText)
	if m.binary {
		op = opBinary
	}
	switch m.verb {
	case verbSend: // the template is the frame; its NUL is added when missing
		dst = append(dst, m.body...)
		if len(m.body) == 0 || m.body[len(m.body)-1] != 0 {
			dst = append(dst, 0)
		}
		return dst, op, id, nil
	case verbPublish, verbSubscribe, verbUnsubscribe:
	default:
		return dst, op, id, errors.New("stomp: the verb is not STOMP's")
	}
	if bytes.IndexByte(m.topic, 0) >= 0 {
		return dst, op, id, errors.New("stomp: a destination cannot hold a NUL byte")
	}
	switch m.verb {
	case verbPublish:
		dst = append(dst, "SEND\n"...)
		dst = stompAppendHeader(dst, "destination", m.topic)
		if m.ack {
			dst, id = p.appendReceipt(dst, s, id)
		}
		return stompAppendBody(dst, m.body), op, id, nil
	case verbSubscribe:
		// The destination is the subscription's id, so that unsubscribe
		// names it again; the script waits for an answer: a receipt.
		dst = append(dst, "SUBSCRIBE\n"...)
		dst = stompAppendHeader(dst, "id", m.topic)
		dst = stompAppendHeader(dst, "destination", m.topic)
		dst = append(dst, "ack:auto\n"...)
	default:
		dst = append(dst, "UNSUBSCRIBE\n"...)
		dst = stompAppendHeader(dst, "id", m.topic)
	}
	dst, id = p.appendReceipt(dst, s, id)
	return append(dst, '\n', 0), opText, id, nil
}

// appendReceipt appends a receipt header with the connection's next id,
// appended to id too (its RECEIPT's receipt-id).
func (*stomp) appendReceipt(dst []byte, s *protoConn, id []byte) ([]byte, []byte) {
	s.ids++
	n := len(id)
	id = strconv.AppendUint(id, s.ids, 10)
	dst = append(dst, "receipt:"...)
	dst = append(dst, id[n:]...)
	return append(dst, '\n'), id
}

// Rooms (roomProtocol): room N is the destination /topic/wsplan.room.N
// (RabbitMQ's topic exchange gives every subscriber a copy); a member
// subscribes with a receipt, a publisher SENDs the payload with its
// content-length (binary-safe), a delivery is a MESSAGE's body.

// stompRoomPrefix names the broadcast phase's destinations.
const stompRoomPrefix = "/topic/wsplan.room."

// appendRoom appends room's destination.
func appendRoom(dst []byte, room int64) []byte {
	return strconv.AppendInt(append(dst, stompRoomPrefix...), room, 10)
}

func (p *stomp) joinRoom(dst []byte, s *protoConn, room int64, id []byte) ([]byte, byte, []byte, bool) {
	dst = append(dst, "SUBSCRIBE\nid:"...)
	dst = appendRoom(dst, room)
	dst = append(dst, "\ndestination:"...)
	dst = appendRoom(dst, room)
	dst = append(dst, "\nack:auto\n"...)
	dst, id = p.appendReceipt(dst, s, id)
	return append(dst, '\n', 0), opText, id, true
}

func (*stomp) publishRoom(dst []byte, _ *protoConn, room int64, payload []byte) ([]byte, byte) {
	dst = append(dst, "SEND\ndestination:"...)
	dst = appendRoom(dst, room)
	dst = append(dst, '\n')
	return stompAppendBody(dst, payload), opBinary
}

func (*stomp) delivery(m *message, _ []byte) ([]byte, bool) {
	if m.Type != msgEvent {
		return nil, false
	}
	return m.Body, true
}
