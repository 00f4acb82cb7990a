package mqtt

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/units"
)

// MQTT over WebSocket, 3.1.1 and 5 (mosquitto, EMQX, HiveMQ, …): the
// subprotocol "mqtt", binary messages, and MQTT packets in them, which
// need not line up with the messages (a packet may span several, one may
// hold several): the loop reassembles them by their remaining length and
// keeps a partial packet across messages (proto.Conn.Part).
//
//	client: CONNECT (clean session, client id, keepalive, user, password)
//	broker: CONNACK (a refusal fails the attempt with its reason)
//	client: PUBLISH qos 0 | qos 1 → PUBACK | qos 2 → PUBREC, PUBREL → PUBCOMP
//	client: SUBSCRIBE → SUBACK, UNSUBSCRIBE → UNSUBACK
//	broker: PUBLISH (qos 1: the client answers PUBACK; qos 2: PUBREC, and
//	        PUBCOMP to the broker's PUBREL)
//	client: PINGREQ when it sent nothing for keepalive/2 (or heard nothing
//	        for as long) → PINGRESP
//
// A run sees the broker's PUBLISHes (event, topic and payload) and the
// Answers to its own packets (ack, or error for a refusal: a reason code
// >= 0x80, "mqtt 0x87 not authorized"), each answer carrying its packet
// id as decimal text and the QoS it completes or grants (a PUBACK to a
// QoS 2 publish, a SUBACK granting less than asked: downgrades); the
// protocol answers the rest itself. A v5 broker's Receive Maximum
// (CONNACK) is the connection's quota of QoS > 0 publishes unanswered.
// The codec is codec.go (why hand-written: there).

// Name is MQTT's name in a plan: `protocol: mqtt`.
const Name = "mqtt"

func init() {
	proto.Register(Name, "MQTT 3.1.1 or 5 over WebSocket (subprotocol mqtt)", New)
	// The example broker (examples/mqtt), for wsplan init.
	proto.RegisterExample(Name, proto.Example{URL: "ws://127.0.0.1:9883/mqtt", Start: []string{"mosquitto -c examples/mqtt/mosquitto.conf   (apt-get install mosquitto)"}})
}

// Settings are MQTT's keys in a plan's `protocol: {name: mqtt, …}`.
type Settings struct {
	Version   string         `yaml:"version" default:"3.1.1" doc:"the MQTT version: 3.1.1 or 5"`
	Keepalive units.Duration `yaml:"keepalive" default:"60s" min:"1s" max:"65535s" doc:"CONNECT's keepalive, whole seconds: the client sends PINGREQ when idle for half of it"`
	Username  string         `yaml:"username" doc:"CONNECT's user name (${env:NAME} for a secret)"`
	Password  string         `yaml:"password" secret:"true" doc:"CONNECT's password (${env:NAME} for a secret); version 3.1.1 wants a username with it"`
}

// MQTT's versions.
const (
	Version311 = "3.1.1"
	Version5   = "5"
	// RoomTopic prefixes a broadcast room's topic: wsplan/room/N.
	RoomTopic = "wsplan/room/"
)

// Connection states (proto.Conn.State).
const (
	mqttWaitConnack = iota
	mqttOpen
	mqttPinged // a PINGREQ is out, no PINGRESP yet
)

// Why connections fail.
const (
	reasonMQTTNoConnack proto.Reason = "mqtt: no CONNACK"
	reasonMQTTText      proto.Reason = "mqtt: a text message (MQTT travels in binary messages)"
	reasonMQTTSilent    proto.Reason = "mqtt: no packet from the broker within 1.5 × keepalive"
)

var (
	errMQTTTopic    = errors.New("mqtt: publish: a topic name may not be empty or hold wildcards (+, #)")
	errMQTTFilter   = errors.New("mqtt: subscribe: the topic filter is empty")
	errMQTTQoS      = errors.New("mqtt: qos must be 0, 1 or 2")
	errMQTTTooLarge = errors.New("mqtt: a topic longer than 65535 bytes")
)

// NoPing turns the client's keepalives off, for tests that show a broker
// drops a silent client.
var NoPing bool

type mqtt struct {
	v5         bool
	keepalive  uint16 // seconds
	user, pass []byte // nil = none
	tag        string // this client's part of the client ids
	greeted    atomic.Uint64
	roomPrefix []byte
}

