package client

import (
	"fmt"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/wsplan/wsplan/internal/script"
)

// Protocols over WebSocket. A server may speak a protocol on top of its
// messages (Socket.IO, GraphQL over WebSocket, MQTT, STOMP, JSON-RPC):
// it lives here, below every kind, one file per protocol, each
// registering a wireProtocol. The loop, for a connection of a client
// whose Options name a protocol:
//
//   - after the upgrade, runs the protocol's greeting (stGreeting: its
//     handshake, e.g. MQTT CONNECT/CONNACK) before the connection counts
//     as open; a refusal fails the attempt with the protocol's reason;
//   - hands every whole message to the protocol's decode, which answers
//     what the protocol answers itself (keepalives, on the server's
//     schedule, never counted as a run's message) and returns the
//     application's messages (l.msgs) that the run gets through onMessage;
//   - calls the protocol's tick for what it owes the server by time
//     (MQTT PINGREQ, STOMP heart-beats) every protoTick;
//   - encodes the verbs runs send (emit, publish, subscribe, call …).
//
// Kinds do not know which protocol they speak: they send outMsgs and
// receive messages.

// Protocol names (Options.Protocol.Name).
const (
	ProtoRaw = "" // WebSocket messages as they are
)

// ProtocolOptions name the protocol a server speaks and its settings;
// zero = raw messages. Plain data: shards get it as JSON.
type ProtocolOptions struct {
	Name string `json:"name,omitempty"`
	// Version is the protocol's version where it has several: mqtt
	// "3.1.1" (the default) or "5".
	Version string `json:"version,omitempty"`
	// Namespace is Socket.IO's namespace; "" = "/".
	Namespace string `json:"namespace,omitempty"`
	// Keepalive is how often the client must show it is alive: MQTT's
	// keepalive, STOMP's client heart-beat; 0 = the protocol's default.
	Keepalive time.Duration `json:"keepalive,omitempty"`
	// Username and Password log in (MQTT CONNECT, STOMP login/passcode).
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// Host is STOMP's virtual host (the CONNECT frame's host header); "" =
	// "/", RabbitMQ's default virtual host.
	Host string `json:"host,omitempty"`
	// Init is GraphQL over WebSocket's connection_init payload (JSON).
	Init string `json:"init,omitempty"`
}

// message kinds: what an application message is, as its protocol says
// (internal/script's types, which expects match).
const (
	msgData     = script.TypeData     // a raw message, or a protocol's plain message
	msgEvent    = script.TypeEvent    // Socket.IO event, rpc-websockets notification, STOMP MESSAGE, MQTT PUBLISH from the broker
	msgAck      = script.TypeAck      // a reply to a request: Socket.IO ack, JSON-RPC response, MQTT PUBACK/SUBACK, STOMP RECEIPT
	msgNext     = script.TypeNext     // GraphQL next
	msgComplete = script.TypeComplete // GraphQL complete
	msgError    = script.TypeError    // a protocol's error reply (GraphQL error, STOMP ERROR, JSON-RPC error)
)

// message is one application message a protocol decoded: its type,
// topic, correlation id and body (pointing into the loop's buffers: valid
// during the run's onMessage), and the WebSocket opcode it came in.
type message struct {
	script.Msg
	op byte
	// grant is 1 + the QoS an answer grants or completes (MQTT: PUBACK
	// 1, PUBCOMP 2, SUBACK the QoS granted); 0 = the answer has no level.
	// An answer below what its request asked for is a downgrade.
	grant uint8
	// why says what an error answer, or an answer that is a downgrade,
	// is in the protocol's words, with its code: "mqtt 0x87 not
	// authorized", "jsonrpc -32601", "mqtt PUBACK to a QoS 2 publish";
	// "" = the protocol has none. A constant or interned (internReason):
	// counting it allocates nothing.
	why Reason
}

// newMessage is a message of kind with its parts.
func newMessage(kind uint8, op byte, topic, id, body []byte) message {
	return message{Msg: script.Msg{Type: kind, Topic: topic, ID: id, Body: body}, op: op}
}

