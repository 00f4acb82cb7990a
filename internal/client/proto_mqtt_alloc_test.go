package client

import (
	"bytes"
	"fmt"
	"testing"

	pahov3 "github.com/eclipse/paho.mqtt.golang/packets"
	"golang.org/x/sys/unix"
)

// What MQTT costs on the loop's receive path (≤ 2 allocations per message
// is the bar; it makes none), and the decoder under the fuzzer.

// countRun counts the messages a protocol hands the run.
type countRun struct {
	baseRun
	msgs, bytes int64
}

func (r *countRun) onMessage(_ *loop, _ *conn, m *message, _ int64) {
	r.msgs++
	r.bytes += int64(len(m.Body))
}
func (*countRun) lost(*loop, *conn, uint8, Reason) {}
func (r *countRun) finish(l *loop, stopped bool, _ int64) {
	l.finished(r.phase, &HoldResult{}, stopped)
}

// TestMQTTReceiveAllocs: the broker's PUBLISHes, read from the socket,
// unframed, decoded and handed to the run, one to a message, several to a
// message, split over messages, at QoS 1 (the protocol sends PUBACK), and
// a QoS 1 publish's PUBACK: no allocation per message in steady state.
func TestMQTTReceiveAllocs(t *testing.T) {
	payload := bytes.Repeat([]byte("p"), 256)
	pub := mqttAppendPublish(nil, false, []byte("wsplan/room/7"), payload, 0, 0)
	pub1 := mqttAppendPublish(nil, false, []byte("wsplan/room/7"), payload, 1, 77)
	three := bytes.Repeat(pub, 3)
	h := len(pub) / 2
	for _, tc := range []struct {
		name   string
		frames [][]byte
		msgs   int64
	}{
		{"one packet a message", [][]byte{serverFrame(true, opBinary, pub)}, 1},
		{"three packets a message", [][]byte{serverFrame(true, opBinary, three)}, 3},
		{"a packet over two messages", [][]byte{serverFrame(true, opBinary, pub[:h]), serverFrame(true, opBinary, pub[h:])}, 1},
		{"a packet in two fragments", [][]byte{serverFrame(false, opBinary, pub[:h]), serverFrame(true, opContinuation, pub[h:])}, 1},
		{"qos 1, answered", [][]byte{serverFrame(true, opBinary, pub1)}, 1},
		{"a puback", [][]byte{serverFrame(true, opBinary, mqttAppendAck(nil, mqttPuback, 9))}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newMQTTRig(t, ProtocolOptions{})
			r := &countRun{baseRun: baseRun{1}}
			g.l.ph = r
			round := func() {
				for _, f := range tc.frames {
					if _, err := unix.Write(g.peer, f); err != nil {
						t.Fatal(err)
					}
					g.l.readFrames(g.c)
				}
				if _, err := unix.Read(g.peer, g.rbuf); err != nil && err != unix.EAGAIN {
					t.Fatal(err)
				}
			}
			for range 100 {
				round()
			}
			if n := testing.AllocsPerRun(1000, round); n > 0 {
				t.Errorf("%.2f allocations per round, want 0", n)
			}
			if want := 1101 * tc.msgs; r.msgs != want || g.c.state != stOpen {
				t.Fatalf("run got %d messages, want %d (conn state %d)", r.msgs, want, g.c.state)
			}
		})
	}
}