var _ proto.Rooms = (*mqtt)(nil)

// New makes MQTT from its settings (defaults applied, bounds checked).
func New(o *Settings) (proto.Protocol, error) {
	p := &mqtt{roomPrefix: []byte(RoomTopic), tag: strconv.FormatUint(uint64(rand.Uint32()), 36)}
	switch o.Version {
	case Version311:
	case Version5, "5.0":
		p.v5 = true
	default:
		return nil, fmt.Errorf("version %q: want %s or %s", o.Version, Version311, Version5)
	}
	if ka := o.Keepalive.D(); ka%time.Second != 0 {
		return nil, fmt.Errorf("keepalive %s: want whole seconds", ka)
	}
	p.keepalive = uint16(o.Keepalive.D() / time.Second)
	if o.Username != "" {
		p.user = []byte(o.Username)
	}
	if o.Password != "" {
		if p.user == nil && !p.v5 {
			return nil, errors.New("password: needs a username in MQTT 3.1.1 (or use version 5)")
		}
		p.pass = []byte(o.Password)
	}
	return p, nil
}

func (*mqtt) Subprotocols() []string { return []string{"mqtt"} }

func (*mqtt) Verbs() []uint8 {
	return []uint8{proto.VerbPublish, proto.VerbSubscribe, proto.VerbUnsubscribe}
}

func (*mqtt) Waiting(*proto.Conn) proto.Reason { return reasonMQTTNoConnack }

// Greet sends CONNECT with a client id of its own: wsplan-<client>-<loop>-<n>.
func (p *mqtt) Greet(e *proto.Env, s *proto.Conn, _ int64) (bool, proto.Reason) {
	var idb [48]byte
	id := append(append(idb[:0], "wsplan-"...), p.tag...)
	id = strconv.AppendInt(append(id, '-'), int64(e.Loop), 10)
	id = strconv.AppendUint(append(id, '-'), p.greeted.Add(1), 10)
	e.Buf = mqttAppendConnect(e.Buf[:0], &mqttConnectFields{v5: p.v5, clientID: id, user: p.user, pass: p.pass, keepalive: p.keepalive})
	s.Every = int64(p.keepalive) * int64(time.Second)
	s.State = mqttWaitConnack
	e.Write(proto.OpBinary, e.Buf)
	return false, ""
}

func (p *mqtt) Greeting(e *proto.Env, s *proto.Conn, op byte, msg []byte, _ int64) (bool, proto.Reason) {
	if op != proto.OpBinary {
		return false, reasonMQTTText
	}
	data, fromPart := s.Input(msg)
	first, body, n, fail := Split(data)
	switch {
	case fail != "":
		return false, fail
	case n == 0:
		s.Keep(data, 0, fromPart)
		return false, ""
	case first>>4 != Connack:
		return false, proto.Reason("mqtt: " + mqttNames[first>>4] + " before CONNACK")
	}
	a, fail := ConnackOf(body, p.v5)
	switch {
	case fail != "":
		return false, fail
	case a.code != 0:
		return false, p.refusal(e, a.code, body)
	case a.keepalive >= 0: // a v5 broker's Server Keep Alive replaces the client's
		s.Every = int64(a.keepalive) * int64(time.Second)
	}
	s.Quota = a.receiveMax
	s.Keep(data, n, fromPart) // packets after the CONNACK wait for the next message
	s.State = mqttOpen
	return true, ""
}

// refusal is the reason of a CONNACK that refuses the connection with
// code: its name and a v5 broker's Reason String, its own words ("mqtt:
// connack: not authorized (135): no ACL"). Bad credentials, not
// authorized, banned and a bad authentication method are refusals, not
// retried; a server unavailable or busy is.
func (p *mqtt) refusal(e *proto.Env, code byte, body []byte) proto.Reason {
	r := "mqtt: connack: " + mqttCodeText(code, p.v5)
	if p.v5 {
		if w := proto.Words(ConnackWords(body)); w != "" {
			r += ": " + w
		}
	}
	switch {
	case !p.v5 && (code == 4 || code == 5), p.v5 && (code == 0x86 || code == 0x87 || code == 0x8a || code == 0x8c):
		return e.Refuse(proto.Reason(r))
	}
	return proto.Reason(r)
}

