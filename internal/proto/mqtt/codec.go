package mqtt

import "github.com/wsplan/wsplan/internal/proto"

import "strconv"

// MQTT control packets, 3.1.1 (OASIS 2014) and 5 (OASIS 2019), on byte
// slices: the parts of a packet the loop reads are sub-slices of the
// bytes it came in (nothing is copied or allocated), and the packets the
// loop sends are appended to a reused buffer. Only what a client sends
// and receives is here: no will, no topic aliases (CONNECT asks for none,
// so a broker may not use them), no AUTH exchange. v5 properties are
// skipped by their length, except CONNACK's Server Keep Alive and Receive
// Maximum, which the client must obey.
//
// The Go libraries (eclipse/paho.mqtt.golang/packets for 3.1.1,
// eclipse/paho.golang/packets for 5) read from an io.Reader into a packet
// struct, a properties struct and a buffer per packet: they are the tests'
// oracle here (codec_test.go encodes with them and decodes with this
// codec, and the other way round), not the loop's codec.

// Packet types (the high nibble of a packet's first byte).
const (
	Connect     = 1
	Connack     = 2
	Publish     = 3
	Puback      = 4
	Pubrec      = 5
	Pubrel      = 6
	Pubcomp     = 7
	Subscribe   = 8
	Suback      = 9
	Unsubscribe = 10
	Unsuback    = 11
	Pingreq     = 12
	Pingresp    = 13
	Disconnect  = 14
	Auth        = 15
)

// mqttNames are the packet types' names, for reasons.
var mqttNames = [16]string{"reserved packet type 0", "CONNECT", "CONNACK", "PUBLISH", "PUBACK", "PUBREC", "PUBREL",
	"PUBCOMP", "SUBSCRIBE", "SUBACK", "UNSUBSCRIBE", "UNSUBACK", "PINGREQ", "PINGRESP", "DISCONNECT", "AUTH"}

// mqttMaxPacket is the largest packet the client takes (a WebSocket
// message's limit); the protocol's own is 256 MiB.
const mqttMaxPacket = proto.MaxMessage

// Malformed packets: the connection fails with these.
const (
	reasonMQTTLength    proto.Reason = "mqtt: malformed remaining length"
	reasonMQTTTooBig    proto.Reason = "mqtt: a packet larger than 64 MiB"
	reasonMQTTMalformed proto.Reason = "mqtt: malformed packet"
	reasonMQTTQoS       proto.Reason = "mqtt: PUBLISH with QoS 3"
	reasonMQTTPacketID  proto.Reason = "mqtt: packet identifier 0"
)

// Split reads the packet at the start of b: its first byte (type and
// flags), its body (variable header and payload, a sub-slice of b) and its
// whole size n; n == 0 when b holds only part of it.
func Split(b []byte) (first byte, body []byte, n int, fail proto.Reason) {
	if len(b) < 2 {
		return 0, nil, 0, ""
	}
	rl, hl := 0, 1
	for shift := 0; ; shift += 7 {
		if hl == len(b) {
			return 0, nil, 0, ""
		}
		x := b[hl]
		hl++
		rl |= int(x&0x7f) << shift
		if x&0x80 == 0 {
			break
		}
		if hl == 5 {
			return 0, nil, 0, reasonMQTTLength
		}
	}
	if rl > mqttMaxPacket {
		return 0, nil, 0, reasonMQTTTooBig
	}
	if len(b)-hl < rl {
		return 0, nil, 0, ""
	}
	return b[0], b[hl : hl+rl : hl+rl], hl + rl, ""
}

