package client

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
// members, read in place (proto_json.go); Go's GraphQL clients
// (hasura/go-graphql-client and others) run a goroutine per connection
// and decode into values.

// ProtoGraphQLWS is GraphQL over WebSocket's name.
const ProtoGraphQLWS = "graphql-ws"

// GraphQLWSSubprotocol is what the client offers in the upgrade.
const GraphQLWSSubprotocol = "graphql-transport-ws"

func init() { registerProtocol(ProtoGraphQLWS, newGraphQLWS) }

type graphQLWS struct {
	init  []byte // connection_init's payload (JSON object); nil = none
	every int64  // client ping interval, ns; 0 = none
}

func newGraphQLWS(o ProtocolOptions) (wireProtocol, error) {
	p := &graphQLWS{every: int64(o.Keepalive)}
	if o.Init != "" {
		b := bytes.TrimSpace([]byte(o.Init))
		if len(b) == 0 || b[0] != '{' || !gjson.ValidBytes(b) {
			// Never the value: an init carries credentials.
			return nil, fmt.Errorf("client: graphql-ws: init must be a JSON object (connection_init's payload): %s", jsonProblem(b))
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

// Greeting states (protoConn.state).
const (
	gqlWaitAck = iota
	gqlOpen
)

// Reasons a graphql-ws connection fails with.
const (
	reasonGQLNoAck      Reason = "graphql-ws: no connection_ack"
	reasonGQLNoPong     Reason = "graphql-ws: no pong within 2 × keepalive"
	reasonGQLBadMessage Reason = "graphql-ws: a message that is not a JSON object with a type"
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

// closeReason implements closeNamer: "graphql-ws: forbidden (4403)", and
// the server's words when they say more than the code's name (": Token
// expired"). 4401 and 4403 are refusals.
func (*graphQLWS) closeReason(code uint16, text []byte) (Reason, bool) {
	name, ok := gqlCloses[code]
	if !ok {
		return "", false
	}
	r := "graphql-ws: " + name + " (" + strconv.Itoa(int(code)) + ")"
	if w := serverWords(text); w != "" && !strings.EqualFold(w, name) {
		r += ": " + w
	}
	return Reason(r), code == 4401 || code == 4403
}

func (*graphQLWS) subprotocols() []string { return []string{GraphQLWSSubprotocol} }

func (*graphQLWS) waiting(*protoConn) Reason { return reasonGQLNoAck }

func (*graphQLWS) verbs() []uint8 {
	return []uint8{verbSend, verbSubscribe, verbPublish, verbUnsubscribe}
}

// answers implements answerer: a subscribe is answered by its first
// result (or error), a publish (a mutation) by its only one — when the
// step wants it (as:, reply:, capture:); else the client does not wait
// (a mutation's result is then dropped, a subscription's results are
// the events later expects take). An unsubscribe (complete) is never
// answered.
func (*graphQLWS) answers(verb string, _, asks bool, _ int) bool {
	return asks && (verb == script.VerbSubscribe || verb == script.VerbPublish)
}

func (p *graphQLWS) greet(l *loop, c *conn, s *protoConn, _ int64) (bool, Reason) {
	b := append(l.pbuf[:0], `{"type":"connection_init"`...)
	if p.init != nil {
		b = append(append(b, `,"payload":`...), p.init...)
	}
	l.pbuf = append(b, '}')
	l.sendProto(c, opText, l.pbuf)
	s.state = gqlWaitAck
	return false, ""
}

// gqlMsg is a message's envelope, slices of the message.
type gqlMsg struct {
	typ, id, payload []byte
}

// parseGQL reads a message's type, id and payload in place.
func parseGQL(msg []byte) (g gqlMsg, ok bool) {
	ok = jsonMembers(msg, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			g.typ, _ = jsonText(v)
		case "id":
			g.id, _ = jsonText(v)
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

func (p *graphQLWS) greeting(l *loop, c *conn, s *protoConn, _ byte, msg []byte, now int64) (bool, Reason) {
	g, ok := parseGQL(msg)
	if !ok {
		return false, reasonGQLBadMessage
	}
	switch string(g.typ) {
	case "connection_ack":
		s.state = gqlOpen
		s.every, s.lastSent = p.every, now
		return true, ""
	case "ping":
		l.sendProto(c, opText, gqlPong)
		return false, ""
	case "pong":
		return false, ""
	case "connection_error": // mercurius' refusal: {"message":"Forbidden"}, then a close
		return false, refuse(c, Reason("graphql-ws: connection_error: "+jsonWords(g.payload)))
	}
	return false, Reason("graphql-ws: " + clip(g.typ) + " before connection_ack")
}

func (p *graphQLWS) decode(l *loop, c *conn, _ *protoConn, op byte, msg []byte, _ int64) Reason {
	g, ok := parseGQL(msg)
	if !ok {
		return reasonGQLBadMessage
	}
	switch string(g.typ) {
	case "next":
		if len(g.id) > 0 && g.id[0] == gqlUnawaitedTag {
			return "" // the result of a mutation nobody waits for
		}
		l.msgs = append(l.msgs, newMessage(msgNext, op, nil, g.id, g.payload))
	case "error":
		l.msgs = append(l.msgs, answerMessage(msgError, op, g.id, g.payload, 0, gqlErrorWhy(g.payload)))
	case "complete":
		if len(g.id) > 0 && (g.id[0] == gqlAwaitedTag || g.id[0] == gqlUnawaitedTag) {
			return "" // a mutation's end, after its one result
		}
		l.msgs = append(l.msgs, newMessage(msgComplete, op, nil, g.id, nil))
	case "ping":
		l.sendProto(c, opText, gqlPong)
	case "pong", "connection_ack":
	default:
		return Reason("graphql-ws: unexpected message type " + clip(g.typ))
	}
	return ""
}

// tick pings the server when the client has sent nothing for a
// keepalive (when set; any write counts), and fails a connection the
// server has sent nothing on for two of them.
func (p *graphQLWS) tick(l *loop, c *conn, s *protoConn, now int64) Reason {
	if s.every <= 0 || s.state != gqlOpen {
		return ""
	}
	if now-s.lastRecv > 2*s.every+int64(protoTick) { // a tick late at most
		return reasonGQLNoPong
	}
	if now-s.lastSent >= s.every {
		l.sendProto(c, opText, gqlPing)
		s.lastSent = now
	}
	return ""
}

// Operation ids: a connection's subscriptions are "1", "2", … in order
// (the low half of protoConn.ids), so a script can name one to stop; its
// mutations (publishes) are "p1", "p2", … when awaited, "q1", "q2", …
// when not (the high half): a mutation's complete, and the result of one
// nobody awaits, are dropped, never taken for a subscription's. (An
// error is kept: an unawaited mutation that failed shows as unexpected.)
const (
	gqlAwaitedTag   = 'p'
	gqlUnawaitedTag = 'q'
)

// nextSub returns the next subscription id, appended to id.
func nextSub(s *protoConn, id []byte) []byte {
	s.ids = s.ids&^0xffffffff | (s.ids+1)&0xffffffff
	return strconv.AppendUint(id, s.ids&0xffffffff, 10)
}

// nextPub returns the next publish id with its tag, appended to id.
func nextPub(s *protoConn, id []byte, tag byte) []byte {
	s.ids += 1 << 32
	return strconv.AppendUint(append(id, tag), s.ids>>32, 10)
}

// appendSubscribe appends a subscribe message: operation id, the query's
// text (to be escaped), and its variables (JSON; none when empty).
func appendSubscribe(dst, id, query, vars []byte) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, id...)
	dst = append(dst, `","type":"subscribe","payload":{"query":`...)
	dst = appendJSONString(dst, query)
	if len(vars) > 0 {
		dst = append(append(dst, `,"variables":`...), vars...)
	}
	return append(dst, "}}"...)
}

func (p *graphQLWS) encode(dst []byte, s *protoConn, m *outMsg, id []byte) ([]byte, byte, []byte, error) {
	switch m.verb {
	case verbSend:
		return append(dst, m.body...), opText, id, nil
	case verbUnsubscribe:
		dst = append(dst, `{"id":`...)
		dst = appendJSONString(dst, m.topic)
		return append(dst, `,"type":"complete"}`...), opText, id, nil
	}
	if vars := bytes.TrimSpace(m.body); len(vars) > 0 && (vars[0] != '{' || !gjson.ValidBytes(vars)) {
		return dst, opText, id, fmt.Errorf("graphql-ws: variables must be a JSON object, got %s", clip(vars))
	}
	n := len(id)
	switch {
	case m.verb == verbPublish && m.awaited:
		id = nextPub(s, id, gqlAwaitedTag)
	case m.verb == verbPublish:
		id = nextPub(s, id, gqlUnawaitedTag)
	default:
		id = nextSub(s, id)
	}
	return appendSubscribe(dst, id[n:], m.topic, m.body), opText, id, nil
}

// Rooms (roomProtocol): room N is the subscription
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

func (p *graphQLWS) joinRoom(dst []byte, s *protoConn, room int64, id []byte) ([]byte, byte, []byte, bool) {
	n := len(id)
	id = nextSub(s, id)
	dst = append(dst, `{"id":"`...)
	dst = append(dst, id[n:]...)
	dst = append(dst, `","type":"subscribe","payload":{"query":"`+gqlRoomSubscription+`","variables":{"room":"`+gqlRoomPrefix...)
	dst = strconv.AppendInt(dst, room, 10)
	return append(dst, `"}}}`...), opText, id, true
}

func (p *graphQLWS) publishRoom(dst []byte, s *protoConn, room int64, payload []byte) ([]byte, byte) {
	dst = append(dst, `{"id":"`...)
	dst = nextPub(s, dst, gqlUnawaitedTag) // its result is dropped on arrival
	dst = append(dst, `","type":"subscribe","payload":{"query":"`+gqlRoomMutation+`","variables":{"room":"`+gqlRoomPrefix...)
	dst = strconv.AppendInt(dst, room, 10)
	dst = append(dst, `","data":"`...)
	dst = b64.AppendEncode(dst, payload)
	return append(dst, `"}}}`...), opText
}

// delivery: a next whose payload is {"data":{"message":"<base64>"}} (a
// null message is the subscription's first result, not a delivery).
func (*graphQLWS) delivery(m *message, scratch []byte) ([]byte, bool) {
	if m.Type != msgNext || len(m.Body) == 0 {
		return nil, false
	}
	r := gjson.Get(unsafe.String(unsafe.SliceData(m.Body), len(m.Body)), "data.message")
	if r.Type != gjson.String || r.Index <= 0 {
		return nil, false
	}
	return b64Payload(m.Body[r.Index:r.Index+len(r.Raw)], scratch)
}

var (
	_ roomProtocol = (*graphQLWS)(nil)
	_ answerer     = (*graphQLWS)(nil)
	_ closeNamer   = (*graphQLWS)(nil)
)

// reasonGQLError is an error answer without a message.
const reasonGQLError Reason = "graphql error"

// gqlErrorWhy is an error answer's reason: "graphql error" and its first
// error's message, clipped ("graphql error: Forbidden").
func gqlErrorWhy(payload []byte) Reason {
	var msg []byte
	message := func(k, v []byte) bool {
		if string(k) == "message" {
			msg, _ = jsonText(v)
			return false
		}
		return true
	}
	if p := bytes.TrimSpace(payload); len(p) > 0 && p[0] == '{' {
		jsonMembers(p, message) // one error, not a list (older servers)
	} else {
		jsonMembers(p, func(_, e []byte) bool {
			jsonMembers(e, message)
			return false // the first error
		})
	}
	if len(msg) == 0 {
		return reasonGQLError
	}
	var buf [128]byte
	b := appendJSONText(append(buf[:0], "graphql error: "...), clipText(msg, 80))
	return internReason(clipText(b, len("graphql error: ")+40))
}
