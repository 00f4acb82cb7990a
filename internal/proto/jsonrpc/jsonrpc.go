package jsonrpc

import (
	"bytes"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/wsplan/wsplan/internal/proto"
)

// JSON-RPC 2.0 over WebSocket, with rpc-websockets' events. No greeting:
// every message is a JSON text frame.
//
//	client: {"jsonrpc":"2.0","method":"sum","params":[1,2],"id":1}   call
//	server: {"jsonrpc":"2.0","result":3,"id":1}                     its response
//	        {"jsonrpc":"2.0","error":{"code":-32601,"message":…},"id":1}
//	                                            an error answer: "jsonrpc -32601"
//	client: {"jsonrpc":"2.0","method":"log","params":[…]}           notify (no response)
//	server: [{…},{…}]                                               a batch's responses
//	server: {"notification":"news","params":[…]}                    an rpc-websockets event
//	        {"jsonrpc":"2.0","method":"news","params":[…]}          a JSON-RPC notification
//
// rpc-websockets' client subscribes to events with the call rpc.on
// ["name", …]. The codec is hand-written over gjson (internal/proto/json.go): the
// Go JSON-RPC libraries (sourcegraph/jsonrpc2, …) run a goroutine per
// connection and decode every message into values.

// Name is JSON-RPC's name in a plan: `protocol: jsonrpc`.
const Name = "jsonrpc"

func init() {
	proto.Register(Name, "JSON-RPC 2.0 over WebSocket, with rpc-websockets' events", New)
	// The example server (examples/), for wsplan init.
	proto.RegisterExample(Name, proto.Example{URL: "ws://127.0.0.1:9510/", Start: []string{"npm ci --prefix examples/rpc-websockets", "node examples/rpc-websockets/server.js 127.0.0.1:9510"}})
}

// Settings are JSON-RPC's keys: it has none.
type Settings struct{}

type jsonRPC struct{}

// New makes JSON-RPC.
func New(*Settings) (proto.Protocol, error) { return jsonRPC{}, nil }

func (jsonRPC) Subprotocols() []string { return nil }

func (jsonRPC) Greet(*proto.Env, *proto.Conn, int64) (bool, proto.Reason) { return true, "" }

func (jsonRPC) Greeting(*proto.Env, *proto.Conn, byte, []byte, int64) (bool, proto.Reason) {
	return true, "" // never called: there is no greeting
}

func (jsonRPC) Waiting(*proto.Conn) proto.Reason { return "jsonrpc: no greeting" }

func (jsonRPC) Tick(*proto.Env, *proto.Conn, int64) proto.Reason { return "" }

func (jsonRPC) Verbs() []uint8 { return []uint8{proto.VerbSend, proto.VerbCall, proto.VerbNotify} }

// rpcMsg is a JSON-RPC message's members, slices of the message.
type rpcMsg struct {
	id, result, err, method, params []byte
	hasResult                       bool
}

func (j jsonRPC) Decode(e *proto.Env, _ *proto.Conn, op byte, msg []byte, _ int64) proto.Reason {
	i := 0
	for i < len(msg) && msg[i] <= ' ' {
		i++
	}
	switch {
	case i < len(msg) && msg[i] == '[': // a batch's responses, in any order
		proto.JSONMembers(msg, func(_, v []byte) bool {
			j.decodeOne(e, op, v)
			return true
		})
	case i < len(msg) && msg[i] == '{':
		j.decodeOne(e, op, msg)
	default: // not JSON-RPC: the application's plain message
		e.Emit(proto.NewMessage(proto.MsgData, op, nil, nil, msg))
	}
	return ""
}

// decodeOne appends the message one JSON-RPC object is: a response (ack
// or error, by id), a notification or event (topic = its method or
// name), else a plain message.
func (jsonRPC) decodeOne(e *proto.Env, op byte, obj []byte) {
	var m rpcMsg
	proto.JSONMembers(obj, func(k, v []byte) bool {
		switch string(k) {
		case "id":
			if t, ok := proto.JSONText(v); ok {
				m.id = t
			} else if string(v) != "null" {
				m.id = v
			}
		case "result":
			m.result, m.hasResult = v, true
		case "error":
			m.err = v
		case "method", "notification":
			m.method, _ = proto.JSONText(v)
		case "params":
			m.params = v
		}
		return true
	})
	switch {
	case m.method != nil:
		e.Emit(proto.NewMessage(proto.MsgEvent, op, m.method, m.id, m.params))
	case m.err != nil:
		e.Emit(proto.Answer(proto.MsgError, op, m.id, m.err, 0, rpcErrorWhy(m.err)))
	case m.hasResult && len(m.id) > 0 && m.id[0] == rpcJoinTag && !joinedAll(m.result):
		e.Emit(proto.Answer(proto.MsgError, op, m.id, m.result, 0, reasonRPCJoinRefused))
	case m.hasResult:
		e.Emit(proto.NewMessage(proto.MsgAck, op, nil, m.id, m.result))
	default:
		e.Emit(proto.NewMessage(proto.MsgData, op, nil, m.id, obj))
	}
}

