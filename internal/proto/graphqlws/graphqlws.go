package graphqlws

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/wsplan/wsplan/internal/script"

	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/units"
)

// GraphQL over WebSocket: the graphql-transport-ws protocol of the
// graphql-ws library (5.x, 6.x), subprotocol "graphql-transport-ws" —
// not the legacy subscriptions-transport-ws, whose subprotocol is
// literally "graphql-ws". Every message is a JSON text frame with a type:
//
//	client: {"type":"connection_init","payload":{…}}             greeting
//	server: {"type":"connection_ack"}   (or a close: 4403 forbidden …)
//	client: {"id":"1","type":"subscribe","payload":{"query":…,"variables":…}}
//	server: {"id":"1","type":"next","payload":{"data":…}} …  {"id":"1","type":"complete"}
//	        {"id":"1","type":"error","payload":[errors]}
//	client: {"id":"1","type":"complete"}                          stop
//	either: {"type":"ping"} → {"type":"pong"}
//
// Queries and mutations run as subscribe too: one next, then complete.
// The codec is hand-written over gjson: a message is an envelope of three
// members, read in place (internal/proto/json.go); Go's GraphQL clients
// (hasura/go-graphql-client and others) run a goroutine per connection
// and decode into values.

// Name is GraphQL over WebSocket's name in a plan: `protocol: graphql-ws`.
const Name = "graphql-ws"

// Subprotocol is what the client offers in the upgrade.
const Subprotocol = "graphql-transport-ws"

func init() {
	proto.Register(Name, "GraphQL over WebSocket: graphql-ws's graphql-transport-ws protocol", New)
	// The example server (examples/), for wsplan init.
	proto.RegisterExample(Name, proto.Example{URL: "ws://127.0.0.1:9600/graphql", Start: []string{"npm ci --prefix examples/graphql-ws", "node examples/graphql-ws/server.js 127.0.0.1:9600"}})
}

// Settings are GraphQL over WebSocket's keys in a plan's
// `protocol: {name: graphql-ws, …}`.
type Settings struct {
	Init      string         `yaml:"init" secret:"json" doc:"connection_init's payload, a JSON object (${env:NAME} for a token in it)"`
	Keepalive units.Duration `yaml:"keepalive" min:"0s" doc:"how often the client pings, 0 = never (the server's pings are answered)"`
}

type graphQLWS struct {
	init  []byte // connection_init's payload (JSON object); nil = none
	every int64  // client ping interval, ns; 0 = none
}

// New makes GraphQL over WebSocket from its settings.
func New(o *Settings) (proto.Protocol, error) {
	p := &graphQLWS{every: int64(o.Keepalive)}
	if o.Init != "" {
		b := bytes.TrimSpace([]byte(o.Init))
		if len(b) == 0 || b[0] != '{' || !gjson.ValidBytes(b) {
			// Never the value: an init carries credentials.
			return nil, fmt.Errorf("init: must be a JSON object (connection_init's payload): %s", jsonProblem(b))
		}
		p.init = b
	}
	return p, nil
}

// jsonProblem says what is wrong with b, which is not a JSON object, by
// place alone: a quoted piece of it could be a piece of a credential.
func jsonProblem(b []byte) string {
	if len(b) == 0 || b[0] != '{' {
		return "it does not start with {"
	}
	var v any
	var se *json.SyntaxError
	if err := json.Unmarshal(b, &v); errors.As(err, &se) {
		if se.Offset >= int64(len(b)) {
			return fmt.Sprintf("its JSON ends early, at byte %d", len(b))
		}
		return fmt.Sprintf("its JSON is broken at byte %d of %d", se.Offset, len(b))
	}
	return "it is not valid JSON"
}

// Greeting states (proto.Conn.State).
const (
	gqlWaitAck = iota
	gqlOpen
)

// Reasons a graphql-ws connection fails with.
const (
	reasonGQLNoAck      proto.Reason = "graphql-ws: no connection_ack"
	reasonGQLNoPong     proto.Reason = "graphql-ws: no pong within 2 × keepalive"
	reasonGQLBadMessage proto.Reason = "graphql-ws: a message that is not a JSON object with a type"
)