// answerMessage is a protocol's answer to a request (kind msgAck or
// msgError) that grants a level or says why.
func answerMessage(kind uint8, op byte, id, body []byte, grant uint8, why Reason) message {
	m := newMessage(kind, op, nil, id, body)
	m.grant, m.why = grant, why
	return m
}

// clipText is at most n bytes of b, cut at a character's start.
func clipText(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

// maxReasons bounds the reasons internReason keeps: past it, each is a
// string of its own (a server that varies its error text per request
// costs an allocation per error answer, nothing else).
const maxReasons = 1024

var (
	reasonsMu sync.RWMutex
	reasons   = map[string]Reason{}
)

// internReason returns b as a Reason, the same string each time the same
// bytes come: an error answer's code costs no allocation after the
// first.
func internReason(b []byte) Reason {
	reasonsMu.RLock()
	r, ok := reasons[string(b)]
	reasonsMu.RUnlock()
	if ok {
		return r
	}
	r = Reason(b)
	reasonsMu.Lock()
	if len(reasons) < maxReasons {
		reasons[string(r)] = r
	}
	reasonsMu.Unlock()
	return r
}

// answer reports whether a message of type t can be a protocol's answer
// to a request (ByID expects take only those).
func answer(t uint8) bool {
	return t == msgAck || t == msgNext || t == msgComplete || t == msgError
}

// verbCodes are the script's verbs as outMsg verbs.
var verbCodes = map[string]uint8{
	script.VerbSend: verbSend, script.VerbEmit: verbEmit, script.VerbCall: verbCall, script.VerbNotify: verbNotify,
	script.VerbPublish: verbPublish, script.VerbSubscribe: verbSubscribe, script.VerbUnsubscribe: verbUnsubscribe,
}

// hasVerb reports whether p speaks verb v.
func hasVerb(p wireProtocol, v uint8) bool {
	for _, x := range p.verbs() {
		if x == v {
			return true
		}
	}
	return false
}

// ProtocolRooms reports whether a protocol carries the broadcast phase's
// rooms (roomProtocol); raw messages carry them as /broadcast?room=N.
func ProtocolRooms(name string) bool {
	if name == ProtoRaw {
		return true
	}
	p, err := makeProtocol(ProtocolOptions{Name: name})
	if err != nil {
		return false
	}
	_, ok := p.(roomProtocol)
	return ok
}

// answerer is a protocol whose answers to the script's verbs are not
// script.DefaultAnswers' (GraphQL over WebSocket's operations are
// awaited when the step wants their result).
type answerer interface {
	answers(verb string, ack, asks bool, qos int) bool
}

// answerRule returns the rule of p's answers to verbs; nil for raw
// messages (which have no verbs).
func answerRule(p wireProtocol) script.AnswerRule {
	if p == nil {
		return nil
	}
	if a, ok := p.(answerer); ok {
		return a.answers
	}
	return script.DefaultAnswers
}

// ProtocolAnswers returns the rule of a protocol's answers to the
// script's verbs; nil for raw messages or an unknown protocol.
func ProtocolAnswers(name string) script.AnswerRule {
	p, err := makeProtocol(ProtocolOptions{Name: name})
	if err != nil {
		return nil
	}
	return answerRule(p)
}

// defaulter is a protocol with settings that default when the plan leaves
// them out (mqtt's version and keepalive, ...).
type defaulter interface {
	defaults(o ProtocolOptions) ProtocolOptions
}

// ProtocolSettings returns o with the protocol's defaults filled in: what
// the client will use (wsplan validate prints it). An unknown protocol's
// options come back as they are.
func ProtocolSettings(o ProtocolOptions) ProtocolOptions {
	p, err := makeProtocol(ProtocolOptions{Name: o.Name})
	if err != nil {
		return o
	}
	if d, ok := p.(defaulter); ok {
		return d.defaults(o)
	}
	return o
}

// ProtocolVerbs returns the script verbs a protocol speaks (send is
// every protocol's plain message); nil for an unknown protocol.
func ProtocolVerbs(name string) []string {
	if name == ProtoRaw {
		return []string{script.VerbSend}
	}
	p, err := makeProtocol(ProtocolOptions{Name: name})
	if err != nil {
		return nil
	}
	var out []string
	for _, v := range p.verbs() {
		for name, code := range verbCodes {
			if code == v {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// outMsg is a message a run sends through its connection's protocol.
type outMsg struct {
	verb   uint8
	topic  []byte // event, method, topic, destination
	body   []byte // rendered payload
	qos    uint8
	ack    bool // ask for an acknowledgement (Socket.IO ack, STOMP receipt)
	binary bool
	// awaited says the run waits for the protocol's answer (the id
	// encode returns); a protocol may drop the answers nobody awaits.
	awaited bool
}

// Verbs (outMsg.verb).
const (
	verbSend        uint8 = iota // the body as the protocol's plain message
	verbEmit                     // Socket.IO event
	verbCall                     // JSON-RPC request
	verbNotify                   // JSON-RPC notification
	verbPublish                  // MQTT PUBLISH, STOMP SEND, GraphQL mutation
	verbSubscribe                // MQTT SUBSCRIBE, STOMP SUBSCRIBE, GraphQL subscribe
	verbUnsubscribe              // MQTT UNSUBSCRIBE, STOMP UNSUBSCRIBE, GraphQL complete
)

// protoConn is a protocol's state on one connection (in connSec).
type protoConn struct {
	buf      []byte // a message in pieces; a protocol may append to it while it decodes (reset after the run took the messages)
	part     []byte // bytes a protocol keeps across messages (MQTT's partial packet, STOMP's partial frame): part[partAt:] (input, keep)
	partAt   int    // where the kept bytes begin (those before are consumed; compacted by the protocol)
	lastSent int64  // loop clock of the last write
	lastRecv int64  // of the last message
	every    int64  // keepalive interval, ns; 0 = none
	silence  int64  // how long the server may stay silent, ns, where the protocol says; 0 = no limit
	ids      uint64 // the last packet / ack / receipt id used
	// quota is how many QoS > 0 publishes the server lets the connection
	// have unanswered at once (MQTT 5's Receive Maximum, from CONNACK); 0
	// = it set none. A script waits rather than send past it.
	quota uint16
	state uint8 // the protocol's own
}

// input returns the bytes a protocol decodes: msg, or the partial
// packet or frame kept from earlier messages with msg after it
// (fromPart).
func (s *protoConn) input(msg []byte) (data []byte, fromPart bool) {
	if len(s.part) == 0 {
		return msg, false
	}
	if s.partAt > 0 { // the messages decoded from part's start were taken
		s.part = s.part[:copy(s.part, s.part[s.partAt:])]
		s.partAt = 0
	}
	s.part = append(s.part, msg...)
	return s.part, true
}

// keep keeps data[off:] (from input), a packet's or frame's first part,
// for the next message. The messages decoded from data stay valid until
// the run took them.
func (s *protoConn) keep(data []byte, off int, fromPart bool) {
	switch {
	case off == len(data):
		s.partAt = 0
		if cap(s.part) > 64<<10 {
			s.part = nil // do not keep a large packet's buffer per connection
		} else {
			s.part = s.part[:0]
		}
	case fromPart:
		s.partAt = off // compacted by the next input
	default:
		s.part = append(s.part[:0], data[off:]...)
	}
}

// wireProtocol is one protocol on the loop. Methods run on the loop's
// goroutine; a failure Reason drops the connection with it.
type wireProtocol interface {
	// subprotocols are offered in the upgrade when the plan offers none.
	subprotocols() []string
	// greet begins the handshake of a connection whose upgrade just
	// completed (writing the protocol's first messages); done when there
	// is nothing to wait for.
	greet(l *loop, c *conn, s *protoConn, now int64) (done bool, fail Reason)
	// greeting takes a whole message during the handshake.
	greeting(l *loop, c *conn, s *protoConn, op byte, msg []byte, now int64) (done bool, fail Reason)
	// waiting is the reason of a greeting that timed out: what the
	// protocol was still waiting for ("mqtt: no CONNACK").
	waiting(s *protoConn) Reason
	// decode takes a whole message after the handshake: answers what the
	// protocol answers itself and appends the application's messages to
	// l.msgs.
	decode(l *loop, c *conn, s *protoConn, op byte, msg []byte, now int64) Reason
	// tick sends what the protocol owes the server by now (keepalives).
	tick(l *loop, c *conn, s *protoConn, now int64) Reason
	// encode appends m as the payload of one WebSocket message to dst,
	// with its opcode, and the correlation id its reply will carry
	// (appended to id; unchanged when none).
	encode(dst []byte, s *protoConn, m *outMsg, id []byte) (out []byte, op byte, idOut []byte, err error)
	// verbs says which verbs the protocol has.
	verbs() []uint8
}

// roomProtocol is a protocol that carries the broadcast phase's rooms:
// each maps a room to what it fans out through (an MQTT topic, a STOMP
// destination, a Socket.IO room the app joins on an event, a GraphQL
// subscription fed by a mutation) and carries the phase's messages
// (marker and payload) in its own messages.
type roomProtocol interface {
	// joinRoom appends the message that makes c a subscriber of room to
	// dst, with its opcode; answered says the protocol answers it (SUBACK,
	// receipt, ack), and idOut is the id that answer will carry (appended
	// to id). A subscriber counts as ready once answered.
	joinRoom(dst []byte, s *protoConn, room int64, id []byte) (out []byte, op byte, idOut []byte, answered bool)
	// publishRoom appends the message that publishes payload (the
	// broadcast marker and bytes; binary) to room.
	publishRoom(dst []byte, s *protoConn, room int64, payload []byte) (out []byte, op byte)
	// delivery returns the broadcast payload a decoded message carries
	// (decoded into scratch where the protocol had to encode it as text),
	// ok false for a message that is not a delivery.
	delivery(m *message, scratch []byte) (payload []byte, ok bool)
}

// closeNamer is a protocol with close codes of its own (graphql-ws's
// 4401 unauthorized, 4403 forbidden …): a server's close frame with one
// fails the connection with the protocol's reason, which keeps the
// frame's text (the server's words); "" = the usual "server close
// <code>". refused says the code refuses the client (refusal.go).
type closeNamer interface {
	closeReason(code uint16, text []byte) (r Reason, refused bool)
}

// newProtocol makes a protocol for a client's options.
type newProtocol func(o ProtocolOptions) (wireProtocol, error)

var (
	protosMu sync.RWMutex
	protos   = map[string]newProtocol{}
)

// registerProtocol adds a protocol; protocol files call it from init.
func registerProtocol(name string, f newProtocol) {
	protosMu.Lock()
	defer protosMu.Unlock()
	if _, dup := protos[name]; dup {
		panic("client: duplicate protocol " + name)
	}
	protos[name] = f
}

// Protocols returns the names of the protocols the client speaks, sorted.
func Protocols() []string {
	protosMu.RLock()
	defer protosMu.RUnlock()
	out := make([]string, 0, len(protos))
	for n := range protos {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// CheckProtocol reports what is wrong with a protocol's settings (an
// unknown name, an MQTT version other than 3.1.1 and 5, …), so that a
// plan fails when it loads rather than when its phase starts.
func CheckProtocol(o ProtocolOptions) error {
	_, err := makeProtocol(o)
	return err
}

// Subprotocols are the subprotocols a connection offers in its upgrade,
// in order: offered (the plan's subprotocols:) when it names any, else
// the protocol of o's own (mqtt, graphql-transport-ws, v12.stomp …;
// none for raw messages and protocols without one). The client's
// connections and the engine's probe of a target both offer these.
func Subprotocols(offered []string, o ProtocolOptions) ([]string, error) {
	p, err := makeProtocol(o)
	if err != nil {
		return nil, err
	}
	return offeredSubprotocols(offered, p), nil
}

// offeredSubprotocols is Subprotocols with the protocol made (nil = raw).
func offeredSubprotocols(offered []string, p wireProtocol) []string {
	if len(offered) > 0 || p == nil {
		return offered
	}
	return p.subprotocols()
}

// makeProtocol returns the protocol of o, nil for raw messages.
func makeProtocol(o ProtocolOptions) (wireProtocol, error) {
	if o.Name == ProtoRaw {
		return nil, nil
	}
	protosMu.RLock()
	f, ok := protos[o.Name]
	protosMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("client: unknown protocol %q (want one of %v)", o.Name, Protocols())
	}
	return f(o)
}

// protoTick is how often the loop lets protocols send what they owe.
const protoTick = 200 * time.Millisecond

// protoOf returns c's protocol state, nil for a raw connection.
func protoOf(c *conn) *protoConn {
	if c.sec == nil {
		return nil
	}
	return c.sec.proto
}

// startGreeting runs after c's upgrade: a connection of a protocol greets
// (stGreeting) and reports whether it is open already.
func (l *loop) startGreeting(c *conn, now int64) (open bool, fail Reason) {
	p := l.cl.proto
	if p == nil {
		return true, ""
	}
	if c.sec == nil {
		c.sec = &connSec{}
	}
	c.sec.proto = &protoConn{lastRecv: now}
	c.state = stGreeting
	return p.greet(l, c, c.sec.proto, now)
}

// protoData takes a chunk of a data message on a protocol's connection
// (inflated already): whole messages go to the protocol.
func (l *loop) protoData(c *conn, s *protoConn, ev *event, now int64) {
	msg := ev.data
	if !ev.end || int64(len(ev.data)) != ev.total {
		s.buf = append(s.buf, ev.data...)
		if !ev.end {
			return
		}
		msg = s.buf
	}
	s.lastRecv = now
	p := l.cl.proto
	if c.state == stGreeting {
		done, fail := p.greeting(l, c, s, ev.op, msg, now)
		s.buf = s.buf[:0]
		switch {
		case fail != "":
			l.lost(c, fail)
		case done:
			l.greeted(c, now)
		}
		return
	}
	l.msgs = l.msgs[:0]
	fail := p.decode(l, c, s, ev.op, msg, now)
	// Messages decoded before a failure are delivered first (a STOMP
	// ERROR frame answers a request, then ends the connection).
	for i := range l.msgs {
		if c.state != stOpen {
			break
		}
		if r := l.ph; r != nil {
			r.onMessage(l, c, &l.msgs[i], now)
		}
	}
	if fail != "" {
		s.buf = s.buf[:0]
		if c.state == stOpen {
			l.lost(c, fail)
		}
		return
	}
	if cap(s.buf) > 64<<10 {
		s.buf = nil
	} else {
		s.buf = s.buf[:0]
	}
}

// protoKeepalive lets the protocol send what it owes on every open
// connection.
func (l *loop) protoKeepalive(now int64) {
	p := l.cl.proto
	for i := len(l.open) - 1; i >= 0; i-- {
		if i >= len(l.open) {
			continue
		}
		c := l.open[i]
		if s := protoOf(c); s != nil {
			if fail := p.tick(l, c, s, now); fail != "" {
				l.lost(c, fail)
			}
		}
	}
}

// sendProto writes one protocol message (payload b, opcode op) on c as a
// WebSocket frame; what the socket does not take waits in order.
func (l *loop) sendProto(c *conn, op byte, b []byte) {
	l.cbuf = appendClientHeader(l.cbuf[:0], op, len(b), 0)
	key := uint32(l.rng.Uint64())
	hl := len(l.cbuf)
	l.cbuf[hl-4], l.cbuf[hl-3], l.cbuf[hl-2], l.cbuf[hl-1] = byte(key), byte(key>>8), byte(key>>16), byte(key>>24)
	l.cbuf = append(l.cbuf, b...)
	maskCopy(l.cbuf[hl:], l.cbuf[hl:], key, 0)
	if c.flags&fWantOut != 0 {
		x := l.getExt(c)
		x.out = append(x.out, l.cbuf...)
		return
	}
	l.writeOrQueue(c, l.cbuf)
}