// ConnackWords is an MQTT 5 CONNACK body's Reason String (property
// 0x1f); nil when it has none or the properties are malformed.
func ConnackWords(body []byte) []byte {
	if len(body) < 2 {
		return nil
	}
	props, _, ok := SkipProps(body[2:])
	for ok && len(props) > 0 {
		size := mqttPropSize(props[0], props[1:])
		if size < 0 || size > len(props)-1 {
			return nil
		}
		if props[0] == 0x1f {
			words, _, _ := ReadString(props[1:])
			return words
		}
		props = props[1+size:]
	}
	return nil
}

func (p *mqtt) Decode(e *proto.Env, s *proto.Conn, op byte, msg []byte, _ int64) proto.Reason {
	if op != proto.OpBinary {
		return reasonMQTTText
	}
	data, fromPart := s.Input(msg)
	off := 0
	for off < len(data) {
		first, body, n, fail := Split(data[off:])
		if fail != "" {
			return fail
		}
		if n == 0 {
			break
		}
		if fail := p.packet(e, s, first, body); fail != "" {
			return fail
		}
		off += n
	}
	s.Keep(data, off, fromPart)
	return ""
}

// packet takes one whole packet from the broker.
func (p *mqtt) packet(e *proto.Env, s *proto.Conn, first byte, body []byte) proto.Reason {
	switch t := first >> 4; t {
	case Publish:
		topic, payload, pid, qos, fail := PublishOf(first, body, p.v5)
		if fail != "" {
			return fail
		}
		e.Emit(proto.NewMessage(proto.MsgEvent, proto.OpBinary, topic, nil, payload))
		switch qos {
		case 1:
			p.reply(e, Puback, pid)
		case 2: // delivered now; the broker's PUBREL gets PUBCOMP
			p.reply(e, Pubrec, pid)
		}
	case Puback, Pubrec, Pubcomp, Pubrel:
		pid, code, fail := mqttAckOf(body, p.v5)
		switch {
		case fail != "":
			return fail
		case t == Pubrel:
			p.reply(e, Pubcomp, pid)
		case code >= 0x80:
			e.Emit(p.answer(s, pid, 0, mqttRefusal(code, p.v5)))
		case t == Pubrec: // QoS 2 goes on: PUBCOMP answers
			p.reply(e, Pubrel, pid)
		case t == Puback: // QoS 1 done; for a QoS 2 publish, a downgrade
			e.Emit(p.answer(s, pid, 1+1, PubackForQoS2))
		default: // PUBCOMP: QoS 2 done
			e.Emit(p.answer(s, pid, 1+2, ""))
		}
	case Suback, Unsuback:
		pid, codes, fail := mqttSubackOf(body, p.v5)
		if fail != "" {
			return fail
		}
		e.Emit(p.subAnswer(s, t, pid, codes))
	case Pingresp:
		s.State = mqttOpen
	case Disconnect:
		code := byte(0)
		if len(body) > 0 {
			code = body[0]
		}
		return proto.Reason("mqtt: disconnected by the broker: " + mqttCodeText(code, true))
	default:
		return proto.Reason("mqtt: unexpected " + mqttNames[t] + " from the broker")
	}
	return ""
}

// reply sends the protocol's own answer (type t) to packet pid.
func (p *mqtt) reply(e *proto.Env, t byte, pid uint16) {
	e.Buf = AppendAck(e.Buf[:0], t, pid)
	e.Write(proto.OpBinary, e.Buf)
}

// answer is the run's message for the broker's answer to packet pid: an
// ack that completes or grants QoS grant-1 (0 = none), with why it is a
// downgrade when it is one; or, when grant is 0 and why is set, an error:
// the broker refused. Its id, the packet id as decimal text, lives in
// s.Buf until the run took the messages.
func (p *mqtt) answer(s *proto.Conn, pid uint16, grant uint8, why proto.Reason) proto.Message {
	n := len(s.Buf)
	s.Buf = strconv.AppendUint(s.Buf, uint64(pid), 10)
	kind := proto.MsgAck
	if grant == 0 && why != "" {
		kind = proto.MsgError
	}
	return proto.Answer(kind, proto.OpBinary, s.Buf[n:len(s.Buf):len(s.Buf)], nil, grant, why)
}