// gqlCloses name the protocol's close codes (graphql-ws's CloseCode).
var gqlCloses = map[uint16]string{
	4400: "bad request",
	4401: "unauthorized",
	4403: "forbidden",
	4406: "subprotocol not acceptable",
	4408: "connection initialisation timeout",
	4409: "subscriber already exists",
	4429: "too many initialisation requests",
	4499: "terminated",
	4500: "internal server error",
}

// CloseReason implements proto.CloseNamer: "graphql-ws: forbidden (4403)", and
// the server's words when they say more than the code's name (": Token
// expired"). 4401 and 4403 are refusals.
func (*graphQLWS) CloseReason(code uint16, text []byte) (proto.Reason, bool) {
	name, ok := gqlCloses[code]
	if !ok {
		return "", false
	}
	r := "graphql-ws: " + name + " (" + strconv.Itoa(int(code)) + ")"
	if w := proto.Words(text); w != "" && !strings.EqualFold(w, name) {
		r += ": " + w
	}
	return proto.Reason(r), code == 4401 || code == 4403
}

func (*graphQLWS) Subprotocols() []string { return []string{Subprotocol} }

func (*graphQLWS) Waiting(*proto.Conn) proto.Reason { return reasonGQLNoAck }

func (*graphQLWS) Verbs() []uint8 {
	return []uint8{proto.VerbSend, proto.VerbSubscribe, proto.VerbPublish, proto.VerbUnsubscribe}
}

// Answers implements proto.Answerer: a subscribe is answered by its first
// result (or error), a publish (a mutation) by its only one — when the
// step wants it (as:, reply:, capture:); else the client does not wait
// (a mutation's result is then dropped, a subscription's results are
// the events later expects take). An unsubscribe (complete) is never
// answered.
func (*graphQLWS) Answers(verb string, _, asks bool, _ int) bool {
	return asks && (verb == script.VerbSubscribe || verb == script.VerbPublish)
}

func (p *graphQLWS) Greet(e *proto.Env, s *proto.Conn, _ int64) (bool, proto.Reason) {
	b := append(e.Buf[:0], `{"type":"connection_init"`...)
	if p.init != nil {
		b = append(append(b, `,"payload":`...), p.init...)
	}
	e.Buf = append(b, '}')
	e.Write(proto.OpText, e.Buf)
	s.State = gqlWaitAck
	return false, ""
}

// gqlMsg is a message's envelope, slices of the message.
type gqlMsg struct {
	typ, id, payload []byte
}

// parseGQL reads a message's type, id and payload in place.
func parseGQL(msg []byte) (g gqlMsg, ok bool) {
	ok = proto.JSONMembers(msg, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			g.typ, _ = proto.JSONText(v)
		case "id":
			g.id, _ = proto.JSONText(v)
		case "payload":
			g.payload = v
		}
		return true
	})
	return g, ok && g.typ != nil
}

var (
	gqlPing = []byte(`{"type":"ping"}`)
	gqlPong = []byte(`{"type":"pong"}`)
)

func (p *graphQLWS) Greeting(e *proto.Env, s *proto.Conn, _ byte, msg []byte, now int64) (bool, proto.Reason) {
	g, ok := parseGQL(msg)
	if !ok {
		return false, reasonGQLBadMessage
	}
	switch string(g.typ) {
	case "connection_ack":
		s.State = gqlOpen
		s.Every, s.LastSent = p.every, now
		return true, ""
	case "ping":
		e.Write(proto.OpText, gqlPong)
		return false, ""
	case "pong":
		return false, ""
	case "connection_error": // mercurius' refusal: {"message":"Forbidden"}, then a close
		return false, e.Refuse(proto.Reason("graphql-ws: connection_error: " + proto.JSONWords(g.payload)))
	}
	return false, proto.Reason("graphql-ws: " + proto.Clip(g.typ) + " before connection_ack")
}

