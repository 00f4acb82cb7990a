package stomp

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/units"
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
// frame may continue in the next message (kept in proto.Conn.Part).

// Name is STOMP's name in a plan: `protocol: stomp`.
const Name = "stomp"

func init() {
	proto.Register(Name, "STOMP 1.0-1.2 over WebSocket (subprotocols v12.stomp, v11.stomp, v10.stomp)", New)
	// The example server (examples/), for wsplan init.
	proto.RegisterExample(Name, proto.Example{URL: "ws://127.0.0.1:15674/ws", Start: []string{"examples/stomp/rabbitmq.sh 15674   (apt-get install rabbitmq-server)"}})
}

// Settings are STOMP's keys in a plan's `protocol: {name: stomp, …}`.
type Settings struct {
	Keepalive units.Duration `yaml:"keepalive" default:"10s" min:"1ms" doc:"the client's heart-beat, both ways (CONNECT's heart-beat:cx,cy)"`
	Username  string         `yaml:"username" doc:"CONNECT's login (${env:NAME} for a secret)"`
	Password  string         `yaml:"password" secret:"true" doc:"CONNECT's passcode (${env:NAME} for a secret)"`
	Host      string         `yaml:"host" default:"/" doc:"CONNECT's host header, the virtual host: RabbitMQ's default one is /"`
}

type stomp struct {
	connect []byte // the CONNECT frame, the same for every connection
	beat    int64  // cx = cy, ms
}

// New makes STOMP from its settings (defaults applied, bounds checked).
func New(o *Settings) (proto.Protocol, error) {
	ms := o.Keepalive.D().Milliseconds()
	// CONNECT's values are not escaped (STOMP 1.2), but they cannot hold a
	// line break.
	for _, v := range []string{o.Host, o.Username, o.Password} {
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, errors.New("host, username and password cannot hold line breaks or NUL bytes")
		}
	}
	f := []byte("CONNECT\naccept-version:1.0,1.1,1.2\nhost:" + o.Host + "\n")
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

// Connection states (proto.Conn.State): the greeting's, then open; the
// version bit says the server speaks STOMP 1.0 (no escapes in headers).
const (
	stompWaitConnected = iota
	stompOpen

	stompV10 = 1 << 7
)

func (*stomp) Subprotocols() []string { return []string{"v12.stomp", "v11.stomp", "v10.stomp"} }

func (*stomp) Waiting(*proto.Conn) proto.Reason { return "stomp: no CONNECTED" }

func (*stomp) Verbs() []uint8 {
	return []uint8{proto.VerbSend, proto.VerbPublish, proto.VerbSubscribe, proto.VerbUnsubscribe}
}

func (p *stomp) Greet(e *proto.Env, s *proto.Conn, _ int64) (bool, proto.Reason) {
	s.State = stompWaitConnected
	e.Write(proto.OpText, p.connect)
	return false, ""
}

func (p *stomp) Greeting(e *proto.Env, s *proto.Conn, _ byte, msg []byte, _ int64) (bool, proto.Reason) {
	data, fromPart := s.Input(msg)
	var f stompFrame
	off, found, perr := stompParse(data, 0, &f)
	switch {
	case perr == stompIncomplete:
		s.Keep(data, 0, fromPart)
		return false, stompTooLarge(data)
	case perr != stompOK:
		return false, proto.Reason("stomp: " + perr.String())
	case !found:
		s.Keep(data, off, fromPart)
		return false, "" // heart-beats
	case string(f.cmd) == "ERROR": // CONNECT refused (credentials, virtual host): not retried
		return false, e.Refuse(stompErrorReason(&f))
	case string(f.cmd) != "CONNECTED":
		return false, proto.Reason("stomp: " + proto.Clip(f.cmd) + " frame before CONNECTED")
	}
	if len(f.version) == 0 || string(f.version) == "1.0" {
		s.State |= stompV10
	}
	// The server sends every max(sx, cy) and wants a frame every
	// max(cx, sy); 0 on either side = none.
	sx, sy := stompHeartBeat(f.heartBeat)
	if sy > 0 {
		s.Every = max(p.beat, sy) * int64(time.Millisecond)
	}
	if sx > 0 {
		s.Silence = 2 * max(sx, p.beat) * int64(time.Millisecond)
	}
	s.State = s.State&stompV10 | stompOpen
	// The server has nothing else to send before the client subscribes,
	// but an ERROR; a frame's first part waits for the next message.
	for off < len(data) {
		next, found, perr := stompParse(data, off, &f)
		switch {
		case perr == stompIncomplete:
			s.Keep(data, off, fromPart)
			return true, stompTooLarge(data[off:])
		case perr != stompOK:
			return false, proto.Reason("stomp: " + perr.String())
		case found && string(f.cmd) == "ERROR":
			return false, stompErrorReason(&f)
		}
		off = next
	}
	s.Keep(data, off, fromPart)
	return true, ""
}