// Error answers' reasons (message's why).
const (
	// reasonRPCError is an error whose code is not an integer.
	reasonRPCError proto.Reason = "jsonrpc error"
	// reasonRPCJoinRefused is an rpc.on whose result refused an event.
	reasonRPCJoinRefused proto.Reason = "jsonrpc rpc.on refused"
)

// rpcErrorWhy is an error object's reason: "jsonrpc" and its code
// ("jsonrpc -32601"), the code alone, as a server's message may vary per
// request.
func rpcErrorWhy(obj []byte) proto.Reason {
	var code []byte
	proto.JSONMembers(obj, func(k, v []byte) bool {
		if string(k) == "code" {
			code = v
			return false
		}
		return true
	})
	if len(code) == 0 || len(code) > 20 {
		return reasonRPCError
	}
	for i, b := range code {
		if (b < '0' || b > '9') && (b != '-' || i > 0 || len(code) == 1) {
			return reasonRPCError
		}
	}
	var buf [32]byte
	return proto.Intern(append(append(buf[:0], "jsonrpc "...), code...))
}

// appendRequest appends a request (id != nil) or notification: the
// method's name (escaped) and its params (JSON, none when empty).
func appendRequest(dst, method, params, id []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":`...)
	dst = proto.AppendJSONString(dst, method)
	if len(params) > 0 {
		dst = append(append(dst, `,"params":`...), params...)
	}
	if id != nil {
		dst = append(append(dst, `,"id":`...), id...)
	}
	return append(dst, '}')
}

func (jsonRPC) Encode(dst []byte, s *proto.Conn, m *proto.Out, id []byte) ([]byte, byte, []byte, error) {
	if m.Verb == proto.VerbSend {
		return append(dst, m.Body...), proto.OpText, id, nil
	}
	params := bytes.TrimSpace(m.Body)
	if len(params) > 0 && ((params[0] != '[' && params[0] != '{') || !gjson.ValidBytes(params)) {
		return dst, proto.OpText, id, fmt.Errorf("jsonrpc: params must be a JSON array or object, got %s", proto.Clip(params))
	}
	if m.Verb == proto.VerbNotify {
		return appendRequest(dst, m.Topic, params, nil), proto.OpText, id, nil
	}
	s.IDs++ // from 1: rpc-websockets takes a request with id 0 for a notification
	n := len(id)
	id = strconv.AppendUint(id, s.IDs, 10)
	return appendRequest(dst, m.Topic, params, id[n:]), proto.OpText, id, nil
}

// Rooms (proto.Rooms), rpc-websockets' events: room N is the event
// "room.N", which the server registered (server.event). A subscriber
// joins with the call rpc.on ["room.N"] (answered {"room.N":"ok"}; any
// other value, e.g. "provided event invalid", refuses the join); a
// publisher sends the notification broadcast ["room.N", data], a method
// the server registers to emit the event (server.emit: see
// examples/rpc-websockets), and a delivery is the event
// {"notification":"room.N","params":[data]}.
// JSON has no binary: data is the broadcast message in base64.
const (
	rpcRoomPrefix = "room."
	RoomMethod    = "broadcast" // the method a publisher calls (exported for tests that play the server)
	rpcJoinTag    = 'j'         // a join's id: "j1", "j2", …
)

func (jsonRPC) JoinRoom(dst []byte, s *proto.Conn, room int64, id []byte) ([]byte, byte, []byte, bool) {
	s.IDs++
	n := len(id)
	id = strconv.AppendUint(append(id, rpcJoinTag), s.IDs, 10)
	dst = append(dst, `{"jsonrpc":"2.0","method":"rpc.on","params":["`+rpcRoomPrefix...)
	dst = strconv.AppendInt(dst, room, 10)
	dst = append(dst, `"],"id":"`...)
	dst = append(dst, id[n:]...)
	return append(dst, `"}`...), proto.OpText, id, true
}

func (jsonRPC) PublishRoom(dst []byte, _ *proto.Conn, room int64, payload []byte) ([]byte, byte) {
	dst = append(dst, `{"jsonrpc":"2.0","method":"`+RoomMethod+`","params":["`+rpcRoomPrefix...)
	dst = strconv.AppendInt(dst, room, 10)
	dst = append(dst, `","`...)
	dst = proto.B64.AppendEncode(dst, payload)
	return append(dst, `"]}`...), proto.OpText
}

// joinedAll reports whether an rpc.on result says "ok" for every event.
func joinedAll(result []byte) bool {
	ok := true
	isObj := proto.JSONMembers(result, func(_, v []byte) bool {
		t, _ := proto.JSONText(v)
		ok = string(t) == "ok"
		return ok
	})
	return isObj && ok
}

// delivery: an event "room.N" whose params' first element is the
// base64 message.
func (jsonRPC) Delivery(m *proto.Message, scratch []byte) ([]byte, bool) {
	if m.Type != proto.MsgEvent || !bytes.HasPrefix(m.Topic, []byte(rpcRoomPrefix)) {
		return nil, false
	}
	r := gjson.Get(unsafe.String(unsafe.SliceData(m.Body), len(m.Body)), "0")
	if r.Type != gjson.String || r.Index <= 0 {
		return nil, false
	}
	return proto.B64Payload(m.Body[r.Index:r.Index+len(r.Raw)], scratch)
}

var _ proto.Rooms = jsonRPC{}