// subAnswer is the run's message for a SUBACK (t) or an UNSUBACK: an
// error when any code refuses; a SUBACK's ack grants its first code's
// QoS (the client subscribes to one filter at a time).
func (p *mqtt) subAnswer(s *proto.Conn, t byte, pid uint16, codes []byte) proto.Message {
	for _, x := range codes {
		if x >= 0x80 {
			return p.answer(s, pid, 0, mqttRefusal(x, p.v5))
		}
	}
	if t != Suback || len(codes) == 0 || codes[0] > 2 {
		return p.answer(s, pid, 0, "")
	}
	q := codes[0]
	var why proto.Reason
	if q < 2 {
		why = mqttGranted[q]
	}
	return p.answer(s, pid, 1+q, why)
}

// Tick sends PINGREQ when the connection sent nothing for keepalive/2, or
// heard nothing for as long (a publisher that subscribes to nothing hears
// only PINGRESPs), and fails a broker silent for 1.5 × keepalive.
func (p *mqtt) Tick(e *proto.Env, s *proto.Conn, now int64) proto.Reason {
	if s.Every == 0 || NoPing {
		return ""
	}
	if now-s.LastRecv > s.Every+s.Every/2 {
		return reasonMQTTSilent
	}
	half := s.Every / 2
	if now-s.LastSent >= half || now-s.LastRecv >= half && s.State != mqttPinged {
		s.State = mqttPinged
		e.Write(proto.OpBinary, mqttPingreqPacket)
	}
	return ""
}

func (p *mqtt) Encode(dst []byte, s *proto.Conn, m *proto.Out, id []byte) ([]byte, byte, []byte, error) {
	if m.QoS > 2 {
		return dst, 0, id, errMQTTQoS
	}
	if len(m.Topic) > 65535 {
		return dst, 0, id, errMQTTTooLarge
	}
	switch m.Verb {
	case proto.VerbPublish:
		if len(m.Topic) == 0 || bytes.ContainsAny(m.Topic, "+#") {
			return dst, 0, id, errMQTTTopic
		}
		var pid uint16
		if m.QoS > 0 {
			pid = s.NextID()
			id = strconv.AppendUint(id, uint64(pid), 10)
		}
		return AppendPublish(dst, p.v5, m.Topic, m.Body, m.QoS, pid), proto.OpBinary, id, nil
	case proto.VerbSubscribe, proto.VerbUnsubscribe:
		if len(m.Topic) == 0 {
			return dst, 0, id, errMQTTFilter
		}
		pid := s.NextID()
		id = strconv.AppendUint(id, uint64(pid), 10)
		if m.Verb == proto.VerbUnsubscribe {
			return mqttAppendUnsubscribe(dst, p.v5, pid, m.Topic), proto.OpBinary, id, nil
		}
		return mqttAppendSubscribe(dst, p.v5, pid, m.Topic, m.QoS), proto.OpBinary, id, nil
	}
	return dst, 0, id, fmt.Errorf("mqtt: no verb %d", m.Verb)
}

// roomTopic appends room's topic, wsplan/room/N.
func (p *mqtt) roomTopic(dst []byte, room int64) []byte {
	return strconv.AppendInt(append(dst, p.roomPrefix...), room, 10)
}

// JoinRoom subscribes to the room's topic at QoS 0; SUBACK answers.
func (p *mqtt) JoinRoom(dst []byte, s *proto.Conn, room int64, id []byte) ([]byte, byte, []byte, bool) {
	var tb [32]byte
	pid := s.NextID()
	return mqttAppendSubscribe(dst, p.v5, pid, p.roomTopic(tb[:0], room), 0), proto.OpBinary, strconv.AppendUint(id, uint64(pid), 10), true
}

// PublishRoom publishes payload to the room's topic at QoS 0.
func (p *mqtt) PublishRoom(dst []byte, _ *proto.Conn, room int64, payload []byte) ([]byte, byte) {
	var tb [32]byte
	return AppendPublish(dst, p.v5, p.roomTopic(tb[:0], room), payload, 0, 0), proto.OpBinary
}

// Delivery is a PUBLISH's payload on a room's topic.
func (p *mqtt) Delivery(m *proto.Message, _ []byte) ([]byte, bool) {
	if m.Type != proto.MsgEvent || !bytes.HasPrefix(m.Topic, p.roomPrefix) {
		return nil, false
	}
	return m.Body, true
}