// stompMaxFrame bounds a frame kept in pieces over WebSocket messages.
const stompMaxFrame = proto.MaxMessage

// stompTooLarge is the reason of a partial frame past stompMaxFrame.
func stompTooLarge(part []byte) proto.Reason {
	if len(part) > stompMaxFrame {
		return "stomp: a frame larger than 64 MiB"
	}
	return ""
}

// stompErrorReason is an ERROR frame's message header and the first line
// of its body, the server's words, as the connection's failure reason.
func stompErrorReason(f *stompFrame) proto.Reason {
	r := "stomp: ERROR"
	if w := proto.Words(f.message); w != "" {
		r += ": " + w
	}
	line := f.body
	if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	if w := proto.Words(line); w != "" {
		r += " (" + w + ")"
	}
	return proto.Reason(r)
}

// stompErrorWhy is an ERROR answer's reason: "stomp ERROR" and its
// message header, clipped ("stomp ERROR: not_found").
func stompErrorWhy(f *stompFrame) proto.Reason {
	var buf [64]byte
	b := append(buf[:0], "stomp ERROR"...)
	if len(f.message) > 0 {
		b = append(append(b, ": "...), proto.ClipText(f.message, 40)...)
	}
	return proto.Intern(b)
}

func (p *stomp) Decode(e *proto.Env, s *proto.Conn, op byte, msg []byte, _ int64) proto.Reason {
	data, fromPart := s.Input(msg)
	var f stompFrame
	off := 0
	for off < len(data) {
		next, found, perr := stompParse(data, off, &f)
		switch {
		case perr == stompIncomplete: // the rest comes in the next message
			s.Keep(data, off, fromPart)
			return stompTooLarge(data[off:])
		case perr != stompOK:
			return proto.Reason("stomp: " + perr.String())
		case !found: // heart-beats
			s.Keep(data, next, fromPart)
			return ""
		}
		off = next
		if fail := p.frame(e, s, op, &f); fail != "" {
			return fail
		}
	}
	s.Keep(data, off, fromPart)
	return ""
}

// frame takes one frame after the greeting.
func (p *stomp) frame(e *proto.Env, s *proto.Conn, op byte, f *stompFrame) proto.Reason {
	var ok bool
	switch string(f.cmd) {
	case "MESSAGE":
		var dest []byte
		if dest, ok = p.value(s, f.destination, f.escaped); ok {
			e.Emit(proto.NewMessage(proto.MsgEvent, op, dest, nil, f.body))
		}
	case "RECEIPT":
		var id []byte
		if id, ok = p.value(s, f.receiptID, f.escaped); ok {
			e.Emit(proto.NewMessage(proto.MsgAck, op, nil, id, f.body))
		}
	case "ERROR":
		// The answer to the frame whose receipt it names; without a
		// receipt-id (RabbitMQ's refusals) only the connection's end.
		if id, _ := p.value(s, f.receiptID, f.escaped); len(id) > 0 {
			e.Emit(proto.Answer(proto.MsgError, op, id, f.body, 0, stompErrorWhy(f)))
		}
		return stompErrorReason(f)
	default:
		return proto.Reason("stomp: unexpected " + proto.Clip(f.cmd) + " frame")
	}
	if !ok {
		return "stomp: a header with an escape STOMP does not define"
	}
	return ""
}

// value returns a header's value unescaped: v itself, or its unescaped
// copy in s.Buf (which lives until the run took the messages).
func (*stomp) value(s *proto.Conn, v []byte, escaped bool) ([]byte, bool) {
	if !escaped || s.State&stompV10 != 0 || bytes.IndexByte(v, '\\') < 0 {
		return v, true
	}
	n := len(s.Buf)
	var ok bool
	s.Buf, ok = stompUnescape(s.Buf, v)
	return s.Buf[n:len(s.Buf):len(s.Buf)], ok
}

