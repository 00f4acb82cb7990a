// Package proto is what the protocols over WebSocket share (Socket.IO,
// GraphQL over WebSocket, MQTT, STOMP, JSON-RPC): the messages they
// decode and encode, the state they keep per connection, the interface a
// protocol implements, and the registry the client and the plan loader
// find them in.
//
// A protocol is a package of its own below this one (internal/proto/mqtt,
// …): a codec and a state machine over bytes that imports nothing of the
// event loop. It registers itself from init with Register, declaring its
// settings as one struct with decl tags. The event loop (internal/client)
// reaches the protocols only through this package, by one adapter; the
// blank imports of internal/proto/all put the built-in ones in the
// registry. For a connection of a client whose options name a protocol,
// the loop:
//
//   - after the upgrade, calls Greet (the protocol's handshake, e.g. MQTT
//     CONNECT/CONNACK) and then Greeting with each whole message until it
//     is done; only then does the connection count as open, and a
//     refusal fails the attempt with the protocol's reason;
//   - hands every whole message to Decode, which answers what the
//     protocol answers itself (keepalives, on the server's schedule,
//     never counted as a run's message) and appends the application's
//     messages to Env.Msgs, which the run gets;
//   - calls Tick, every TickEvery, for what the protocol owes the server
//     by time (MQTT PINGREQ, STOMP heart-beats);
//   - calls Encode for the verbs runs send (emit, publish, subscribe,
//     call …).
//
// Kinds do not know which protocol they speak: they send Out messages
// and receive Messages. Every method runs on the loop's goroutine and
// must not allocate in steady state.
//
// proto imports only the client's leaves (internal/script, decl, units):
// internal/layering lists it, and each protocol package, in
// ClientLeaves.
package proto

import (
	"time"

	"github.com/wsplan/wsplan/internal/script"
)

// Reason says why a connection failed or what an answer is, in the
// protocol's words ("mqtt: no CONNACK", "jsonrpc -32601"). The client
// counts reasons by value: a protocol uses constants or Intern, so that
// counting one allocates nothing.
type Reason string

// WebSocket opcodes of the messages a protocol reads and writes.
const (
	OpText   byte = 1
	OpBinary byte = 2
)

// TickEvery is how often the loop calls Tick on every open connection.
const TickEvery = 200 * time.Millisecond

// Message types: what an application message is, as its protocol says
// (internal/script's types, which a script's expects match).
const (
	MsgData     = script.TypeData     // a raw message, or a protocol's plain message
	MsgEvent    = script.TypeEvent    // Socket.IO event, rpc-websockets notification, STOMP MESSAGE, MQTT PUBLISH from the broker
	MsgAck      = script.TypeAck      // a reply to a request: Socket.IO ack, JSON-RPC response, MQTT PUBACK/SUBACK, STOMP RECEIPT
	MsgNext     = script.TypeNext     // GraphQL next
	MsgComplete = script.TypeComplete // GraphQL complete
	MsgError    = script.TypeError    // a protocol's error reply (GraphQL error, STOMP ERROR, JSON-RPC error)
)

// Message is one application message a protocol decoded: its type,
// topic, correlation id and body (pointing into the loop's buffers or
// Conn.Buf: valid until the run took the messages), and the WebSocket
// opcode it came in.
type Message struct {
	script.Msg
	Op byte
	// Grant is 1 + the QoS an answer grants or completes (MQTT: PUBACK
	// 1, PUBCOMP 2, SUBACK the QoS granted); 0 = the answer has no level.
	// An answer below what its request asked for is a downgrade.
	Grant uint8
	// Why says what an error answer, or an answer that is a downgrade,
	// is in the protocol's words, with its code: "mqtt 0x87 not
	// authorized", "jsonrpc -32601", "mqtt PUBACK to a QoS 2 publish";
	// "" = the protocol has none. A constant or interned (Intern).
	Why Reason
}

// NewMessage is a message of type t with its parts.
func NewMessage(t uint8, op byte, topic, id, body []byte) Message {
	return Message{Msg: script.Msg{Type: t, Topic: topic, ID: id, Body: body}, Op: op}
}

// Answer is a protocol's answer to a request (type MsgAck or MsgError)
// that grants a level or says why.
func Answer(t uint8, op byte, id, body []byte, grant uint8, why Reason) Message {
	m := NewMessage(t, op, nil, id, body)
	m.Grant, m.Why = grant, why
	return m
}

// IsAnswer reports whether a message of type t can be a protocol's
// answer to a request (a script's by-id expects take only those).
func IsAnswer(t uint8) bool {
	return t == MsgAck || t == MsgNext || t == MsgComplete || t == MsgError
}

// Out is a message a run sends through its connection's protocol.
type Out struct {
	Verb   uint8
	Topic  []byte // event, method, topic, destination
	Body   []byte // rendered payload
	QoS    uint8
	Ack    bool // ask for an acknowledgement (Socket.IO ack, STOMP receipt)
	Binary bool
	// Awaited says the run waits for the protocol's answer (the id
	// Encode returns); a protocol may drop the answers nobody awaits.
	Awaited bool
}

// Verbs (Out.Verb).
const (
	VerbSend        uint8 = iota // the body as the protocol's plain message
	VerbEmit                     // Socket.IO event
	VerbCall                     // JSON-RPC request
	VerbNotify                   // JSON-RPC notification
	VerbPublish                  // MQTT PUBLISH, STOMP SEND, GraphQL mutation
	VerbSubscribe                // MQTT SUBSCRIBE, STOMP SUBSCRIBE, GraphQL subscribe
	VerbUnsubscribe              // MQTT UNSUBSCRIBE, STOMP UNSUBSCRIBE, GraphQL complete
)

