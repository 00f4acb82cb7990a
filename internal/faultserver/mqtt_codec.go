package faultserver

import "errors"

// MQTT packets as the broker reads and writes them: 3.1.1 and 5, only
// what a client sends and the answers to it.

// MQTT packet types (the high nibble of the first byte).
const (
	mqttConnect     = 1
	mqttConnack     = 2
	mqttPublish     = 3
	mqttPuback      = 4
	mqttPubrec      = 5
	mqttPubrel      = 6
	mqttPubcomp     = 7
	mqttSubscribe   = 8
	mqttSuback      = 9
	mqttUnsubscribe = 10
	mqttUnsuback    = 11
	mqttPingreq     = 12
	mqttPingresp    = 13
	mqttDisconnect  = 14
)

// MQTT reason codes the server answers with.
const (
	mqttNotAuthorized5 = 0x87 // v5: not authorized
	mqttNotAuthorized3 = 0x05 // 3.1.1 CONNACK: not authorized
	mqttQuotaExceeded  = 0x97 // v5: quota exceeded
	mqttSubFailure     = 0x80 // SUBACK: failure (3.1.1), unspecified error (5)
)

var errMQTTMalformed = errors.New("mqtt: malformed packet")

// mqttMaxPacket bounds a packet the server reads.
const mqttMaxPacket = 1 << 20

// mqttSplit reads the packet at the start of b: its first byte, its body,
// and its whole size; n = 0 when b holds only part of it.
func mqttSplit(b []byte) (first byte, body []byte, n int, err error) {
	if len(b) < 2 {
		return 0, nil, 0, nil
	}
	rl, size := 0, 0
	for i := 1; i < len(b) && i <= 4; i++ {
		rl |= int(b[i]&0x7f) << (7 * (i - 1))
		if b[i]&0x80 == 0 {
			size = i + 1
			break
		}
	}
	switch {
	case size == 0 && len(b) > 4:
		return 0, nil, 0, errMQTTMalformed
	case size == 0:
		return 0, nil, 0, nil
	}
	if rl > mqttMaxPacket {
		return 0, nil, 0, errMQTTMalformed
	}
	if len(b) < size+rl {
		return 0, nil, 0, nil
	}
	return b[0], b[size : size+rl], size + rl, nil
}