func (p *graphQLWS) Decode(e *proto.Env, _ *proto.Conn, op byte, msg []byte, _ int64) proto.Reason {
	g, ok := parseGQL(msg)
	if !ok {
		return reasonGQLBadMessage
	}
	switch string(g.typ) {
	case "next":
		if len(g.id) > 0 && g.id[0] == gqlUnawaitedTag {
			return "" // the result of a mutation nobody waits for
		}
		e.Emit(proto.NewMessage(proto.MsgNext, op, nil, g.id, g.payload))
	case "error":
		e.Emit(proto.Answer(proto.MsgError, op, g.id, g.payload, 0, gqlErrorWhy(g.payload)))
	case "complete":
		if len(g.id) > 0 && (g.id[0] == gqlAwaitedTag || g.id[0] == gqlUnawaitedTag) {
			return "" // a mutation's end, after its one result
		}
		e.Emit(proto.NewMessage(proto.MsgComplete, op, nil, g.id, nil))
	case "ping":
		e.Write(proto.OpText, gqlPong)
	case "pong", "connection_ack":
	default:
		return proto.Reason("graphql-ws: unexpected message type " + proto.Clip(g.typ))
	}
	return ""
}

// Tick pings the server when the client has sent nothing for a
// keepalive (when set; any write counts), and fails a connection the
// server has sent nothing on for two of them.
func (p *graphQLWS) Tick(e *proto.Env, s *proto.Conn, now int64) proto.Reason {
	if s.Every <= 0 || s.State != gqlOpen {
		return ""
	}
	if now-s.LastRecv > 2*s.Every+int64(proto.TickEvery) { // a tick late at most
		return reasonGQLNoPong
	}
	if now-s.LastSent >= s.Every {
		e.Write(proto.OpText, gqlPing)
		s.LastSent = now
	}
	return ""
}

// Operation ids: a connection's subscriptions are "1", "2", … in order
// (the low half of proto.Conn.ids), so a script can name one to stop; its
// mutations (publishes) are "p1", "p2", … when awaited, "q1", "q2", …
// when not (the high half): a mutation's complete, and the result of one
// nobody awaits, are dropped, never taken for a subscription's. (An
// error is kept: an unawaited mutation that failed shows as unexpected.)
const (
	gqlAwaitedTag   = 'p'
	gqlUnawaitedTag = 'q'
)

// nextSub returns the next subscription id, appended to id.
func nextSub(s *proto.Conn, id []byte) []byte {
	s.IDs = s.IDs&^0xffffffff | (s.IDs+1)&0xffffffff
	return strconv.AppendUint(id, s.IDs&0xffffffff, 10)
}

// nextPub returns the next publish id with its tag, appended to id.
func nextPub(s *proto.Conn, id []byte, tag byte) []byte {
	s.IDs += 1 << 32
	return strconv.AppendUint(append(id, tag), s.IDs>>32, 10)
}

// appendSubscribe appends a subscribe message: operation id, the query's
// text (to be escaped), and its variables (JSON; none when empty).
func appendSubscribe(dst, id, query, vars []byte) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, id...)
	dst = append(dst, `","type":"subscribe","payload":{"query":`...)
	dst = proto.AppendJSONString(dst, query)
	if len(vars) > 0 {
		dst = append(append(dst, `,"variables":`...), vars...)
	}
	return append(dst, "}}"...)
}

func (p *graphQLWS) Encode(dst []byte, s *proto.Conn, m *proto.Out, id []byte) ([]byte, byte, []byte, error) {
	switch m.Verb {
	case proto.VerbSend:
		return append(dst, m.Body...), proto.OpText, id, nil
	case proto.VerbUnsubscribe:
		dst = append(dst, `{"id":`...)
		dst = proto.AppendJSONString(dst, m.Topic)
		return append(dst, `,"type":"complete"}`...), proto.OpText, id, nil
	}
	if vars := bytes.TrimSpace(m.Body); len(vars) > 0 && (vars[0] != '{' || !gjson.ValidBytes(vars)) {
		return dst, proto.OpText, id, fmt.Errorf("graphql-ws: variables must be a JSON object, got %s", proto.Clip(vars))
	}
	n := len(id)
	switch {
	case m.Verb == proto.VerbPublish && m.Awaited:
		id = nextPub(s, id, gqlAwaitedTag)
	case m.Verb == proto.VerbPublish:
		id = nextPub(s, id, gqlUnawaitedTag)
	default:
		id = nextSub(s, id)
	}
	return appendSubscribe(dst, id[n:], m.Topic, m.Body), proto.OpText, id, nil
}