// mqttVarint reads a variable byte integer (a v5 property length) at the
// start of b: its value and size; size 0 = malformed.
func mqttVarint(b []byte) (v, size int) {
	for i := 0; i < 4 && i < len(b); i++ {
		v |= int(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// SkipProps drops a v5 properties block (length, then properties)
// from the start of b; ok false when it does not fit.
func SkipProps(b []byte) (props, rest []byte, ok bool) {
	n, size := mqttVarint(b)
	if size == 0 || len(b)-size < n {
		return nil, nil, false
	}
	return b[size : size+n], b[size+n:], true
}

// ReadString reads a length-prefixed string (or binary data) at the start
// of b.
func ReadString(b []byte) (s, rest []byte, ok bool) {
	if len(b) < 2 {
		return nil, nil, false
	}
	n := int(b[0])<<8 | int(b[1])
	if len(b)-2 < n {
		return nil, nil, false
	}
	return b[2 : 2+n], b[2+n:], true
}

// PublishOf reads a PUBLISH: its QoS (from the first byte), topic,
// packet id (QoS > 0) and payload.
func PublishOf(first byte, body []byte, v5 bool) (topic, payload []byte, pid uint16, qos byte, fail proto.Reason) {
	qos = first >> 1 & 3
	if qos == 3 {
		return nil, nil, 0, 0, reasonMQTTQoS
	}
	topic, rest, ok := ReadString(body)
	if !ok {
		return nil, nil, 0, 0, reasonMQTTMalformed
	}
	if qos > 0 {
		if len(rest) < 2 {
			return nil, nil, 0, 0, reasonMQTTMalformed
		}
		if pid = uint16(rest[0])<<8 | uint16(rest[1]); pid == 0 {
			return nil, nil, 0, 0, reasonMQTTPacketID
		}
		rest = rest[2:]
	}
	if v5 {
		if _, rest, ok = SkipProps(rest); !ok {
			return nil, nil, 0, 0, reasonMQTTMalformed
		}
	}
	return topic, rest, pid, qos, ""
}

// mqttAckOf reads a PUBACK, PUBREC, PUBREL or PUBCOMP: its packet id and
// reason code (v5; 0 = success, as an absent one).
func mqttAckOf(body []byte, v5 bool) (pid uint16, code byte, fail proto.Reason) {
	if len(body) < 2 || !v5 && len(body) != 2 {
		return 0, 0, reasonMQTTMalformed
	}
	pid = uint16(body[0])<<8 | uint16(body[1])
	if v5 && len(body) > 2 {
		code = body[2]
	}
	if pid == 0 {
		return 0, 0, reasonMQTTPacketID
	}
	return pid, code, ""
}

// mqttSubackOf reads a SUBACK or UNSUBACK: its packet id and its return
// or reason codes, one per topic filter (none in a 3.1.1 UNSUBACK).
func mqttSubackOf(body []byte, v5 bool) (pid uint16, codes []byte, fail proto.Reason) {
	if len(body) < 2 {
		return 0, nil, reasonMQTTMalformed
	}
	pid = uint16(body[0])<<8 | uint16(body[1])
	codes = body[2:]
	if v5 {
		var ok bool
		if _, codes, ok = SkipProps(codes); !ok {
			return 0, nil, reasonMQTTMalformed
		}
	}
	if pid == 0 {
		return 0, nil, reasonMQTTPacketID
	}
	return pid, codes, ""
}

// mqttConnackInfo is what a CONNACK says.
type mqttConnackInfo struct {
	code byte // return code (3.1.1) or reason code (5)
	// keepalive is the Server Keep Alive a v5 broker imposes, in seconds;
	// -1 = none.
	keepalive int
	// receiveMax is the Receive Maximum a v5 broker announces: QoS > 0
	// publishes it takes unanswered at once; 0 = none announced (65535).
	receiveMax uint16
}

// ConnackOf reads a CONNACK.
func ConnackOf(body []byte, v5 bool) (a mqttConnackInfo, fail proto.Reason) {
	a.keepalive = -1
	if len(body) < 2 || !v5 && len(body) != 2 {
		return mqttConnackInfo{keepalive: -1}, reasonMQTTMalformed
	}
	a.code = body[1]
	if !v5 {
		return a, ""
	}
	props, _, ok := SkipProps(body[2:])
	if !ok {
		return mqttConnackInfo{keepalive: -1}, reasonMQTTMalformed
	}
	for len(props) > 0 {
		id := props[0]
		size := mqttPropSize(id, props[1:])
		if size < 0 || size > len(props)-1 {
			return mqttConnackInfo{keepalive: -1}, reasonMQTTMalformed
		}
		switch {
		case id == 0x13 && size == 2: // Server Keep Alive
			a.keepalive = int(props[1])<<8 | int(props[2])
		case id == 0x21 && size == 2: // Receive Maximum (0 is a protocol error: none)
			a.receiveMax = uint16(props[1])<<8 | uint16(props[2])
		}
		props = props[1+size:]
	}
	return a, ""
}

// mqttPropSize is the size of the value of v5 property id at the start of
// b; -1 for an unknown property or a malformed value.
func mqttPropSize(id byte, b []byte) int {
	switch id {
	case 0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2a: // byte
		return 1
	case 0x13, 0x21, 0x22, 0x23: // two-byte integer
		return 2
	case 0x02, 0x11, 0x18, 0x27: // four-byte integer
		return 4
	case 0x0b: // variable byte integer
		_, size := mqttVarint(b)
		if size == 0 {
			return -1
		}
		return size
	case 0x03, 0x08, 0x09, 0x12, 0x15, 0x16, 0x1a, 0x1c, 0x1f: // string or binary data
		s, _, ok := ReadString(b)
		if !ok {
			return -1
		}
		return 2 + len(s)
	case 0x26: // user property: a string pair
		k, rest, ok := ReadString(b)
		if !ok {
			return -1
		}
		v, _, ok := ReadString(rest)
		if !ok {
			return -1
		}
		return 4 + len(k) + len(v)
	}
	return -1
}

// mqttAppendHeader appends a fixed header: the first byte and the
// remaining length.
func mqttAppendHeader(dst []byte, first byte, rl int) []byte {
	dst = append(dst, first)
	for {
		b := byte(rl & 0x7f)
		rl >>= 7
		if rl == 0 {
			return append(dst, b)
		}
		dst = append(dst, b|0x80)
	}
}

// mqttAppendString appends a length-prefixed string.
func mqttAppendString(dst, s []byte) []byte {
	return append(append(dst, byte(len(s)>>8), byte(len(s))), s...)
}

// mqttConnectFields are what a CONNECT carries.
type mqttConnectFields struct {
	v5        bool
	clientID  []byte
	user      []byte // nil = no user name
	pass      []byte // nil = no password
	keepalive uint16 // seconds
}

// mqttAppendConnect appends a CONNECT asking for a clean session (3.1.1)
// or a clean start without session expiry (5): nothing of a connection
// survives it.
func mqttAppendConnect(dst []byte, f *mqttConnectFields) []byte {
	flags, level, rl := byte(0x02), byte(4), 10+2+len(f.clientID)
	if f.v5 {
		level = 5
		rl++ // an empty properties block
	}
	if f.user != nil {
		flags |= 0x80
		rl += 2 + len(f.user)
	}
	if f.pass != nil {
		flags |= 0x40
		rl += 2 + len(f.pass)
	}
	dst = mqttAppendHeader(dst, Connect<<4, rl)
	dst = append(dst, 0, 4, 'M', 'Q', 'T', 'T', level, flags, byte(f.keepalive>>8), byte(f.keepalive))
	if f.v5 {
		dst = append(dst, 0)
	}
	dst = mqttAppendString(dst, f.clientID)
	if f.user != nil {
		dst = mqttAppendString(dst, f.user)
	}
	if f.pass != nil {
		dst = mqttAppendString(dst, f.pass)
	}
	return dst
}

// AppendPublish appends a PUBLISH of payload to topic (pid is used
// with QoS > 0 only).
func AppendPublish(dst []byte, v5 bool, topic, payload []byte, qos byte, pid uint16) []byte {
	rl := 2 + len(topic) + len(payload)
	if qos > 0 {
		rl += 2
	}
	if v5 {
		rl++
	}
	dst = mqttAppendHeader(dst, Publish<<4|qos<<1, rl)
	dst = mqttAppendString(dst, topic)
	if qos > 0 {
		dst = append(dst, byte(pid>>8), byte(pid))
	}
	if v5 {
		dst = append(dst, 0)
	}
	return append(dst, payload...)
}

// mqttAppendSubscribe appends a SUBSCRIBE to one topic filter at qos.
func mqttAppendSubscribe(dst []byte, v5 bool, pid uint16, filter []byte, qos byte) []byte {
	return append(mqttAppendSub(dst, Subscribe, v5, pid, filter, 1), qos)
}

// mqttAppendUnsubscribe appends an UNSUBSCRIBE from one topic filter.
func mqttAppendUnsubscribe(dst []byte, v5 bool, pid uint16, filter []byte) []byte {
	return mqttAppendSub(dst, Unsubscribe, v5, pid, filter, 0)
}

// mqttAppendSub appends a SUBSCRIBE or UNSUBSCRIBE (type t) up to its
// topic filter; more bytes follow it.
func mqttAppendSub(dst []byte, t byte, v5 bool, pid uint16, filter []byte, more int) []byte {
	rl := 2 + 2 + len(filter) + more
	if v5 {
		rl++
	}
	dst = mqttAppendHeader(dst, t<<4|2, rl)
	dst = append(dst, byte(pid>>8), byte(pid))
	if v5 {
		dst = append(dst, 0) // no properties
	}
	return mqttAppendString(dst, filter)
}

// AppendAck appends a PUBACK, PUBREC, PUBREL or PUBCOMP (type t) for
// packet pid, with success (the v5 reason code left out means success).
func AppendAck(dst []byte, t byte, pid uint16) []byte {
	first := t << 4
	if t == Pubrel {
		first |= 2
	}
	return append(dst, first, 2, byte(pid>>8), byte(pid))
}

// mqttPingreqPacket is a PINGREQ packet.
var mqttPingreqPacket = []byte{Pingreq << 4, 0}

// mqttCodeText names a CONNACK return code (3.1.1) or a reason code (5),
// with its number: "not authorized (5)".
func mqttCodeText(code byte, v5 bool) string {
	s := ""
	if v5 {
		s = mqttReasons[code]
	} else if int(code) < len(mqttReturnCodes) {
		s = mqttReturnCodes[code]
	}
	if s == "" {
		s = "unknown code"
	}
	return s + " (" + strconv.Itoa(int(code)) + ")"
}

// mqttReturnCodes are MQTT 3.1.1's CONNACK return codes.
var mqttReturnCodes = [...]string{"accepted", "unacceptable protocol version", "identifier rejected",
	"server unavailable", "bad user name or password", "not authorized"}

// mqttReasons are MQTT 5's reason codes of failures (and the few
// successes a client sees), by code.
var mqttReasons = map[byte]string{
	0x00: "success", 0x01: "granted QoS 1", 0x02: "granted QoS 2", 0x04: "disconnect with will message",
	0x10: "no matching subscribers", 0x11: "no subscription existed",
	0x80: "unspecified error", 0x81: "malformed packet", 0x82: "protocol error", 0x83: "implementation specific error",
	0x84: "unsupported protocol version", 0x85: "client identifier not valid", 0x86: "bad user name or password",
	0x87: "not authorized", 0x88: "server unavailable", 0x89: "server busy", 0x8a: "banned",
	0x8b: "server shutting down", 0x8c: "bad authentication method", 0x8d: "keep alive timeout",
	0x8e: "session taken over", 0x8f: "topic filter invalid", 0x90: "topic name invalid",
	0x91: "packet identifier in use", 0x92: "packet identifier not found", 0x93: "receive maximum exceeded",
	0x94: "topic alias invalid", 0x95: "packet too large", 0x96: "message rate too high", 0x97: "quota exceeded",
	0x98: "administrative action", 0x99: "payload format invalid", 0x9a: "retain not supported",
	0x9b: "QoS not supported", 0x9c: "use another server", 0x9d: "server moved",
	0x9e: "shared subscriptions not supported", 0x9f: "connection rate exceeded", 0xa0: "maximum connect time",
	0xa1: "subscription identifiers not supported", 0xa2: "wildcard subscriptions not supported",
}

// What the broker's answers say when they refuse or downgrade (message's
// why): "mqtt 0x87 not authorized", once per code, so that counting them
// allocates nothing.
var (
	// mqttRefusals are v5 reason codes >= 0x80 as error answers' reasons.
	mqttRefusals [256]proto.Reason
	// mqttSubackFailure is a 3.1.1 SUBACK's failure (0x80), which has no
	// other name.
	mqttSubackFailure proto.Reason = "mqtt 0x80 failure"
	// PubackForQoS2 is a PUBACK that completes a publish: a downgrade
	// when the publish asked for QoS 2 (RabbitMQ 3.10 answers so).
	PubackForQoS2 proto.Reason = "mqtt PUBACK to a QoS 2 publish"
	// mqttGranted are SUBACKs' grants below QoS 2, by QoS.
	mqttGranted = [2]proto.Reason{"mqtt SUBACK granted QoS 0", "mqtt SUBACK granted QoS 1"}
)

func init() {
	const hex = "0123456789abcdef"
	for c := 0x80; c < 256; c++ {
		name := mqttReasons[byte(c)]
		if name == "" {
			name = "unknown code"
		}
		mqttRefusals[c] = proto.Reason("mqtt 0x" + string([]byte{hex[c>>4], hex[c&15]}) + " " + name)
	}
}

// mqttRefusal is the reason of an answer with code >= 0x80.
func mqttRefusal(code byte, v5 bool) proto.Reason {
	if !v5 && code == 0x80 {
		return mqttSubackFailure
	}
	return mqttRefusals[code]
}