// mqttVarint reads a variable byte integer; size 0 = malformed.
func mqttVarint(b []byte) (v, size int) {
	for i := 0; i < 4 && i < len(b); i++ {
		v |= int(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// mqttSkipProps skips v5 properties at the start of b.
func mqttSkipProps(b []byte) ([]byte, error) {
	n, size := mqttVarint(b)
	if size == 0 || len(b) < size+n {
		return nil, errMQTTMalformed
	}
	return b[size+n:], nil
}

// mqttString reads a length-prefixed string.
func mqttString(b []byte) (s, rest []byte, err error) {
	if len(b) < 2 {
		return nil, nil, errMQTTMalformed
	}
	n := int(b[0])<<8 | int(b[1])
	if len(b) < 2+n {
		return nil, nil, errMQTTMalformed
	}
	return b[2 : 2+n], b[2+n:], nil
}

// mqttConnectVersion reads a CONNECT's protocol level: 4 (3.1.1) or 5.
func mqttConnectVersion(body []byte) (byte, error) {
	name, rest, err := mqttString(body)
	if err != nil || string(name) != "MQTT" || len(rest) < 4 {
		return 0, errMQTTMalformed
	}
	if rest[0] != 4 && rest[0] != 5 {
		return 0, errMQTTMalformed
	}
	return rest[0], nil
}

// mqttPub is a PUBLISH as read.
type mqttPub struct {
	topic, payload []byte
	qos            byte
	pid            uint16
}

// mqttPublishOf reads a PUBLISH.
func mqttPublishOf(first byte, body []byte, v5 bool) (mqttPub, error) {
	var p mqttPub
	p.qos = first >> 1 & 3
	if p.qos == 3 {
		return p, errMQTTMalformed
	}
	var err error
	if p.topic, body, err = mqttString(body); err != nil {
		return p, err
	}
	if p.qos > 0 {
		if len(body) < 2 {
			return p, errMQTTMalformed
		}
		p.pid = uint16(body[0])<<8 | uint16(body[1])
		body = body[2:]
		if p.pid == 0 {
			return p, errMQTTMalformed
		}
	}
	if v5 {
		if body, err = mqttSkipProps(body); err != nil {
			return p, err
		}
	}
	p.payload = body
	return p, nil
}

// mqttSub is a SUBSCRIBE or UNSUBSCRIBE as read: its packet id and its
// topic filters with the QoS each asks (0 for UNSUBSCRIBE).
type mqttSub struct {
	pid     uint16
	filters [][]byte
	qos     []byte
}

// mqttSubscribeOf reads a SUBSCRIBE (unsub false) or UNSUBSCRIBE.
func mqttSubscribeOf(body []byte, v5, unsub bool) (mqttSub, error) {
	var s mqttSub
	if len(body) < 2 {
		return s, errMQTTMalformed
	}
	s.pid = uint16(body[0])<<8 | uint16(body[1])
	body = body[2:]
	var err error
	if v5 {
		if body, err = mqttSkipProps(body); err != nil {
			return s, err
		}
	}
	for len(body) > 0 {
		var f []byte
		if f, body, err = mqttString(body); err != nil {
			return s, err
		}
		q := byte(0)
		if !unsub {
			if len(body) < 1 {
				return s, errMQTTMalformed
			}
			q, body = body[0]&3, body[1:]
		}
		s.filters, s.qos = append(s.filters, f), append(s.qos, q)
	}
	if s.pid == 0 || len(s.filters) == 0 {
		return s, errMQTTMalformed
	}
	return s, nil
}

// mqttAckID reads the packet id of a PUBACK, PUBREC, PUBREL or PUBCOMP.
func mqttAckID(body []byte) (uint16, error) {
	if len(body) < 2 {
		return 0, errMQTTMalformed
	}
	return uint16(body[0])<<8 | uint16(body[1]), nil
}

// mqttHeader appends a fixed header.
func mqttHeader(dst []byte, first byte, rl int) []byte {
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

// mqttConnackPacket is a CONNACK with code; v5 with Receive Maximum when
// recvMax > 0.
func mqttConnackPacket(v5 bool, code byte, recvMax int) []byte {
	if !v5 {
		return []byte{mqttConnack << 4, 2, 0, code}
	}
	var props []byte
	if recvMax > 0 {
		props = []byte{0x21, byte(recvMax >> 8), byte(recvMax)}
	}
	b := mqttHeader(nil, mqttConnack<<4, 3+len(props))
	b = append(b, 0, code, byte(len(props)))
	return append(b, props...)
}

// mqttAckPacket is a PUBACK, PUBREC, PUBREL (t: its type) or PUBCOMP for
// pid; in v5 with code when not 0.
func mqttAckPacket(t byte, pid uint16, v5 bool, code byte) []byte {
	first := t << 4
	if t == mqttPubrel {
		first |= 2
	}
	if v5 && code != 0 {
		return []byte{first, 4, byte(pid >> 8), byte(pid), code, 0}
	}
	return []byte{first, 2, byte(pid >> 8), byte(pid)}
}

// mqttSubackPacket is a SUBACK (or UNSUBACK) with one code per filter
// (none in a 3.1.1 UNSUBACK).
func mqttSubackPacket(t byte, pid uint16, v5 bool, codes []byte) []byte {
	rl := 2 + len(codes)
	if v5 {
		rl++
	}
	b := mqttHeader(nil, t<<4, rl)
	b = append(b, byte(pid>>8), byte(pid))
	if v5 {
		b = append(b, 0)
	}
	return append(b, codes...)
}

// mqttPublishPacket is a QoS 0 PUBLISH of payload to topic.
func mqttPublishPacket(v5 bool, topic, payload []byte) []byte {
	rl := 2 + len(topic) + len(payload)
	if v5 {
		rl++
	}
	b := mqttHeader(nil, mqttPublish<<4, rl)
	b = append(b, byte(len(topic)>>8), byte(len(topic)))
	b = append(b, topic...)
	if v5 {
		b = append(b, 0)
	}
	return append(b, payload...)
}