// Rooms (proto.Rooms): room N is the subscription
//
//	subscription($room:String!){message(room:$room)}   room = "room.N"
//
// fed by the mutation publish(room, data). GraphQL has no binary: data is
// the broadcast message (marker and payload) in base64. graphql-ws has no
// subscription acknowledgement, so the subscription's first result must be
// null, sent once it is live (examples/graphql-ws/server.js): it answers
// the join, and a publish never races ahead of a subscriber.
const (
	gqlRoomSubscription = `subscription($room:String!){message(room:$room)}`
	gqlRoomMutation     = `mutation($room:String!,$data:String!){publish(room:$room,data:$data)}`
	gqlRoomPrefix       = "room."
)

func (p *graphQLWS) JoinRoom(dst []byte, s *proto.Conn, room int64, id []byte) ([]byte, byte, []byte, bool) {
	n := len(id)
	id = nextSub(s, id)
	dst = append(dst, `{"id":"`...)
	dst = append(dst, id[n:]...)
	dst = append(dst, `","type":"subscribe","payload":{"query":"`+gqlRoomSubscription+`","variables":{"room":"`+gqlRoomPrefix...)
	dst = strconv.AppendInt(dst, room, 10)
	return append(dst, `"}}}`...), proto.OpText, id, true
}

func (p *graphQLWS) PublishRoom(dst []byte, s *proto.Conn, room int64, payload []byte) ([]byte, byte) {
	dst = append(dst, `{"id":"`...)
	dst = nextPub(s, dst, gqlUnawaitedTag) // its result is dropped on arrival
	dst = append(dst, `","type":"subscribe","payload":{"query":"`+gqlRoomMutation+`","variables":{"room":"`+gqlRoomPrefix...)
	dst = strconv.AppendInt(dst, room, 10)
	dst = append(dst, `","data":"`...)
	dst = proto.B64.AppendEncode(dst, payload)
	return append(dst, `"}}}`...), proto.OpText
}

// delivery: a next whose payload is {"data":{"message":"<base64>"}} (a
// null message is the subscription's first result, not a delivery).
func (*graphQLWS) Delivery(m *proto.Message, scratch []byte) ([]byte, bool) {
	if m.Type != proto.MsgNext || len(m.Body) == 0 {
		return nil, false
	}
	r := gjson.Get(unsafe.String(unsafe.SliceData(m.Body), len(m.Body)), "data.message")
	if r.Type != gjson.String || r.Index <= 0 {
		return nil, false
	}
	return proto.B64Payload(m.Body[r.Index:r.Index+len(r.Raw)], scratch)
}

var (
	_ proto.Rooms      = (*graphQLWS)(nil)
	_ proto.Answerer   = (*graphQLWS)(nil)
	_ proto.CloseNamer = (*graphQLWS)(nil)
)

// reasonGQLError is an error answer without a message.
const reasonGQLError proto.Reason = "graphql error"

// gqlErrorWhy is an error answer's reason: "graphql error" and its first
// error's message, clipped ("graphql error: Forbidden").
func gqlErrorWhy(payload []byte) proto.Reason {
	var msg []byte
	message := func(k, v []byte) bool {
		if string(k) == "message" {
			msg, _ = proto.JSONText(v)
			return false
		}
		return true
	}
	if p := bytes.TrimSpace(payload); len(p) > 0 && p[0] == '{' {
		proto.JSONMembers(p, message) // one error, not a list (older servers)
	} else {
		proto.JSONMembers(p, func(_, e []byte) bool {
			proto.JSONMembers(e, message)
			return false // the first error
		})
	}
	if len(msg) == 0 {
		return reasonGQLError
	}
	var buf [128]byte
	b := proto.AppendJSONText(append(buf[:0], "graphql error: "...), proto.ClipText(msg, 80))
	return proto.Intern(proto.ClipText(b, len("graphql error: ")+40))
}
