package mqtt

import (
	"bytes"
	"fmt"
	"testing"

	pahov5 "github.com/eclipse/paho.golang/packets"
	pahov3 "github.com/eclipse/paho.mqtt.golang/packets"
)

// The decoders of what a broker sends, under the fuzzer, with paho as
// the oracle.

// FuzzMQTTDecode: whatever the broker sends, the decoder fails cleanly or
// decodes; split anywhere over two messages it decodes the same; and each
// PUBLISH it takes (3.1.1), paho reads with the same topic, id and payload.
func FuzzMQTTDecode(f *testing.F) {
	f.Add(AppendPublish(nil, false, []byte("a/b"), []byte("hello"), 1, 3), uint8(3), false)
	f.Add(append(AppendPublish(nil, true, []byte("t"), bytes.Repeat([]byte("x"), 300), 2, 9), 0x90, 4, 0, 9, 0, 1), uint8(200), true)
	f.Add([]byte{0x50, 2, 0, 5, 0x62, 2, 0, 5, 0x70, 2, 0, 5, 0xd0, 0}, uint8(5), false)
	f.Add([]byte{0x40, 4, 0, 5, 0x87, 0, 0xb0, 3, 0, 1, 0}, uint8(1), true)
	f.Add([]byte{0x30, 0xff, 0xff, 0xff, 0x7f}, uint8(2), false)
	rigs := map[bool]*mqttRig{false: newMQTTRig(f, Settings{}), true: newMQTTRig(f, Settings{Version: Version5})}
	f.Fuzz(func(t *testing.T, data []byte, cut uint8, isV5 bool) {
		g := rigs[isV5]
		run := func(msgs ...[]byte) string {
			g.s.Part, g.s.PartAt = nil, 0
			got, fail := g.decode(msgs...)
			for g.replies(t) != nil { // drain what the protocol answered
			}
			if fail != "" {
				return fmt.Sprint(got, fail)
			}
			return fmt.Sprint(got, " kept ", len(g.s.Part)-g.s.PartAt)
		}
		whole := run(data)
		k := int(cut) % (len(data) + 1)
		if split := run(data[:k], data[k:]); split != whole {
			t.Fatalf("split at %d: %s, whole: %s", k, split, whole)
		}
		for b := data; !isV5; {
			first, body, n, fail := Split(b)
			if fail != "" || n == 0 {
				break
			}
			if topic, payload, pid, qos, fail := PublishOf(first, body, false); first>>4 == Publish && fail == "" {
				p, err := pahov3.ReadPacket(bytes.NewReader(b[:n]))
				x, ok := p.(*pahov3.PublishPacket)
				if err != nil || !ok || x.TopicName != string(topic) || x.MessageID != pid || x.Qos != qos || !bytes.Equal(x.Payload, payload) {
					t.Fatalf("% x: decoded %q %d %d %q, paho: %v %v", b[:n], topic, pid, qos, payload, p, err)
				}
			}
			b = b[n:]
		}
	})
}

// FuzzMQTTConnack: whatever CONNACK a broker sends, the greeting's
// decoder fails cleanly or reads it as paho does (v5: its code, Server
// Keep Alive and Receive Maximum).
func FuzzMQTTConnack(f *testing.F) {
	f.Add(connack5(0, 0x21, 0, 4), true)
	f.Add(connack5(0, 0x13, 0, 30, 0x21, 0xff, 0xff), true)
	f.Add(connack5(0x87, 0x1f, 0, 3, 'b', 'a', 'd'), true)
	f.Add(connack5(0, 0x21, 0, 0), true)
	f.Add(connack3(5), false)
	f.Fuzz(func(t *testing.T, pkt []byte, isV5 bool) {
		first, body, n, fail := Split(pkt)
		if fail != "" || n == 0 || first>>4 != Connack {
			return
		}
		a, fail := ConnackOf(body, isV5)
		if fail != "" {
			return
		}
		if !isV5 {
			if a.keepalive != -1 || a.receiveMax != 0 || a.code != body[1] {
				t.Fatalf("% x: 3.1.1 read %+v", pkt[:n], a)
			}
			return
		}
		p, err := pahov5.ReadPacket(bytes.NewReader(pkt[:n]))
		if err != nil {
			return // paho is stricter about some properties
		}
		x, ok := p.Content.(*pahov5.Connack)
		if !ok || x.Properties == nil {
			return
		}
		ka, rm := -1, uint16(0)
		if x.Properties.ServerKeepAlive != nil {
			ka = int(*x.Properties.ServerKeepAlive)
		}
		if x.Properties.ReceiveMaximum != nil {
			rm = *x.Properties.ReceiveMaximum
		}
		if a.code != x.ReasonCode || a.keepalive != ka || a.receiveMax != rm {
			t.Fatalf("% x: read %+v, paho code %#x keepalive %d receive maximum %d", pkt[:n], a, x.ReasonCode, ka, rm)
		}
	})
}

// connack3 is a 3.1.1 CONNACK with code.
func connack3(code byte) []byte { return []byte{Connack << 4, 2, 0, code} }

// connack5 is a v5 CONNACK with code and properties.
func connack5(code byte, props ...byte) []byte {
	return append([]byte{Connack << 4, byte(3 + len(props)), 0, code, byte(len(props))}, props...)
}