// TestMQTTScriptExchangeAllocs: a QoS 1 publish and its PUBACK, through
// the script kind (render, encode, send, read, decode, match by packet
// id, record): no allocation in steady state.
func TestMQTTScriptExchangeAllocs(t *testing.T) {
	g := newScriptRigProto(t, `
steps:
  - loop:
      count: 100000000
      steps:
        - publish: {topic: "wsplan/t/{{.conn}}", payload: '{"n":{{.seq}}}', qos: 1, as: puback}
`, ProtocolOptions{Name: ProtoMQTT})
	in := make([]byte, 4096)
	ack := make([]byte, 0, 16)
	round := func() {
		n, err := unix.Read(g.peer, in)
		if err != nil || n < 6 || int(in[1]&0x7f) != n-6 {
			t.Fatalf("read %d bytes (%v): want one short masked frame", n, err)
		}
		p := in[6:n]
		for i := range p {
			p[i] ^= in[2+i%4]
		}
		_, body, _, _ := mqttSplit(p)
		_, _, pid, qos, fail := mqttPublishOf(p[0], body, false)
		if qos != 1 || fail != "" {
			t.Fatalf("sent % x: want a QoS 1 PUBLISH", p)
		}
		ack = append(ack[:0], 0x80|opBinary, 4)
		ack = mqttAppendAck(ack, mqttPuback, pid)
		if _, err := unix.Write(g.peer, ack); err != nil {
			t.Fatal(err)
		}
		g.l.readFrames(g.c)
	}
	for range 100 {
		round()
	}
	if n := testing.AllocsPerRun(2000, round); n > 0 {
		t.Fatalf("%.2f allocations per exchange, want 0", n)
	}
	if e := g.r.exch[0]; e.Count != 2101 || e.Mismatched != 0 || e.Errors != 0 {
		t.Fatalf("exchanges %+v", e)
	}
}

// FuzzMQTTDecode: whatever the broker sends, the decoder fails cleanly or
// decodes; split anywhere over two messages it decodes the same; and each
// PUBLISH it takes (3.1.1), paho reads with the same topic, id and payload.
func FuzzMQTTDecode(f *testing.F) {
	f.Add(mqttAppendPublish(nil, false, []byte("a/b"), []byte("hello"), 1, 3), uint8(3), false)
	f.Add(append(mqttAppendPublish(nil, true, []byte("t"), bytes.Repeat([]byte("x"), 300), 2, 9), 0x90, 4, 0, 9, 0, 1), uint8(200), true)
	f.Add([]byte{0x50, 2, 0, 5, 0x62, 2, 0, 5, 0x70, 2, 0, 5, 0xd0, 0}, uint8(5), false)
	f.Add([]byte{0x40, 4, 0, 5, 0x87, 0, 0xb0, 3, 0, 1, 0}, uint8(1), true)
	f.Add([]byte{0x30, 0xff, 0xff, 0xff, 0x7f}, uint8(2), false)
	rigs := map[bool]*mqttRig{false: newMQTTRig(f, ProtocolOptions{}), true: newMQTTRig(f, ProtocolOptions{Version: MQTTVersion5})}
	f.Fuzz(func(t *testing.T, data []byte, cut uint8, isV5 bool) {
		g := rigs[isV5]
		run := func(msgs ...[]byte) string {
			g.s.part, g.s.partAt = nil, 0
			got, fail := g.decode(msgs...)
			for g.replies(t) != nil { // drain what the protocol answered
			}
			if fail != "" {
				return fmt.Sprint(got, fail)
			}
			return fmt.Sprint(got, " kept ", len(g.s.part)-g.s.partAt)
		}
		whole := run(data)
		k := int(cut) % (len(data) + 1)
		if split := run(data[:k], data[k:]); split != whole {
			t.Fatalf("split at %d: %s, whole: %s", k, split, whole)
		}
		for b := data; !isV5; {
			first, body, n, fail := mqttSplit(b)
			if fail != "" || n == 0 {
				break
			}
			if topic, payload, pid, qos, fail := mqttPublishOf(first, body, false); first>>4 == mqttPublish && fail == "" {
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

// newScriptRigProto is newScriptRig whose connection speaks o's protocol.
func newScriptRigProto(tb testing.TB, body string, o ProtocolOptions) *scriptRig {
	tb.Helper()
	p, err := makeProtocol(o)
	if err != nil {
		tb.Fatal(err)
	}
	return newScriptRigWith(tb, body, p)
}
