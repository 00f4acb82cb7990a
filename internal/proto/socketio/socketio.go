package socketio

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/wsplan/wsplan/internal/proto"
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

// Name is Socket.IO's name in a plan: `protocol: socketio`.
const Name = "socketio"

func init() {
	proto.Register(Name, "Socket.IO v5 over Engine.IO v4 (socket.io 4.x), WebSocket transport only", New)
	// The example server (examples/), for wsplan init.
	proto.RegisterExample(Name, proto.Example{URL: "ws://127.0.0.1:9500/socket.io/?EIO=4&transport=websocket", Start: []string{"npm ci --prefix examples/socketio", "node examples/socketio/server.js 127.0.0.1:9500"}, Query: "EIO=4&transport=websocket", Key: "EIO=", Path: "/socket.io/"})
}

// Settings are Socket.IO's keys in a plan's `protocol: {name: socketio, …}`.
type Settings struct {
	Namespace string `yaml:"namespace" default:"/" doc:"the namespace the client connects to: a path such as /chat"`
}

type socketIO struct {
	ns []byte // "" for "/", else "/chat," (with its comma)
}

// New makes Socket.IO from its settings (defaults applied).
func New(o *Settings) (proto.Protocol, error) {
	s := &socketIO{}
	if !strings.HasPrefix(o.Namespace, "/") {
		return nil, fmt.Errorf("namespace %q: want a path with a leading / (write /%s)", o.Namespace, o.Namespace)
	}
	if strings.ContainsFunc(o.Namespace, func(r rune) bool { return r == ',' || r <= ' ' }) {
		// The namespace is written before a comma in every packet.
		return nil, fmt.Errorf("namespace %q: want a path such as /chat, with no comma or space", o.Namespace)
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

// sioPong answers the server's ping; the loop's scratch (e.Buf) builds
// the other replies, kept grown so that a reply allocates nothing.
var sioPong = []byte{eioPong}

// Greeting states.
const (
	sioWaitOpen = iota
	sioWaitConnect
)

func (*socketIO) Subprotocols() []string { return nil }

func (*socketIO) Waiting(s *proto.Conn) proto.Reason {
	if s.State == sioWaitOpen {
		return "socket.io: no Engine.IO open packet"
	}
	return "socket.io: no answer to the namespace connect"
}

func (*socketIO) Verbs() []uint8 { return []uint8{proto.VerbSend, proto.VerbEmit} }

func (*socketIO) Greet(_ *proto.Env, s *proto.Conn, _ int64) (bool, proto.Reason) {
	s.State = sioWaitOpen // the server speaks first
	return false, ""
}

func (p *socketIO) Greeting(e *proto.Env, s *proto.Conn, _ byte, msg []byte, _ int64) (bool, proto.Reason) {
	if len(msg) == 0 {
		return false, "socket.io: an empty packet"
	}
	switch {
	case msg[0] == eioPing:
		e.Write(proto.OpText, sioPong)
		return false, ""
	case s.State == sioWaitOpen && msg[0] == eioOpen:
		// pingInterval + pingTimeout without a packet: the server is gone.
		js := unsafe.String(unsafe.SliceData(msg[1:]), len(msg)-1)
		every := gjson.Get(js, "pingInterval").Int() + gjson.Get(js, "pingTimeout").Int()
		s.Every = every * 1e6
		e.Buf = append(append(e.Buf[:0], eioMessage, sioConnect), p.ns...)
		e.Write(proto.OpText, e.Buf)
		s.State = sioWaitConnect
		return false, ""
	case s.State == sioWaitConnect && len(msg) >= 2 && msg[0] == eioMessage:
		rest := p.stripNS(msg[2:])
		switch msg[1] {
		case sioConnect:
			return true, ""
		case sioConnectError:
			return false, e.Refuse(proto.Reason("socket.io: connect refused: " + proto.JSONWords(rest)))
		}
	case msg[0] == eioClose:
		return false, "socket.io: closed by the server during the handshake"
	}
	return false, proto.Reason("socket.io: unexpected packet " + proto.Clip(msg) + " during the handshake")
}

// stripNS drops the connection's namespace (and its comma) from a
// Socket.IO packet's body.
func (p *socketIO) stripNS(b []byte) []byte {
	if len(p.ns) > 0 && bytes.HasPrefix(b, p.ns) {
		return b[len(p.ns):]
	}
	return b
}

func (p *socketIO) Decode(e *proto.Env, s *proto.Conn, op byte, msg []byte, _ int64) proto.Reason {
	if len(msg) == 0 {
		return "socket.io: an empty packet"
	}
	switch msg[0] {
	case eioPing:
		e.Write(proto.OpText, sioPong)
		return ""
	case eioNoop, eioPong:
		return ""
	case eioClose:
		return "socket.io: closed by the server"
	case eioMessage:
	default:
		return proto.Reason("socket.io: unknown packet " + proto.Clip(msg))
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
		e.Emit(proto.NewMessage(proto.MsgEvent, op, topic, id, args))
		if len(id) > 0 { // the server asks for an ack: give an empty one
			e.Buf = append(append(append(append(e.Buf[:0], eioMessage, sioAck), p.ns...), id...), "[]"...)
			e.Write(proto.OpText, e.Buf)
		}
	case sioAck:
		e.Emit(proto.NewMessage(proto.MsgAck, op, nil, id, args))
	case sioDisconnect:
		return "socket.io: disconnected by the server"
	case sioConnectError:
		return proto.Reason("socket.io: connect error: " + proto.JSONWords(body))
	case sioConnect:
		// A repeated connect answer: nothing to do.
	default:
		return proto.Reason("socket.io: packet type " + proto.Clip(msg[1:2]) + " is not spoken (binary events)")
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

func (*socketIO) Tick(_ *proto.Env, s *proto.Conn, now int64) proto.Reason {
	if s.Every > 0 && now-s.LastRecv > s.Every {
		return "socket.io: no ping from the server within pingInterval + pingTimeout"
	}
	return ""
}

func (p *socketIO) Encode(dst []byte, s *proto.Conn, m *proto.Out, id []byte) ([]byte, byte, []byte, error) {
	dst = append(dst, eioMessage, sioEvent)
	dst = append(dst, p.ns...)
	if m.Ack {
		s.IDs++
		n := len(id)
		id = strconv.AppendUint(id, s.IDs, 10)
		dst = append(dst, id[n:]...)
	}
	dst = append(dst, `["`...)
	if m.Verb == proto.VerbEmit {
		dst = append(dst, m.Topic...)
	} else {
		dst = append(dst, "message"...)
	}
	dst = append(dst, '"')
	if len(m.Body) > 0 {
		dst = append(dst, ',')
		dst = append(dst, m.Body...)
	}
	dst = append(dst, ']')
	return dst, proto.OpText, id, nil
}

// Rooms (proto.Rooms): the app joins a socket to room "wsplan.room.N" on
// a "join" event (acknowledged), and fans a "publish" event's data out to
// the room as a "message" event (examples/socketio/server.js does both).
// JSON cannot carry the binary marker: the data is its base64 text.

// sioRoomPrefix names the broadcast phase's rooms.
const sioRoomPrefix = "wsplan.room."

func (p *socketIO) JoinRoom(dst []byte, s *proto.Conn, room int64, id []byte) ([]byte, byte, []byte, bool) {
	dst = append(dst, eioMessage, sioEvent)
	dst = append(dst, p.ns...)
	s.IDs++
	n := len(id)
	id = strconv.AppendUint(id, s.IDs, 10)
	dst = append(dst, id[n:]...)
	dst = append(dst, `["join","`+sioRoomPrefix...)
	dst = strconv.AppendInt(dst, room, 10)
	dst = append(dst, `"]`...)
	return dst, proto.OpText, id, true
}

func (p *socketIO) PublishRoom(dst []byte, _ *proto.Conn, room int64, payload []byte) ([]byte, byte) {
	dst = append(dst, eioMessage, sioEvent)
	dst = append(dst, p.ns...)
	dst = append(dst, `["publish",{"room":"`+sioRoomPrefix...)
	dst = strconv.AppendInt(dst, room, 10)
	dst = append(dst, `","data":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, payload)
	dst = append(dst, `"}]`...)
	return dst, proto.OpText
}

func (*socketIO) Delivery(m *proto.Message, scratch []byte) ([]byte, bool) {
	if m.Type != proto.MsgEvent || string(m.Topic) != "message" {
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
