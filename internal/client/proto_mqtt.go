package client

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"
)

// MQTT over WebSocket, 3.1.1 and 5 (mosquitto, EMQX, HiveMQ, …): the
// subprotocol "mqtt", binary messages, and MQTT packets in them, which
// need not line up with the messages (a packet may span several, one may
// hold several): the loop reassembles them by their remaining length and
// keeps a partial packet across messages (protoConn.part).
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
// answers to its own packets (ack, or error for a refusal: a reason code
// >= 0x80, "mqtt 0x87 not authorized"), each answer carrying its packet
// id as decimal text and the QoS it completes or grants (a PUBACK to a
// QoS 2 publish, a SUBACK granting less than asked: downgrades); the
// protocol answers the rest itself. A v5 broker's Receive Maximum
// (CONNACK) is the connection's quota of QoS > 0 publishes unanswered.
// The codec is proto_mqtt_codec.go (why hand-written: there).

// ProtoMQTT is MQTT's name.
const ProtoMQTT = "mqtt"

func init() { registerProtocol(ProtoMQTT, newMQTT) }

// MQTT's defaults and versions.
const (
	// DefaultMQTTKeepalive is the keepalive a CONNECT asks for when the
	// plan names none.
	DefaultMQTTKeepalive = 60 * time.Second
	MQTTVersion311       = "3.1.1" // the default
	MQTTVersion5         = "5"
	// mqttRoomTopic prefixes a broadcast room's topic: wsplan/room/N.
	mqttRoomTopic = "wsplan/room/"
)

// Connection states (protoConn.state).
const (
	mqttWaitConnack = iota
	mqttOpen
	mqttPinged // a PINGREQ is out, no PINGRESP yet
)

// Why connections fail.
const (
	reasonMQTTNoConnack Reason = "mqtt: no CONNACK"
	reasonMQTTText      Reason = "mqtt: a text message (MQTT travels in binary messages)"
	reasonMQTTSilent    Reason = "mqtt: no packet from the broker within 1.5 × keepalive"
)

var (
	errMQTTTopic    = errors.New("mqtt: publish: a topic name may not be empty or hold wildcards (+, #)")
	errMQTTFilter   = errors.New("mqtt: subscribe: the topic filter is empty")
	errMQTTQoS      = errors.New("mqtt: qos must be 0, 1 or 2")
	errMQTTTooLarge = errors.New("mqtt: a topic longer than 65535 bytes")
)

// mqttNoPing turns the client's keepalives off: tests show that a broker
// drops a silent client.
var mqttNoPing bool

type mqtt struct {
	v5         bool
	keepalive  uint16 // seconds
	user, pass []byte // nil = none
	tag        string // this client's part of the client ids
	greeted    atomic.Uint64
	roomPrefix []byte
}

var _ roomProtocol = (*mqtt)(nil)

// defaults fills in MQTT's version (3.1.1) and keepalive
// (DefaultMQTTKeepalive).
func (*mqtt) defaults(o ProtocolOptions) ProtocolOptions {
	if o.Version == "" {
		o.Version = MQTTVersion311
	}
	if o.Keepalive == 0 {
		o.Keepalive = DefaultMQTTKeepalive
	}
	return o
}

func newMQTT(o ProtocolOptions) (wireProtocol, error) {
	p := &mqtt{roomPrefix: []byte(mqttRoomTopic), tag: strconv.FormatUint(uint64(rand.Uint32()), 36)}
	o = p.defaults(o)
	switch o.Version {
	case MQTTVersion311:
	case MQTTVersion5, "5.0":
		p.v5 = true
	default:
		return nil, fmt.Errorf("mqtt: version %q: want %s or %s", o.Version, MQTTVersion311, MQTTVersion5)
	}
	ka := o.Keepalive
	if ka < time.Second || ka > 65535*time.Second || ka%time.Second != 0 {
		return nil, fmt.Errorf("mqtt: keepalive %s: want whole seconds from 1s to 65535s", ka)
	}
	p.keepalive = uint16(ka / time.Second)
	if o.Username != "" {
		p.user = []byte(o.Username)
	}
	if o.Password != "" {
		if p.user == nil && !p.v5 {
			return nil, errors.New("mqtt: a password needs a username in MQTT 3.1.1 (or use version 5)")
		}
		p.pass = []byte(o.Password)
	}
	return p, nil
}

