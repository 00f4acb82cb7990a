package client

import (
	"bytes"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/tidwall/gjson"
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
// ["name", …]. The codec is hand-written over gjson (proto_json.go): the
// Go JSON-RPC libraries (sourcegraph/jsonrpc2, …) run a goroutine per
// connection and decode every message into values.

// ProtoJSONRPC is JSON-RPC's name.
const ProtoJSONRPC = "jsonrpc"

func init() { registerProtocol(ProtoJSONRPC, newJSONRPC) }

type jsonRPC struct{}

func newJSONRPC(ProtocolOptions) (wireProtocol, error) { return jsonRPC{}, nil }

func (jsonRPC) subprotocols() []string { return nil }

func (jsonRPC) greet(*loop, *conn, *protoConn, int64) (bool, Reason) { return true, "" }

func (jsonRPC) greeting(*loop, *conn, *protoConn, byte, []byte, int64) (bool, Reason) {
	return true, "" // never called: there is no greeting
}

func (jsonRPC) waiting(*protoConn) Reason { return "jsonrpc: no greeting" }

func (jsonRPC) tick(*loop, *conn, *protoConn, int64) Reason { return "" }

func (jsonRPC) verbs() []uint8 { return []uint8{verbSend, verbCall, verbNotify} }

// rpcMsg is a JSON-RPC message's members, slices of the message.
type rpcMsg struct {
	id, result, err, method, params []byte
	hasResult                       bool
}

func (j jsonRPC) decode(l *loop, _ *conn, _ *protoConn, op byte, msg []byte, _ int64) Reason {
	i := 0
	for i < len(msg) && msg[i] <= ' ' {
		i++
	}
	switch {
	case i < len(msg) && msg[i] == '[': // a batch's responses, in any order
		jsonMembers(msg, func(_, v []byte) bool {
			j.decodeOne(l, op, v)
			return true
		})
	case i < len(msg) && msg[i] == '{':
		j.decodeOne(l, op, msg)
	default: // not JSON-RPC: the application's plain message
		l.msgs = append(l.msgs, newMessage(msgData, op, nil, nil, msg))
	}
	return ""
}

// decodeOne appends the message one JSON-RPC object is: a response (ack
// or error, by id), a notification or event (topic = its method or
// name), else a plain message.
func (jsonRPC) decodeOne(l *loop, op byte, obj []byte) {
	var m rpcMsg
	jsonMembers(obj, func(k, v []byte) bool {
		switch string(k) {
		case "id":
			if t, ok := jsonText(v); ok {
				m.id = t
			} else if string(v) != "null" {
				m.id = v
			}
		case "result":
			m.result, m.hasResult = v, true
		case "error":
			m.err = v
		case "method", "notification":
			m.method, _ = jsonText(v)
		case "params":
			m.params = v
		}
		return true
	})
	switch {
	case m.method != nil:
		l.msgs = append(l.msgs, newMessage(msgEvent, op, m.method, m.id, m.params))
	case m.err != nil:
		l.msgs = append(l.msgs, answerMessage(msgError, op, m.id, m.err, 0, rpcErrorWhy(m.err)))
	case m.hasResult && len(m.id) > 0 && m.id[0] == rpcJoinTag && !joinedAll(m.result):
		l.msgs = append(l.msgs, answerMessage(msgError, op, m.id, m.result, 0, reasonRPCJoinRefused))
	case m.hasResult:
		l.msgs = append(l.msgs, newMessage(msgAck, op, nil, m.id, m.result))
	default:
		l.msgs = append(l.msgs, newMessage(msgData, op, nil, m.id, obj))
	}
}

// Error answers' reasons (message's why).
const (
	// reasonRPCError is an error whose code is not an integer.
	reasonRPCError Reason = "jsonrpc error"
	// reasonRPCJoinRefused is an rpc.on whose result refused an event.
	reasonRPCJoinRefused Reason = "jsonrpc rpc.on refused"
)

// rpcErrorWhy is an error object's reason: "jsonrpc" and its code
// ("jsonrpc -32601"), the code alone, as a server's message may vary per
// request.
func rpcErrorWhy(obj []byte) Reason {
	var code []byte
	jsonMembers(obj, func(k, v []byte) bool {
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
	return internReason(append(append(buf[:0], "jsonrpc "...), code...))
}

// appendRequest appends a request (id != nil) or notification: the
// method's name (escaped) and its params (JSON, none when empty).
func appendRequest(dst, method, params, id []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":`...)
	dst = appendJSONString(dst, method)
	if len(params) > 0 {
		dst = append(append(dst, `,"params":`...), params...)
	}
	if id != nil {
		dst = append(append(dst, `,"id":`...), id...)
	}
	return append(dst, '}')
}

func (jsonRPC) encode(dst []byte, s *protoConn, m *outMsg, id []byte) ([]byte, byte, []byte, error) {
	if m.verb == verbSend {
		return append(dst, m.body...), opText, id, nil
	}
	params := bytes.TrimSpace(m.body)
	if len(params) > 0 && ((params[0] != '[' && params[0] != '{') || !gjson.ValidBytes(params)) {
		return dst, opText, id, fmt.Errorf("jsonrpc: params must be a JSON array or object, got %s", clip(params))
	}
	if m.verb == verbNotify {
		return appendRequest(dst, m.topic, params, nil), opText, id, nil
	}
	s.ids++ // from 1: rpc-websockets takes a request with id 0 for a notification
	n := len(id)
	id = strconv.AppendUint(id, s.ids, 10)
	return appendRequest(dst, m.topic, params, id[n:]), opText, id, nil
}

// Rooms (roomProtocol), rpc-websockets' events: room N is the event
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
	rpcRoomMethod = "broadcast"
	rpcJoinTag    = 'j' // a join's id: "j1", "j2", …
)

func (jsonRPC) joinRoom(dst []byte, s *protoConn, room int64, id []byte) ([]byte, byte, []byte, bool) {
	s.ids++
	n := len(id)
	id = strconv.AppendUint(append(id, rpcJoinTag), s.ids, 10)
	dst = append(dst, `{"jsonrpc":"2.0","method":"rpc.on","params":["`+rpcRoomPrefix...)
	dst = strconv.AppendInt(dst, room, 10)
	dst = append(dst, `"],"id":"`...)
	dst = append(dst, id[n:]...)
	return append(dst, `"}`...), opText, id, true
}

func (jsonRPC) publishRoom(dst []byte, _ *protoConn, room int64, payload []byte) ([]byte, byte) {
	dst = append(dst, `{"jsonrpc":"2.0","method":"`+rpcRoomMethod+`","params":["`+rpcRoomPrefix...)
	dst = strconv.AppendInt(dst, room, 10)
	dst = append(dst, `","`...)
	dst = b64.AppendEncode(dst, payload)
	return append(dst, `"]}`...), opText
}

// joinedAll reports whether an rpc.on result says "ok" for every event.
func joinedAll(result []byte) bool {
	ok := true
	isObj := jsonMembers(result, func(_, v []byte) bool {
		t, _ := jsonText(v)
		ok = string(t) == "ok"
		return ok
	})
	return isObj && ok
}

// delivery: an event "room.N" whose params' first element is the
// base64 message.
func (jsonRPC) delivery(m *message, scratch []byte) ([]byte, bool) {
	if m.Type != msgEvent || !bytes.HasPrefix(m.Topic, []byte(rpcRoomPrefix)) {
		return nil, false
	}
	r := gjson.Get(unsafe.String(unsafe.SliceData(m.Body), len(m.Body)), "0")
	if r.Type != gjson.String || r.Index <= 0 {
		return nil, false
	}
	return b64Payload(m.Body[r.Index:r.Index+len(r.Raw)], scratch)
}

var _ roomProtocol = jsonRPC{}