func (*stomp) Tick(e *proto.Env, s *proto.Conn, now int64) proto.Reason {
	if s.Silence > 0 && now-s.LastRecv > s.Silence {
		return "stomp: no heart-beat from the server for 2 of its intervals"
	}
	// Sent so that the next tick cannot come too late for it.
	if s.Every > 0 && now-s.LastSent+int64(proto.TickEvery) > s.Every {
		e.Write(proto.OpText, stompEOL)
	}
	return ""
}

// stompEOL is a heart-beat.
var stompEOL = []byte{'\n'}

func (p *stomp) Encode(dst []byte, s *proto.Conn, m *proto.Out, id []byte) ([]byte, byte, []byte, error) {
	op := byte(proto.OpText)
	if m.Binary {
		op = proto.OpBinary
	}
	switch m.Verb {
	case proto.VerbSend: // the template is the frame; its NUL is added when missing
		dst = append(dst, m.Body...)
		if len(m.Body) == 0 || m.Body[len(m.Body)-1] != 0 {
			dst = append(dst, 0)
		}
		return dst, op, id, nil
	case proto.VerbPublish, proto.VerbSubscribe, proto.VerbUnsubscribe:
	default:
		return dst, op, id, errors.New("stomp: the verb is not STOMP's")
	}
	if bytes.IndexByte(m.Topic, 0) >= 0 {
		return dst, op, id, errors.New("stomp: a destination cannot hold a NUL byte")
	}
	switch m.Verb {
	case proto.VerbPublish:
		dst = append(dst, "SEND\n"...)
		dst = stompAppendHeader(dst, "destination", m.Topic)
		if m.Ack {
			dst, id = p.appendReceipt(dst, s, id)
		}
		return stompAppendBody(dst, m.Body), op, id, nil
	case proto.VerbSubscribe:
		// The destination is the subscription's id, so that unsubscribe
		// names it again; the script waits for an answer: a receipt.
		dst = append(dst, "SUBSCRIBE\n"...)
		dst = stompAppendHeader(dst, "id", m.Topic)
		dst = stompAppendHeader(dst, "destination", m.Topic)
		dst = append(dst, "ack:auto\n"...)
	default:
		dst = append(dst, "UNSUBSCRIBE\n"...)
		dst = stompAppendHeader(dst, "id", m.Topic)
	}
	dst, id = p.appendReceipt(dst, s, id)
	return append(dst, '\n', 0), proto.OpText, id, nil
}

// appendReceipt appends a receipt header with the connection's next id,
// appended to id too (its RECEIPT's receipt-id).
func (*stomp) appendReceipt(dst []byte, s *proto.Conn, id []byte) ([]byte, []byte) {
	s.IDs++
	n := len(id)
	id = strconv.AppendUint(id, s.IDs, 10)
	dst = append(dst, "receipt:"...)
	dst = append(dst, id[n:]...)
	return append(dst, '\n'), id
}

// Rooms (proto.Rooms): room N is the destination /topic/wsplan.room.N
// (RabbitMQ's topic exchange gives every subscriber a copy); a member
// subscribes with a receipt, a publisher SENDs the payload with its
// content-length (binary-safe), a delivery is a MESSAGE's body.

// stompRoomPrefix names the broadcast phase's destinations.
const stompRoomPrefix = "/topic/wsplan.room."

// appendRoom appends room's destination.
func appendRoom(dst []byte, room int64) []byte {
	return strconv.AppendInt(append(dst, stompRoomPrefix...), room, 10)
}

func (p *stomp) JoinRoom(dst []byte, s *proto.Conn, room int64, id []byte) ([]byte, byte, []byte, bool) {
	dst = append(dst, "SUBSCRIBE\nid:"...)
	dst = appendRoom(dst, room)
	dst = append(dst, "\ndestination:"...)
	dst = appendRoom(dst, room)
	dst = append(dst, "\nack:auto\n"...)
	dst, id = p.appendReceipt(dst, s, id)
	return append(dst, '\n', 0), proto.OpText, id, true
}

func (*stomp) PublishRoom(dst []byte, _ *proto.Conn, room int64, payload []byte) ([]byte, byte) {
	dst = append(dst, "SEND\ndestination:"...)
	dst = appendRoom(dst, room)
	dst = append(dst, '\n')
	return stompAppendBody(dst, payload), proto.OpBinary
}

func (*stomp) Delivery(m *proto.Message, _ []byte) ([]byte, bool) {
	if m.Type != proto.MsgEvent {
		return nil, false
	}
	return m.Body, true
}