func (*mqtt) subprotocols() []string { return []string{"mqtt"} }

func (*mqtt) verbs() []uint8 { return []uint8{verbPublish, verbSubscribe, verbUnsubscribe} }

func (*mqtt) waiting(*protoConn) Reason { return reasonMQTTNoConnack }

// greet sends CONNECT with a client id of its own: wsplan-<client>-<loop>-<n>.
func (p *mqtt) greet(l *loop, c *conn, s *protoConn, _ int64) (bool, Reason) {
	var idb [48]byte
	id := append(append(idb[:0], "wsplan-"...), p.tag...)
	id = strconv.AppendInt(append(id, '-'), int64(l.id), 10)
	id = strconv.AppendUint(append(id, '-'), p.greeted.Add(1), 10)
	l.pbuf = mqttAppendConnect(l.pbuf[:0], &mqttConnectFields{v5: p.v5, clientID: id, user: p.user, pass: p.pass, keepalive: p.keepalive})
	s.every = int64(p.keepalive) * int64(time.Second)
	s.state = mqttWaitConnack
	l.sendProto(c, opBinary, l.pbuf)
	return false, ""
}

func (p *mqtt) greeting(_ *loop, c *conn, s *protoConn, op byte, msg []byte, _ int64) (bool, Reason) {
	if op != opBinary {
		return false, reasonMQTTText
	}
	data, fromPart := s.input(msg)
	first, body, n, fail := mqttSplit(data)
	switch {
	case fail != "":
		return false, fail
	case n == 0:
		s.keep(data, 0, fromPart)
		return false, ""
	case first>>4 != mqttConnack:
		return false, Reason("mqtt: " + mqttNames[first>>4] + " before CONNACK")
	}
	a, fail := mqttConnackOf(body, p.v5)
	switch {
	case fail != "":
		return false, fail
	case a.code != 0:
		return false, p.refusal(c, a.code, body)
	case a.keepalive >= 0: // a v5 broker's Server Keep Alive replaces the client's
		s.every = int64(a.keepalive) * int64(time.Second)
	}
	s.quota = a.receiveMax
	s.keep(data, n, fromPart) // packets after the CONNACK wait for the next message
	s.state = mqttOpen
	return true, ""
}

// refusal is the reason of a CONNACK that refuses the connection with
// code: its name and a v5 broker's Reason String, its own words ("mqtt:
// connack: not authorized (135): no ACL"). Bad credentials, not
// authorized, banned and a bad authentication method are refusals, not
// retried; a server unavailable or busy is.
func (p *mqtt) refusal(c *conn, code byte, body []byte) Reason {
	r := "mqtt: connack: " + mqttCodeText(code, p.v5)
	if p.v5 {
		if w := serverWords(mqttConnackWords(body)); w != "" {
			r += ": " + w
		}
	}
	switch {
	case !p.v5 && (code == 4 || code == 5), p.v5 && (code == 0x86 || code == 0x87 || code == 0x8a || code == 0x8c):
		return refuse(c, Reason(r))
	}
	return Reason(r)
}

// mqttConnackWords is an MQTT 5 CONNACK body's Reason String (property
// 0x1f); nil when it has none or the properties are malformed.
func mqttConnackWords(body []byte) []byte {
	if len(body) < 2 {
		return nil
	}
	props, _, ok := mqttSkipProps(body[2:])
	for ok && len(props) > 0 {
		size := mqttPropSize(props[0], props[1:])
		if size < 0 || size > len(props)-1 {
			return nil
		}
		if props[0] == 0x1f {
			words, _, _ := mqttString(props[1:])
			return words
		}
		props = props[1+size:]
	}
	return nil
}

