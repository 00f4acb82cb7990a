package client

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Socket.IO v5 over Engine.IO v4 (socket.io 4.x servers), WebSocket
// transport only (the URL is /socket.io/?EIO=4&transport=websocket). An
// Engine.IO packet is one text frame whose first byte is its type; a
// Socket.IO packet rides in a message packet ("4"). The server pings
// ("2") every pingInterval and drops a client that does not answer ("3")
// within pingTimeout: the loop answers at once, whatever the run does.
//
//	server: 0{"sid":…,"pingInterval":25000,"pingTimeout":20000}   open
//	client: 40  (40/chat, for a namespace)                        connect
//	server: 40{"sid":…}  (44{…} refuses)                           connected
//	client: 42["event",args…]  42<id>["event",args…] asks an ack
//	server: 43<id>[args…]                                          the ack
//
// Binary events and acks (5, 6) are not spoken: a server that sends one
// fails the connection, with that reason. The codec is hand-written: the
// packets are a type byte, a namespace, an id and a JSON array, and the
// one Go library (zishang520/socket.io) decodes into `any` through an
// event emitter, allocating per packet.

// ProtoSocketIO is Socket.IO's name.
const ProtoSocketIO = "socketio"

func init() { registerProtocol(ProtoSocketIO, newSocketIO) }

type socketIO struct {
	ns []byte // "" for "/", else "/chat," (with its comma)
}

// defaults fills in the namespace, "/".
func (*socketIO) defaults(o ProtocolOptions) ProtocolOptions {
	if o.Namespace == "" {
		o.Namespace = "/"
	}
	return o
}

func newSocketIO(o ProtocolOptions) (wireProtocol, error) {
	s := &socketIO{}
	o = s.defaults(o)
	if !strings.HasPrefix(o.Namespace, "/") || strings.ContainsFunc(o.Namespace, func(r rune) bool { return r == ',' || r <= ' ' }) {
		// The namespace is written before a comma in every packet.
		return nil, fmt.Errorf("socketio: namespace %q: want a path such as /chat (a leading /, no comma or space)", o.Namespace)
	}
	if o.Namespace != "/" {
		s.ns = []byte(o.Namespace + ",")
	}
	return s, nil
}

// Engine.IO packet types, and Socket.IO's (after an Engine.IO "4").
const (
	eioOpen    = '0'
	eioClose   = '1'
	eioPing    = '2'
	eioPong    = '3'
	eioMessage = '4'
	eioNoop    = '6'

	sioConnect      = '0'
	sioDisconnect   = '1'
	sioEvent        = '2'
	sioAck          = '3'
	sioConnectError = '4'
)

// sioPong answers the server's ping; the loop's scratch (l.pbuf) builds
// the other replies, kept grown so that a reply allocates nothing.
var sioPong = []byte{eioPong}

// Greeting states.
const (
	sioWaitOpen = iota
	sioWaitConnect
)

func (*socketIO) subprotocols() []string { return nil }

func (*socketIO) waiting(s *protoConn) Reason {
	if s.state == sioWaitOpen {
		return "socket.io: no Engine.IO open packet"
	}
	return "socket.io: no answer to the namespace connect"
}

func (*socketIO) verbs() []uint8 { return []uint8{verbSend, verbEmit} }

func (*socketIO) greet(_ *loop, _ *conn, s *protoConn, _ int64) (bool, Reason) {
	s.state = sioWaitOpen // the server speaks first
	return false, ""
}

func (p *socketIO) greeting(l *loop, c *conn, s *protoConn, _ byte, msg []byte, _ int64) (bool, Reason) {
	if len(msg) == 0 {
		return false, "socket.io: an empty packet"
	}
	switch {
	case msg[0] == eioPing:
		l.sendProto(c, opText, sioPong)
		return false, ""
	case s.state == sioWaitOpen && msg[0] == eioOpen:
		// pingInterval + pingTimeout without a packet: the server is gone.
		js := unsafe.String(unsafe.SliceData(msg[1:]), len(msg)-1)
		every := gjson.Get(js, "pingInterval").Int() + gjson.Get(js, "pingTimeout").Int()
		s.every = every * 1e6
		l.pbuf = append(append(l.pbuf[:0], eioMessage, sioConnect), p.ns...)
		l.sendProto(c, opText, l.pbuf)
		s.state = sioWaitConnect
		return false, ""
	case s.state == sioWaitConnect && len(msg) >= 2 && msg[0] == eioMessage:
		rest := p.stripNS(msg[2:])
		switch msg[1] {
		case sioConnect:
			return true, ""
		case sioConnectError:
			return false, refuse(c, Reason("socket.io: connect refused: "+jsonWords(rest)))
		}
	case msg[0] == eioClose:
		return false, "socket.io: closed by the server during the handshake"
	}
	return false, Reason("socket.io: unexpected packet " + clip(msg) + " during the handshake")
}

// stripNS drops the connection's namespace (and its comma) from a
// Socket.IO packet's body.
func (p *socketIO) stripNS(b []byte) []byte {
	if len(p.ns) > 0 && bytes.HasPrefix(b, p.ns) {
		return b[len(p.ns):]
	}
	return b
}

