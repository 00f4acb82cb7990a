package faultserver

import (
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// MQTT 3.1.1 and 5 over WebSocket (binary messages; a packet may span
// messages): CONNECT → CONNACK (Refuse: not authorized; a v5 CONNACK
// announces ReceiveMaximum), PUBLISH at QoS 0, 1 (PUBACK) and 2 (PUBREC,
// PUBREL → PUBCOMP), SUBSCRIBE → SUBACK, UNSUBSCRIBE → UNSUBACK, PINGREQ
// → PINGRESP, DISCONNECT. Topics are rooms: a PUBLISH goes, at QoS 0, to
// every subscriber of its exact topic (no wildcards).

// mqttSession is one connection's state.
type mqttSession struct {
	s        *Server
	p        *peer
	v5       bool
	open     bool
	mu       sync.Mutex // inflight
	inflight int        // QoS 1 and 2 PUBLISHes not yet completed
}

func (s *Server) serveMQTT(p *peer, _ *http.Request, greet Fault) {
	m := &mqttSession{s: s, p: p}
	var part []byte
	for {
		op, msg, err := p.ws.ReadMessage()
		if err != nil || op != websocket.BinaryMessage {
			return
		}
		part = append(part, msg...)
		for {
			first, body, n, err := mqttSplit(part)
			if err != nil {
				return
			}
			if n == 0 {
				break
			}
			if !m.packet(first, body, greet) {
				return
			}
			part = part[n:]
		}
		part = append([]byte(nil), part...) // what is left, apart from msg's buffer
	}
}

// send writes one packet; false when the connection is gone.
func (m *mqttSession) send(b []byte) bool {
	return m.p.write(websocket.BinaryMessage, b) == nil
}

// packet takes one packet; false ends the connection.
func (m *mqttSession) packet(first byte, body []byte, greet Fault) bool {
	t := first >> 4
	if !m.open && t != mqttConnect {
		return false
	}
	switch t {
	case mqttConnect:
		return m.connect(body, greet)
	case mqttPublish:
		return m.publish(first, body)
	case mqttPubrel:
		pid, err := mqttAckID(body)
		if err != nil {
			return false
		}
		m.done()
		return m.send(mqttAckPacket(mqttPubcomp, pid, m.v5, 0))
	case mqttPuback, mqttPubrec, mqttPubcomp:
		return true // the server publishes at QoS 0 only
	case mqttSubscribe, mqttUnsubscribe:
		return m.subscribe(body, t == mqttUnsubscribe)
	case mqttPingreq:
		if m.s.answerFault() == Silent {
			return true
		}
		return m.send([]byte{mqttPingresp << 4, 0})
	}
	return false // DISCONNECT, or what a client does not send
}

// connect answers CONNECT as the greeting fault says.
func (m *mqttSession) connect(body []byte, greet Fault) bool {
	if m.open {
		return false
	}
	level, err := mqttConnectVersion(body)
	if err != nil {
		return false
	}
	m.v5 = level == 5
	switch greet {
	case Refuse:
		code := byte(mqttNotAuthorized3)
		if m.v5 {
			code = mqttNotAuthorized5
		}
		m.send(mqttConnackPacket(m.v5, code, 0))
		return false
	case Mute:
		return true
	case Garble:
		return m.send(mqttPublishPacket(m.v5, []byte("hello"), nil))
	}
	m.open = true
	return m.send(mqttConnackPacket(m.v5, 0, m.s.o.ReceiveMaximum))
}

// publish fans a PUBLISH out to its topic's subscribers and answers it.
func (m *mqttSession) publish(first byte, body []byte) bool {
	pub, err := mqttPublishOf(first, body, m.v5)
	if err != nil {
		return false
	}
	s := m.s
	s.deliver("mqtt/"+string(pub.topic), nil, pub.payload, func(q *peer, _ string, b []byte) {
		// A subscriber that went away misses it (its session's version is
		// the publisher's: the test's clients speak one).
		_ = q.write(websocket.BinaryMessage, mqttPublishPacket(m.v5, pub.topic, b))
	})
	if pub.qos == 0 {
		return true
	}
	ack := byte(mqttPuback)
	if pub.qos == 2 {
		ack = mqttPubrec
	}
	if s.o.Fault == Quota {
		m.mu.Lock()
		over := m.inflight >= m.quota()
		if !over {
			m.inflight++
		}
		m.mu.Unlock()
		if over {
			return m.send(mqttAckPacket(ack, pub.pid, m.v5, mqttQuotaExceeded))
		}
		m.later(ack, pub.pid, pub.qos)
		return true
	}
	switch s.answerFault() {
	case Drop:
		return true
	case Error:
		if !m.v5 {
			return false // 3.1.1 refuses a PUBLISH by closing
		}
		return m.send(mqttAckPacket(ack, pub.pid, true, mqttNotAuthorized5))
	case Wrong:
		return m.send(mqttAckPacket(ack, pub.pid%65535+1, m.v5, 0))
	case Downgrade:
		return m.send(mqttAckPacket(mqttPuback, pub.pid, m.v5, 0))
	}
	m.mu.Lock()
	m.inflight++
	m.mu.Unlock()
	m.later(ack, pub.pid, pub.qos)
	return true
}

// quota is how many PUBLISHes may be in flight.
func (m *mqttSession) quota() int {
	switch {
	case m.s.o.Quota > 0:
		return m.s.o.Quota
	case m.s.o.ReceiveMaximum > 0:
		return m.s.o.ReceiveMaximum
	}
	return 1
}

// later sends the PUBACK or PUBREC (ack) of an accepted PUBLISH after
// AckDelay; a PUBACK completes it, a PUBREC waits for its PUBREL.
func (m *mqttSession) later(ack byte, pid uint16, qos byte) {
	send := func() {
		if qos == 1 {
			m.done()
		}
		m.send(mqttAckPacket(ack, pid, m.v5, 0))
	}
	if d := m.s.o.AckDelay; d > 0 {
		time.AfterFunc(d, send)
		return
	}
	send()
}

// done completes a PUBLISH in flight.
func (m *mqttSession) done() {
	m.mu.Lock()
	if m.inflight > 0 {
		m.inflight--
	}
	m.mu.Unlock()
}

// subscribe answers SUBSCRIBE (joining each filter's room at the QoS
// granted) or UNSUBSCRIBE.
func (m *mqttSession) subscribe(body []byte, unsub bool) bool {
	sub, err := mqttSubscribeOf(body, m.v5, unsub)
	if err != nil {
		return false
	}
	if unsub {
		for _, f := range sub.filters {
			m.s.rooms.leave("mqtt/"+string(f), m.p)
		}
		var codes []byte
		if m.v5 {
			codes = make([]byte, len(sub.filters))
		}
		return m.send(mqttSubackPacket(mqttUnsuback, sub.pid, m.v5, codes))
	}
	codes := append([]byte(nil), sub.qos...)
	pid := sub.pid
	switch m.s.answerFault() {
	case Drop:
		return true
	case Error:
		for i := range codes {
			codes[i] = mqttSubFailure
		}
	case Wrong:
		pid = pid%65535 + 1
	case Downgrade:
		for i := range codes {
			codes[i] = 0
		}
	}
	for i, f := range sub.filters {
		if codes[i] < 0x80 {
			m.s.rooms.join("mqtt/"+string(f), m.p, "")
		}
	}
	return m.send(mqttSubackPacket(mqttSuback, pid, m.v5, codes))
}