func (p *mqtt) decode(l *loop, c *conn, s *protoConn, op byte, msg []byte, _ int64) Reason {
	if op != opBinary {
		return reasonMQTTText
	}
	data, fromPart := s.input(msg)
	off := 0
	for off < len(data) {
		first, body, n, fail := mqttSplit(data[off:])
		if fail != "" {
			return fail
		}
		if n == 0 {
			break
		}
		if fail := p.packet(l, c, s, first, body); fail != "" {
			return fail
		}
		off += n
	}
	s.keep(data, off, fromPart)
	return ""
}

// packet takes one whole packet from the broker.
func (p *mqtt) packet(l *loop, c *conn, s *protoConn, first byte, body []byte) Reason {
	switch t := first >> 4; t {
	case mqttPublish:
		topic, payload, pid, qos, fail := mqttPublishOf(first, body, p.v5)
		if fail != "" {
			return fail
		}
		l.msgs = append(l.msgs, newMessage(msgEvent, opBinary, topic, nil, payload))
		switch qos {
		case 1:
			p.reply(l, c, mqttPuback, pid)
		case 2: // delivered now; the broker's PUBREL gets PUBCOMP
			p.reply(l, c, mqttPubrec, pid)
		}
	case mqttPuback, mqttPubrec, mqttPubcomp, mqttPubrel:
		pid, code, fail := mqttAckOf(body, p.v5)
		switch {
		case fail != "":
			return fail
		case t == mqttPubrel:
			p.reply(l, c, mqttPubcomp, pid)
		case code >= 0x80:
			l.msgs = append(l.msgs, p.answer(s, pid, 0, mqttRefusal(code, p.v5)))
		case t == mqttPubrec: // QoS 2 goes on: PUBCOMP answers
			p.reply(l, c, mqttPubrel, pid)
		case t == mqttPuback: // QoS 1 done; for a QoS 2 publish, a downgrade
			l.msgs = append(l.msgs, p.answer(s, pid, 1+1, mqttPubackForQoS2))
		default: // PUBCOMP: QoS 2 done
			l.msgs = append(l.msgs, p.answer(s, pid, 1+2, ""))
		}
	case mqttSuback, mqttUnsuback:
		pid, codes, fail := mqttSubackOf(body, p.v5)
		if fail != "" {
			return fail
		}
		l.msgs = append(l.msgs, p.subAnswer(s, t, pid, codes))
	case mqttPingresp:
		s.state = mqttOpen
	case mqttDisconnect:
		code := byte(0)
		if len(body) > 0 {
			code = body[0]
		}
		return Reason("mqtt: disconnected by the broker: " + mqttCodeText(code, true))
	default:
		return Reason("mqtt: unexpected " + mqttNames[t] + " from the broker")
	}
	return ""
}

// reply sends the protocol's own answer (type t) to packet pid.
func (p *mqtt) reply(l *loop, c *conn, t byte, pid uint16) {
	l.pbuf = mqttAppendAck(l.pbuf[:0], t, pid)
	l.sendProto(c, opBinary, l.pbuf)
}

// answer is the run's message for the broker's answer to packet pid: an
// ack that completes or grants QoS grant-1 (0 = none), with why it is a
// downgrade when it is one; or, when grant is 0 and why is set, an error:
// the broker refused. Its id, the packet id as decimal text, lives in
// s.buf until the run took the messages.
func (p *mqtt) answer(s *protoConn, pid uint16, grant uint8, why Reason) message {
	n := len(s.buf)
	s.buf = strconv.AppendUint(s.buf, uint64(pid), 10)
	kind := msgAck
	if grant == 0 && why != "" {
		kind = msgError
	}
	return answerMessage(kind, opBinary, s.buf[n:len(s.buf):len(s.buf)], nil, grant, why)
}