func (p *socketIO) decode(l *loop, c *conn, s *protoConn, op byte, msg []byte, _ int64) Reason {
	if len(msg) == 0 {
		return "socket.io: an empty packet"
	}
	switch msg[0] {
	case eioPing:
		l.sendProto(c, opText, sioPong)
		return ""
	case eioNoop, eioPong:
		return ""
	case eioClose:
		return "socket.io: closed by the server"
	case eioMessage:
	default:
		return Reason("socket.io: unknown packet " + clip(msg))
	}
	if len(msg) < 2 {
		return "socket.io: an empty message packet"
	}
	body := p.stripNS(msg[2:])
	id, args := splitAckID(body)
	switch msg[1] {
	case sioEvent:
		name := gjson.Get(unsafe.String(unsafe.SliceData(args), len(args)), "0")
		topic := args[:0]
		if name.Type == gjson.String && name.Index > 0 {
			topic = args[name.Index+1 : name.Index+len(name.Raw)-1]
		}
		l.msgs = append(l.msgs, newMessage(msgEvent, op, topic, id, args))
		if len(id) > 0 { // the server asks for an ack: give an empty one
			l.pbuf = append(append(append(append(l.pbuf[:0], eioMessage, sioAck), p.ns...), id...), "[]"...)
			l.sendProto(c, opText, l.pbuf)
		}
	case sioAck:
		l.msgs = append(l.msgs, newMessage(msgAck, op, nil, id, args))
	case sioDisconnect:
		return "socket.io: disconnected by the server"
	case sioConnectError:
		return Reason("socket.io: connect error: " + jsonWords(body))
	case sioConnect:
		// A repeated connect answer: nothing to do.
	default:
		return Reason("socket.io: packet type " + string(msg[1]) + " is not spoken (binary events)")
	}
	return ""
}

// splitAckID splits a Socket.IO packet body into its ack id (digits) and
// its JSON.
func splitAckID(b []byte) (id, rest []byte) {
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == 0 {
		return nil, b
	}
	return b[:i], b[i:]
}

// clip is at most 40 bytes of b, for a reason.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

func (*socketIO) tick(_ *loop, _ *conn, s *protoConn, now int64) Reason {
	if s.every > 0 && now-s.lastRecv > s.every {
		return "socket.io: no ping from the server within pingInterval + pingTimeout"
	}
	return ""
}

func (p *socketIO) encode(dst []byte, s *protoConn, m *outMsg, id []byte) ([]byte, byte, []byte, error) {
	dst = append(dst, eioMessage, sioEvent)
	dst = append(dst, p.ns...)
	if m.ack {
		s.ids++
		n := len(id)
		id = strconv.AppendUint(id, s.ids, 10)
		dst = append(dst, id[n:]...)
	}
	dst = append(dst, `["`...)
	if m.verb == verbEmit {
		dst = append(dst, m.topic...)
	} else {
		dst = append(dst, "message"...)
	}
	dst = append(dst, '"')
	if len(m.body) > 0 {
		dst = append(dst, ',')
		dst = append(dst, m.body...)
	}
	dst = append(dst, ']')
	return dst, opText, id, nil
}

// Rooms (roomProtocol): the app joins a socket to room "wsplan.room.N" on
// a "join" event (acknowledged), and fans a "publish" event's data out to
// the room as a "message" event (examples/socketio/server.js does both).
// JSON cannot carry the binary marker: the data is its base64 text.

// sioRoomPrefix names the broadcast phase's rooms.
const sioRoomPrefix = "wsplan.room."

func (p *socketIO) joinRoom(dst []byte, s *protoConn, room int64, id []byte) ([]byte, byte, []byte, bool) {
	dst = append(dst, eioMessage, sioEvent)
	dst = append(dst, p.ns...)
	s.ids++
	n := len(id)
	id = strconv.AppendUint(id, s.ids, 10)
	dst = append(dst, id[n:]...)
	dst = append(dst, `["join","`+sioRoomPrefix...)
	dst = strconv.AppendInt(dst, room, 10)
	dst = append(dst, `"]`...)
	return dst, opText, id, true
}

func (p *socketIO) publishRoom(dst []byte, _ *protoConn, room int64, payload []byte) ([]byte, byte) {
	dst = append(dst, eioMessage, sioEvent)
	dst = append(dst, p.ns...)
	dst = append(dst, `["publish",{"room":"`+sioRoomPrefix...)
	dst = strconv.AppendInt(dst, room, 10)
	dst = append(dst, `","data":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, payload)
	dst = append(dst, `"}]`...)
	return dst, opText
}

func (*socketIO) delivery(m *message, scratch []byte) ([]byte, bool) {
	if m.Type != msgEvent || string(m.Topic) != "message" {
		return nil, false
	}
	// ["message","<base64>"]
	b := m.Body
	i := bytes.IndexByte(b, ',')
	if i < 0 || len(b) < i+4 || b[i+1] != '"' || b[len(b)-1] != ']' || b[len(b)-2] != '"' {
		return nil, false
	}
	out, err := base64.StdEncoding.AppendDecode(scratch[:0], b[i+2:len(b)-2])
	return out, err == nil
}