// VerbCodes are the script's verbs as Out verbs.
var VerbCodes = map[string]uint8{
	script.VerbSend: VerbSend, script.VerbEmit: VerbEmit, script.VerbCall: VerbCall, script.VerbNotify: VerbNotify,
	script.VerbPublish: VerbPublish, script.VerbSubscribe: VerbSubscribe, script.VerbUnsubscribe: VerbUnsubscribe,
}

// HasVerb reports whether p speaks verb v.
func HasVerb(p Protocol, v uint8) bool {
	for _, x := range p.Verbs() {
		if x == v {
			return true
		}
	}
	return false
}

// Link is the connection a call serves, as the loop gives it: a protocol
// writes its own messages on it.
type Link interface {
	// Write sends b as one WebSocket message with opcode op; what the
	// socket does not take waits in order.
	Write(op byte, b []byte)
	// Refuse marks the attempt, in its greeting, as refused by the server
	// on purpose: it is not retried.
	Refuse()
}

// Env is what a protocol reaches of the event loop it runs on: one per
// loop, passed to every call, its Link pointing at the connection served.
type Env struct {
	// Buf is scratch a protocol encodes its own messages into (kept grown
	// so that a reply allocates nothing).
	Buf []byte
	// Msgs are the application's messages Decode appends; the loop hands
	// them to the run and empties it before the next Decode.
	Msgs []Message
	// Loop is the loop's index (MQTT client ids).
	Loop int
	// Link is the connection being served.
	Link Link
}

// Write sends b with opcode op on the connection served.
func (e *Env) Write(op byte, b []byte) { e.Link.Write(op, b) }

// Refuse marks the connection's attempt as refused (no retry) and
// returns r, so that a greeting reads `return false, e.Refuse(r)`.
func (e *Env) Refuse(r Reason) Reason {
	e.Link.Refuse()
	return r
}

// Emit appends m to the messages the run gets.
func (e *Env) Emit(m Message) { e.Msgs = append(e.Msgs, m) }

// Protocol is one protocol on the loop, made from its settings for one
// client and shared by its loops: what changes per connection lives in
// Conn. A failure Reason drops the connection with it.
type Protocol interface {
	// Subprotocols are offered in the upgrade when the plan offers none.
	Subprotocols() []string
	// Greet begins the handshake of a connection whose upgrade just
	// completed (writing the protocol's first messages); done when there
	// is nothing to wait for.
	Greet(e *Env, s *Conn, now int64) (done bool, fail Reason)
	// Greeting takes a whole message during the handshake.
	Greeting(e *Env, s *Conn, op byte, msg []byte, now int64) (done bool, fail Reason)
	// Waiting is the reason of a greeting that timed out: what the
	// protocol was still waiting for ("mqtt: no CONNACK").
	Waiting(s *Conn) Reason
	// Decode takes a whole message after the handshake: answers what the
	// protocol answers itself and appends the application's messages to
	// e.Msgs.
	Decode(e *Env, s *Conn, op byte, msg []byte, now int64) Reason
	// Tick sends what the protocol owes the server by now (keepalives).
	Tick(e *Env, s *Conn, now int64) Reason
	// Encode appends m as the payload of one WebSocket message to dst,
	// with its opcode, and the correlation id its reply will carry
	// (appended to id; unchanged when none).
	Encode(dst []byte, s *Conn, m *Out, id []byte) (out []byte, op byte, idOut []byte, err error)
	// Verbs says which verbs the protocol has.
	Verbs() []uint8
}

// Rooms is a protocol that carries the broadcast phase's rooms: each
// maps a room to what it fans out through (an MQTT topic, a STOMP
// destination, a Socket.IO room the app joins on an event, a GraphQL
// subscription fed by a mutation) and carries the phase's messages
// (marker and payload) in its own messages.
type Rooms interface {
	// JoinRoom appends the message that makes the connection a subscriber
	// of room to dst, with its opcode; answered says the protocol answers
	// it (SUBACK, receipt, ack), and idOut is the id that answer will
	// carry (appended to id). A subscriber counts as ready once answered.
	JoinRoom(dst []byte, s *Conn, room int64, id []byte) (out []byte, op byte, idOut []byte, answered bool)
	// PublishRoom appends the message that publishes payload (the
	// broadcast marker and bytes; binary) to room.
	PublishRoom(dst []byte, s *Conn, room int64, payload []byte) (out []byte, op byte)
	// Delivery returns the broadcast payload a decoded message carries
	// (decoded into scratch where the protocol had to encode it as text),
	// ok false for a message that is not a delivery.
	Delivery(m *Message, scratch []byte) (payload []byte, ok bool)
}

// Answerer is a protocol whose answers to the script's verbs are not
// script.DefaultAnswers' (GraphQL over WebSocket's operations are
// awaited when the step wants their result).
type Answerer interface {
	Answers(verb string, ack, asks bool, qos int) bool
}

// AnswerRule returns the rule of p's answers to verbs; nil for raw
// messages (p nil, which have no verbs).
func AnswerRule(p Protocol) script.AnswerRule {
	if p == nil {
		return nil
	}
	if a, ok := p.(Answerer); ok {
		return a.Answers
	}
	return script.DefaultAnswers
}

// CloseNamer is a protocol with close codes of its own (graphql-ws's
// 4401 unauthorized, 4403 forbidden …): a server's close frame with one
// fails the connection with the protocol's reason, which keeps the
// frame's text (the server's words); "" = the usual "server close
// <code>". refused says the code refuses the client.
type CloseNamer interface {
	CloseReason(code uint16, text []byte) (r Reason, refused bool)
}

// MaxMessage is the largest message the loop takes, in bytes: a
// protocol's packets and frames are no larger.
const MaxMessage = 64 << 20