// subAnswer is the run's message for a SUBACK (t) or an UNSUBACK: an
// error when any code refuses; a SUBACK's ack grants its first code's
// QoS (the client subscribes to one filter at a time).
func (p *mqtt) subAnswer(s *protoConn, t byte, pid uint16, codes []byte) message {
	for _, x := range codes {
		if x >= 0x80 {
			return p.answer(s, pid, 0, mqttRefusal(x, p.v5))
		}
	}
	if t != mqttSuback || len(codes) == 0 || codes[0] > 2 {
		return p.answer(s, pid, 0, "")
	}
	q := codes[0]
	var why Reason
	if q < 2 {
		why = mqttGranted[q]
	}
	return p.answer(s, pid, 1+q, why)
}

// tick sends PINGREQ when the connection sent nothing for keepalive/2, or
// heard nothing for as long (a publisher that subscribes to nothing hears
// only PINGRESPs), and fails a broker silent for 1.5 × keepalive.
func (p *mqtt) tick(l *loop, c *conn, s *protoConn, now int64) Reason {
	if s.every == 0 || mqttNoPing {
		return ""
	}
	if now-s.lastRecv > s.every+s.every/2 {
		return reasonMQTTSilent
	}
	half := s.every / 2
	if now-s.lastSent >= half || now-s.lastRecv >= half && s.state != mqttPinged {
		s.state = mqttPinged
		l.sendProto(c, opBinary, mqttPingreqPacket)
	}
	return ""
}

// nextID is the connection's next packet id (1…65535, then again).
func nextID(s *protoConn) uint16 {
	s.ids = s.ids%65535 + 1
	return uint16(s.ids)
}

func (p *mqtt) encode(dst []byte, s *protoConn, m *outMsg, id []byte) ([]byte, byte, []byte, error) {
	if m.qos > 2 {
		return dst, 0, id, errMQTTQoS
	}
	if len(m.topic) > 65535 {
		return dst, 0, id, errMQTTTooLarge
	}
	switch m.verb {
	case verbPublish:
		if len(m.topic) == 0 || bytes.ContainsAny(m.topic, "+#") {
			return dst, 0, id, errMQTTTopic
		}
		var pid uint16
		if m.qos > 0 {
			pid = nextID(s)
			id = strconv.AppendUint(id, uint64(pid), 10)
		}
		return mqttAppendPublish(dst, p.v5, m.topic, m.body, m.qos, pid), opBinary, id, nil
	case verbSubscribe, verbUnsubscribe:
		if len(m.topic) == 0 {
			return dst, 0, id, errMQTTFilter
		}
		pid := nextID(s)
		id = strconv.AppendUint(id, uint64(pid), 10)
		if m.verb == verbUnsubscribe {
			return mqttAppendUnsubscribe(dst, p.v5, pid, m.topic), opBinary, id, nil
		}
		return mqttAppendSubscribe(dst, p.v5, pid, m.topic, m.qos), opBinary, id, nil
	}
	return dst, 0, id, fmt.Errorf("mqtt: no verb %d", m.verb)
}

// roomTopic appends room's topic, wsplan/room/N.
func (p *mqtt) roomTopic(dst []byte, room int64) []byte {
	return strconv.AppendInt(append(dst, p.roomPrefix...), room, 10)
}

// joinRoom subscribes to the room's topic at QoS 0; SUBACK answers.
func (p *mqtt) joinRoom(dst []byte, s *protoConn, room int64, id []byte) ([]byte, byte, []byte, bool) {
	var tb [32]byte
	pid := nextID(s)
	return mqttAppendSubscribe(dst, p.v5, pid, p.roomTopic(tb[:0], room), 0), opBinary, strconv.AppendUint(id, uint64(pid), 10), true
}

// publishRoom publishes payload to the room's topic at QoS 0.
func (p *mqtt) publishRoom(dst []byte, _ *protoConn, room int64, payload []byte) ([]byte, byte) {
	var tb [32]byte
	return mqttAppendPublish(dst, p.v5, p.roomTopic(tb[:0], room), payload, 0, 0), opBinary
}

// delivery is a PUBLISH's payload on a room's topic.
func (p *mqtt) delivery(m *message, _ []byte) ([]byte, bool) {
	if m.Type != msgEvent || !bytes.HasPrefix(m.Topic, p.roomPrefix) {
		return nil, false
	}
	return m.Body, true
}
