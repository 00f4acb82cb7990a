package mqtt

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	pahov5 "github.com/eclipse/paho.golang/packets"
	pahov3 "github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/units"
)

// The MQTT codec against the Go libraries as oracles: packets the client
// writes are read by paho (3.1.1: eclipse/paho.mqtt.golang/packets; 5:
// eclipse/paho.golang/packets), and packets paho writes are decoded by the
// loop's protocol, whole, several to a message, or split over messages.

// mqttRig runs the protocol's decode with a Recorder for its link: it
// keeps what the protocol answered by itself.
type mqttRig struct {
	e   *proto.Env
	rec *proto.Recorder
	s   *proto.Conn
	p   *mqtt
}

func newMQTTRig(tb testing.TB, o Settings) *mqttRig {
	tb.Helper()
	wp, err := proto.Make(proto.Options{Name: Name, Settings: &o})
	if err != nil {
		tb.Fatal(err)
	}
	e, rec := proto.NewEnv()
	return &mqttRig{e: e, rec: rec, s: &proto.Conn{State: mqttOpen}, p: wp.(*mqtt)}
}

// mqttGot is a decoded message, as text.
type mqttGot struct {
	typ             uint8
	Topic, id, Body string
	Grant           uint8
	Why             proto.Reason
}

func (m mqttGot) String() string {
	s := fmt.Sprintf("%s topic=%q id=%q body=%.40q", [...]string{"data", "event", "ack", "next", "complete", "error"}[m.typ], m.Topic, m.id, m.Body)
	if m.Grant > 0 {
		s += fmt.Sprintf(" grant=%d", m.Grant)
	}
	if m.Why != "" {
		s += fmt.Sprintf(" why=%q", m.Why)
	}
	return s
}

// decode hands the rig's protocol each WebSocket message in turn and
// returns what it decoded.
func (g *mqttRig) decode(msgs ...[]byte) (out []mqttGot, fail proto.Reason) {
	for _, msg := range msgs {
		g.e.Msgs = g.e.Msgs[:0]
		fail = g.p.Decode(g.e, g.s, proto.OpBinary, msg, 0)
		for _, m := range g.e.Msgs {
			out = append(out, mqttGot{m.Type, string(m.Topic), string(m.ID), string(m.Body), m.Grant, m.Why})
		}
		g.s.Buf = g.s.Buf[:0] // as the loop does once the run took them
		if fail != "" {
			return out, fail
		}
	}
	return out, ""
}

// replies returns the packets the protocol sent by itself since the
// last call (one MQTT packet per WebSocket message).
func (g *mqttRig) replies(tb testing.TB) [][]byte {
	tb.Helper()
	out := g.rec.Sent
	for _, op := range g.rec.Ops {
		if op != proto.OpBinary {
			tb.Fatalf("reply op %d", op)
		}
	}
	g.rec.Sent, g.rec.Ops = nil, nil
	return out
}

// v3 writes a paho 3.1.1 packet.
func v3(tb testing.TB, p pahov3.ControlPacket) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// v5 writes a paho 5 packet.
func v5(tb testing.TB, p *pahov5.ControlPacket) []byte {
	tb.Helper()
	var b bytes.Buffer
	if _, err := p.WriteTo(&b); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// readV3 reads one packet with paho 3.1.1; it must take every byte.
func readV3(tb testing.TB, b []byte) pahov3.ControlPacket {
	tb.Helper()
	r := bytes.NewReader(b)
	p, err := pahov3.ReadPacket(r)
	if err != nil || r.Len() != 0 {
		tb.Fatalf("paho 3.1.1 reads % x: %v (%d bytes left)", clipBytes(b), err, r.Len())
	}
	return p
}

// readV5 reads one packet with paho 5; it must take every byte.
func readV5(tb testing.TB, b []byte) *pahov5.ControlPacket {
	tb.Helper()
	r := bytes.NewReader(b)
	p, err := pahov5.ReadPacket(r)
	if err != nil || r.Len() != 0 {
		tb.Fatalf("paho 5 reads % x: %v (%d bytes left)", clipBytes(b), err, r.Len())
	}
	return p
}

func clipBytes(b []byte) []byte { return b[:min(len(b), 48)] }

// mqttPayloads cover the remaining length's 1, 2, 3 and 4 byte forms.
var mqttPayloads = []int{0, 5, 200, 20000, 3 << 20}

// TestMQTTEncodeOracle: what the client writes, paho reads as meant.
func TestMQTTEncodeOracle(t *testing.T) {
	for _, pl := range mqttPayloads {
		payload := bytes.Repeat([]byte{'x'}, pl)
		for qos := byte(0); qos <= 2; qos++ {
			pid := uint16(0)
			if qos > 0 {
				pid = 513
			}
			b := AppendPublish(nil, false, []byte("a/b"), payload, qos, pid)
			p := readV3(t, b).(*pahov3.PublishPacket)
			if p.TopicName != "a/b" || p.Qos != qos || p.MessageID != pid || !bytes.Equal(p.Payload, payload) || p.Retain || p.Dup {
				t.Errorf("3.1.1 publish qos %d payload %d: paho read %v", qos, pl, p)
			}
			q := readV5(t, AppendPublish(nil, true, []byte("a/b"), payload, qos, pid)).Content.(*pahov5.Publish)
			if q.Topic != "a/b" || q.QoS != qos || q.PacketID != pid || !bytes.Equal(q.Payload, payload) || q.Retain || q.Duplicate {
				t.Errorf("5 publish qos %d payload %d: paho read %v", qos, pl, q)
			}
		}
	}
	f := mqttConnectFields{clientID: []byte("wsplan-x-0-1"), user: []byte("bench"), pass: []byte("s3cret"), keepalive: 30}
	c := readV3(t, mqttAppendConnect(nil, &f)).(*pahov3.ConnectPacket)
	if c.ProtocolName != "MQTT" || c.ProtocolVersion != 4 || !c.CleanSession || c.WillFlag || c.Keepalive != 30 ||
		c.ClientIdentifier != "wsplan-x-0-1" || !c.UsernameFlag || c.Username != "bench" || !c.PasswordFlag || string(c.Password) != "s3cret" || c.Validate() != 0 {
		t.Errorf("3.1.1 connect: paho read %v (validate %d)", c, c.Validate())
	}
	f.v5, f.user = true, nil // v5: a password without a user name
	c5 := readV5(t, mqttAppendConnect(nil, &f)).Content.(*pahov5.Connect)
	if c5.ProtocolName != "MQTT" || c5.ProtocolVersion != 5 || !c5.CleanStart || c5.WillFlag || c5.KeepAlive != 30 ||
		c5.ClientID != "wsplan-x-0-1" || c5.UsernameFlag || !c5.PasswordFlag || string(c5.Password) != "s3cret" {
		t.Errorf("5 connect: paho read %v", c5)
	}
	s := readV3(t, mqttAppendSubscribe(nil, false, 7, []byte("a/+/#"), 1)).(*pahov3.SubscribePacket)
	if s.MessageID != 7 || len(s.Topics) != 1 || s.Topics[0] != "a/+/#" || s.Qoss[0] != 1 || s.Qos != 1 {
		t.Errorf("3.1.1 subscribe: paho read %v %v", s, s.Qoss)
	}
	s5 := readV5(t, mqttAppendSubscribe(nil, true, 7, []byte("a/+/#"), 2))
	if x := s5.Content.(*pahov5.Subscribe); s5.Flags != 2 || x.PacketID != 7 || len(x.Subscriptions) != 1 || x.Subscriptions[0].Topic != "a/+/#" || x.Subscriptions[0].QoS != 2 {
		t.Errorf("5 subscribe: paho read %v", x)
	}
	u := readV3(t, mqttAppendUnsubscribe(nil, false, 8, []byte("a/b"))).(*pahov3.UnsubscribePacket)
	if u.MessageID != 8 || len(u.Topics) != 1 || u.Topics[0] != "a/b" || u.Qos != 1 {
		t.Errorf("3.1.1 unsubscribe: paho read %v", u)
	}
	u5 := readV5(t, mqttAppendUnsubscribe(nil, true, 8, []byte("a/b")))
	if x := u5.Content.(*pahov5.Unsubscribe); u5.Flags != 2 || x.PacketID != 8 || len(x.Topics) != 1 || x.Topics[0] != "a/b" {
		t.Errorf("5 unsubscribe: paho read %v", x)
	}
	for _, typ := range []byte{Puback, Pubrec, Pubrel, Pubcomp} {
		b := AppendAck(nil, typ, 65535)
		if p := readV3(t, b); p.Details().MessageID != 65535 || pahov3.PacketNames[typ] != mqttNames[typ] {
			t.Errorf("3.1.1 %s: paho read %v", mqttNames[typ], p)
		}
		if p := readV5(t, b); p.Type != typ || p.PacketID() != 65535 {
			t.Errorf("5 %s: paho read %v", mqttNames[typ], p)
		}
	}
	if p, ok := readV3(t, mqttPingreqPacket).(*pahov3.PingreqPacket); !ok {
		t.Errorf("pingreq: paho read %v", p)
	}
}

// TestMQTTDecodeOracle311: packets paho writes, decoded by the protocol,
// with what it answers by itself.
func TestMQTTDecodeOracle311(t *testing.T) {
	g := newMQTTRig(t, Settings{})
	pub := func(qos byte, id uint16, topic string, payload []byte) []byte {
		p := pahov3.NewControlPacket(pahov3.Publish).(*pahov3.PublishPacket)
		p.Qos, p.MessageID, p.TopicName, p.Payload = qos, id, topic, payload
		return v3(t, p)
	}
	ack := func(typ byte, id uint16) []byte {
		p := pahov3.NewControlPacket(typ)
		switch x := p.(type) {
		case *pahov3.PubackPacket:
			x.MessageID = id
		case *pahov3.PubrecPacket:
			x.MessageID = id
		case *pahov3.PubrelPacket:
			x.MessageID = id
		case *pahov3.PubcompPacket:
			x.MessageID = id
		case *pahov3.UnsubackPacket:
			x.MessageID = id
		}
		return v3(t, p)
	}
	suback := func(id uint16, codes ...byte) []byte {
		p := pahov3.NewControlPacket(pahov3.Suback).(*pahov3.SubackPacket)
		p.MessageID, p.ReturnCodes = id, codes
		return v3(t, p)
	}
	big := bytes.Repeat([]byte("0123456789"), 30000)
	for _, tc := range []struct {
		name    string
		in      []byte
		want    []string
		replies []string // type and packet id of what the protocol answered
	}{
		{"publish qos 0", pub(0, 0, "a/b", []byte("hi")), []string{`event topic="a/b" id="" body="hi"`}, nil},
		{"publish qos 1", pub(1, 300, "a/b", []byte("hi")), []string{`event topic="a/b" id="" body="hi"`}, []string{"PUBACK 300"}},
		{"publish qos 2", pub(2, 301, "a/b", nil), []string{`event topic="a/b" id="" body=""`}, []string{"PUBREC 301"}},
		{"publish 300 kB", pub(0, 0, "t", big), []string{fmt.Sprintf(`event topic="t" id="" body=%.40q`, big)}, nil},
		{"pubrel", ack(pahov3.Pubrel, 301), nil, []string{"PUBCOMP 301"}},
		{"puback", ack(pahov3.Puback, 42), []string{`ack topic="" id="42" body="" grant=2 why="mqtt PUBACK to a QoS 2 publish"`}, nil},
		{"pubrec", ack(pahov3.Pubrec, 43), nil, []string{"PUBREL 43"}},
		{"pubcomp", ack(pahov3.Pubcomp, 43), []string{`ack topic="" id="43" body="" grant=3`}, nil},
		{"suback", suback(1, 0, 1, 2), []string{`ack topic="" id="1" body="" grant=1 why="mqtt SUBACK granted QoS 0"`}, nil},
		{"suback qos 2", suback(3, 2), []string{`ack topic="" id="3" body="" grant=3`}, nil},
		{"suback refused", suback(2, 0, 0x80), []string{`error topic="" id="2" body="" why="mqtt 0x80 failure"`}, nil},
		{"unsuback", ack(pahov3.Unsuback, 65535), []string{`ack topic="" id="65535" body=""`}, nil},
		{"pingresp", v3(t, pahov3.NewControlPacket(pahov3.Pingresp)), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, fail := g.decode(tc.in)
			if fail != "" || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("decoded %v (%q), want %v", got, fail, tc.want)
			}
			var replies []string
			for _, r := range g.replies(t) {
				p := readV3(t, r)
				replies = append(replies, fmt.Sprintf("%s %d", pahov3.PacketNames[r[0]>>4], p.Details().MessageID))
			}
			if fmt.Sprint(replies) != fmt.Sprint(tc.replies) {
				t.Fatalf("answered %v, want %v", replies, tc.replies)
			}
		})
	}
	for code := byte(0); code <= 6; code++ {
		p := pahov3.NewControlPacket(pahov3.Connack).(*pahov3.ConnackPacket)
		p.ReturnCode = code
		first, body, _, _ := Split(v3(t, p))
		got, fail := ConnackOf(body, false)
		if first>>4 != Connack || got.code != code || got.keepalive != -1 || got.receiveMax != 0 || fail != "" {
			t.Errorf("connack %d: read %+v (%q)", code, got, fail)
		}
	}
	if got := mqttCodeText(5, false); got != "not authorized (5)" {
		t.Errorf("code 5: %q", got)
	}
}

// TestMQTTDecodeOracle5: MQTT 5's packets, with properties and reason
// codes, as paho writes them.
func TestMQTTDecodeOracle5(t *testing.T) {
	g := newMQTTRig(t, Settings{Version: Version5})
	props := func() *pahov5.Properties {
		pf := byte(1)
		return &pahov5.Properties{PayloadFormat: &pf, ContentType: "text/plain", ResponseTopic: "r/t", CorrelationData: []byte{1, 2},
			User: []pahov5.User{{Key: "k", Value: "v"}}, ReasonString: "because"}
	}
	pub := func(qos byte, id uint16, topic string, payload []byte) []byte {
		p := pahov5.NewControlPacket(pahov5.PUBLISH)
		x := p.Content.(*pahov5.Publish)
		x.QoS, x.PacketID, x.Topic, x.Payload = qos, id, topic, payload
		x.Properties = props()
		x.Properties.ReasonString = ""
		return v5(t, p)
	}
	ack := func(typ byte, id uint16, code byte) []byte {
		p := pahov5.NewControlPacket(typ)
		switch x := p.Content.(type) {
		case *pahov5.Puback:
			x.PacketID, x.ReasonCode, x.Properties = id, code, props()
		case *pahov5.Pubrec:
			x.PacketID, x.ReasonCode = id, code
		case *pahov5.Pubrel:
			x.PacketID, x.ReasonCode = id, code
		case *pahov5.Pubcomp:
			x.PacketID, x.ReasonCode = id, code
		case *pahov5.Suback:
			x.PacketID, x.Reasons, x.Properties = id, []byte{code}, props()
		case *pahov5.Unsuback:
			x.PacketID, x.Reasons = id, []byte{0, code}
		}
		return v5(t, p)
	}
	for _, tc := range []struct {
		name    string
		in      []byte
		want    []string
		replies []string
		fail    proto.Reason
	}{
		{"publish qos 0 with properties", pub(0, 0, "a/b", []byte("hi")), []string{`event topic="a/b" id="" body="hi"`}, nil, ""},
		{"publish qos 1", pub(1, 9, "a/b", []byte("hi")), []string{`event topic="a/b" id="" body="hi"`}, []string{"PUBACK 9"}, ""},
		{"publish qos 2", pub(2, 10, "a/b", []byte("hi")), []string{`event topic="a/b" id="" body="hi"`}, []string{"PUBREC 10"}, ""},
		{"pubrel", ack(pahov5.PUBREL, 10, 0), nil, []string{"PUBCOMP 10"}, ""},
		{"puback", ack(pahov5.PUBACK, 11, 0), []string{`ack topic="" id="11" body="" grant=2 why="mqtt PUBACK to a QoS 2 publish"`}, nil, ""},
		{"puback no subscribers", ack(pahov5.PUBACK, 12, 0x10), []string{`ack topic="" id="12" body="" grant=2 why="mqtt PUBACK to a QoS 2 publish"`}, nil, ""},
		{"puback refused", ack(pahov5.PUBACK, 13, 0x87), []string{`error topic="" id="13" body="" why="mqtt 0x87 not authorized"`}, nil, ""},
		{"pubrec", ack(pahov5.PUBREC, 14, 0), nil, []string{"PUBREL 14"}, ""},
		{"pubrec refused", ack(pahov5.PUBREC, 15, 0x97), []string{`error topic="" id="15" body="" why="mqtt 0x97 quota exceeded"`}, nil, ""},
		{"pubcomp", ack(pahov5.PUBCOMP, 14, 0), []string{`ack topic="" id="14" body="" grant=3`}, nil, ""},
		{"pubcomp not found", ack(pahov5.PUBCOMP, 16, 0x92), []string{`error topic="" id="16" body="" why="mqtt 0x92 packet identifier not found"`}, nil, ""},
		{"suback", ack(pahov5.SUBACK, 17, 1), []string{`ack topic="" id="17" body="" grant=2 why="mqtt SUBACK granted QoS 1"`}, nil, ""},
		{"suback refused", ack(pahov5.SUBACK, 18, 0x8f), []string{`error topic="" id="18" body="" why="mqtt 0x8f topic filter invalid"`}, nil, ""},
		{"suback unspecified", ack(pahov5.SUBACK, 21, 0x80), []string{`error topic="" id="21" body="" why="mqtt 0x80 unspecified error"`}, nil, ""},
		{"unsuback", ack(pahov5.UNSUBACK, 19, 0x11), []string{`ack topic="" id="19" body=""`}, nil, ""},
		{"unsuback refused", ack(pahov5.UNSUBACK, 20, 0x87), []string{`error topic="" id="20" body="" why="mqtt 0x87 not authorized"`}, nil, ""},
		{"pingresp", v5(t, pahov5.NewControlPacket(pahov5.PINGRESP)), nil, nil, ""},
		{"disconnect", func() []byte {
			p := pahov5.NewControlPacket(pahov5.DISCONNECT)
			p.Content.(*pahov5.Disconnect).ReasonCode = 0x8b
			return v5(t, p)
		}(), nil, nil, "mqtt: disconnected by the broker: server shutting down (139)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, fail := g.decode(tc.in)
			if fail != tc.fail || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("decoded %v (%q), want %v (%q)", got, fail, tc.want, tc.fail)
			}
			var replies []string
			for _, r := range g.replies(t) {
				p := readV5(t, r)
				replies = append(replies, fmt.Sprintf("%s %d", mqttNames[p.Type], p.PacketID()))
			}
			if fmt.Sprint(replies) != fmt.Sprint(tc.replies) {
				t.Fatalf("answered %v, want %v", replies, tc.replies)
			}
		})
	}
	ka, four, most := uint16(7), uint16(4), uint16(65535)
	for _, tc := range []struct {
		code    byte
		ka, rm  *uint16
		want    int
		wantMax uint16
	}{{0, nil, nil, -1, 0}, {0, &ka, nil, 7, 0}, {0x87, nil, nil, -1, 0}, {0x86, &ka, &four, 7, 4}, {0, nil, &four, -1, 4}, {0, &ka, &most, 7, 65535}} {
		p := pahov5.NewControlPacket(pahov5.CONNACK)
		x := p.Content.(*pahov5.Connack)
		x.ReasonCode = tc.code
		x.Properties = props()
		x.Properties.ServerKeepAlive, x.Properties.AssignedClientID = tc.ka, "assigned"
		x.Properties.ReceiveMaximum = tc.rm
		_, body, _, _ := Split(v5(t, p))
		got, fail := ConnackOf(body, true)
		if got.code != tc.code || got.keepalive != tc.want || got.receiveMax != tc.wantMax || fail != "" {
			t.Errorf("connack %#x keepalive %v receive maximum %v: read %+v (%q)", tc.code, tc.ka, tc.rm, got, fail)
		}
	}
	if got := mqttCodeText(0x87, true); got != "not authorized (135)" {
		t.Errorf("code 0x87: %q", got)
	}
}

// TestMQTTSplitAndJoined: packets split over WebSocket messages at every
// byte, and several packets in one message, decode as when whole; a
// partial packet waits for its rest.
func TestMQTTSplitAndJoined(t *testing.T) {
	g := newMQTTRig(t, Settings{})
	var stream []byte
	var want []mqttGot
	for i, n := range []int{0, 1, 126, 300, 17000} {
		topic := fmt.Sprintf("t/%d", i)
		body := strings.Repeat(string(rune('a'+i)), n)
		stream = AppendPublish(stream, false, []byte(topic), []byte(body), 0, 0)
		stream = append(stream, 0x90, 3, 0, byte(i+1), 0) // SUBACK
		want = append(want, mqttGot{proto.MsgEvent, topic, "", body, 0, ""}, mqttGot{proto.MsgAck, "", fmt.Sprint(i + 1), "", 1, mqttGranted[0]})
	}
	if got, fail := g.decode(stream); fail != "" || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("all in one message: %v (%q)", got, fail)
	}
	for cut := 1; cut < len(stream); cut += 1 + cut/64 {
		got, fail := g.decode(stream[:cut], stream[cut:])
		if fail != "" || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("cut at %d: %v (%q)", cut, got, fail)
		}
		if len(g.s.Part) != 0 {
			t.Fatalf("cut at %d: %d bytes kept after the whole stream", cut, len(g.s.Part))
		}
	}
	var msgs [][]byte
	for i := 0; i < len(stream); i += 7 {
		msgs = append(msgs, stream[i:min(i+7, len(stream))])
	}
	if got, fail := g.decode(msgs...); fail != "" || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("7-byte messages: %v (%q)", got, fail)
	}
	if got, fail := g.decode(stream[:1]); fail != "" || len(got) != 0 || len(g.s.Part) != 1 {
		t.Fatalf("one byte: %v (%q), kept %d", got, fail, len(g.s.Part))
	}
}

// TestMQTTMalformed: what the protocol refuses, and why.
func TestMQTTMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		v5   bool
		in   []byte
		want proto.Reason
	}{
		{"five length bytes", false, []byte{0x30, 0xff, 0xff, 0xff, 0xff, 0x01}, reasonMQTTLength},
		{"too large", false, []byte{0x30, 0xff, 0xff, 0xff, 0x7f}, reasonMQTTTooBig},
		{"qos 3", false, []byte{0x36, 5, 0, 1, 't', 0, 1}, reasonMQTTQoS},
		{"topic past the end", false, []byte{0x30, 3, 0, 9, 't'}, reasonMQTTMalformed},
		{"publish id 0", false, []byte{0x32, 5, 0, 1, 't', 0, 0}, reasonMQTTPacketID},
		{"puback too long", false, []byte{0x40, 3, 0, 1, 0}, reasonMQTTMalformed},
		{"v5 properties past the end", true, []byte{0x30, 4, 0, 1, 't', 9}, reasonMQTTMalformed},
		{"connect from the broker", false, []byte{0x10, 0}, "mqtt: unexpected CONNECT from the broker"},
		{"pingreq from the broker", false, []byte{0xc0, 0}, "mqtt: unexpected PINGREQ from the broker"},
		{"connack after the greeting", false, []byte{0x20, 2, 0, 0}, "mqtt: unexpected CONNACK from the broker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Settings{}
			if tc.v5 {
				o.Version = Version5
			}
			g := newMQTTRig(t, o)
			if _, fail := g.decode(tc.in); fail != tc.want {
				t.Fatalf("failed with %q, want %q", fail, tc.want)
			}
		})
	}
	g := newMQTTRig(t, Settings{})
	if fail := g.p.Decode(g.e, g.s, proto.OpText, []byte{0xd0, 0}, 0); fail != reasonMQTTText {
		t.Fatalf("a text message: %q", fail)
	}
}

// TestMQTTOptions: versions, keepalives and logins a plan may give.
func TestMQTTOptions(t *testing.T) {
	for _, tc := range []struct {
		o    Settings
		want string
	}{
		{Settings{}, ""},
		{Settings{Version: "5", Keepalive: units.Duration(65535 * time.Second), Password: "x"}, ""},
		{Settings{Version: "3.1"}, `mqtt: version "3.1": want 3.1.1 or 5`},
		{Settings{Keepalive: units.Duration(1500 * time.Millisecond)}, "mqtt: keepalive 1.5s: want whole seconds"},
		{Settings{Keepalive: units.Duration(65536 * time.Second)}, "mqtt: keepalive: must be <= 18h12m15s, got 18h12m16s"},
		{Settings{Password: "x"}, "mqtt: password: needs a username in MQTT 3.1.1 (or use version 5)"},
	} {
		_, err := proto.Make(proto.Options{Name: Name, Settings: &tc.o})
		if got := fmt.Sprint(err); (err == nil) != (tc.want == "") || err != nil && got != tc.want {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	p, _ := New(&Settings{Version: Version311, Keepalive: units.Duration(time.Minute)})
	var s proto.Conn
	for _, tc := range []struct {
		m    proto.Out
		want error
	}{
		{proto.Out{Verb: proto.VerbPublish, Topic: []byte("a/+")}, errMQTTTopic},
		{proto.Out{Verb: proto.VerbPublish}, errMQTTTopic},
		{proto.Out{Verb: proto.VerbSubscribe}, errMQTTFilter},
		{proto.Out{Verb: proto.VerbPublish, Topic: []byte("a"), QoS: 3}, errMQTTQoS},
		{proto.Out{Verb: proto.VerbPublish, Topic: make([]byte, 65536)}, errMQTTTooLarge},
	} {
		if _, _, _, err := p.Encode(nil, &s, &tc.m, nil); !errors.Is(err, tc.want) {
			t.Errorf("encode %+v: %v, want %v", tc.m.Verb, err, tc.want)
		}
	}
	s.IDs = 65534
	for _, want := range []string{"65535", "1"} {
		_, _, id, err := p.Encode(nil, &s, &proto.Out{Verb: proto.VerbPublish, Topic: []byte("a"), QoS: 1}, nil)
		if err != nil || string(id) != want {
			t.Errorf("packet id %q (%v), want %s (ids wrap past 65535, skipping 0)", id, err, want)
		}
	}
}

// TestMQTTRooms: the broadcast phase's rooms are topics wsplan/room/N:
// joining subscribes (SUBACK answers, by packet id), publishing is a QoS 0
// PUBLISH of the phase's bytes, a delivery is its payload.
func TestMQTTRooms(t *testing.T) {
	for _, v := range mqttVersions {
		g := newMQTTRig(t, Settings{Version: v})
		rp := proto.Rooms(g.p)
		join, op, id, answered := rp.JoinRoom(nil, g.s, 12, []byte("x"))
		if v == Version5 {
			if x, ok := readV5(t, join).Content.(*pahov5.Subscribe); !ok || x.Subscriptions[0].Topic != "wsplan/room/12" || x.Subscriptions[0].QoS != 0 || x.PacketID != 1 {
				t.Errorf("join: %v", x)
			}
		} else {
			s := readV3(t, join).(*pahov3.SubscribePacket)
			if s.Topics[0] != "wsplan/room/12" || s.Qoss[0] != 0 || s.MessageID != 1 {
				t.Errorf("join: %v", s)
			}
		}
		if op != proto.OpBinary || string(id) != "x1" || !answered {
			t.Errorf("join: op %d id %q answered %v", op, id, answered)
		}
		payload := []byte{0, 1, 2, 255}
		pub, _ := rp.PublishRoom(nil, g.s, 12, payload)
		got, fail := g.decode(pub, []byte{0x90, 3, 0, 1, 0})
		if fail != "" || len(got) != 2 || got[0].Topic != "wsplan/room/12" || got[0].Body != string(payload) || got[1].typ != proto.MsgAck || got[1].id != "1" {
			t.Fatalf("%s: published and acknowledged: %v (%q)", v, got, fail)
		}
		m := proto.NewMessage(proto.MsgEvent, proto.OpBinary, []byte("wsplan/room/12"), nil, payload)
		if d, ok := rp.Delivery(&m, nil); !ok || !bytes.Equal(d, payload) {
			t.Errorf("delivery: %q %v", d, ok)
		}
		m.Topic = []byte("other/12")
		if _, ok := rp.Delivery(&m, nil); ok {
			t.Error("a PUBLISH on another topic is a delivery")
		}
	}
}

// mqttVersions are the versions the codec's tests run with.
var mqttVersions = []string{Version311, Version5}

// TestMQTTRefusalAllocs: a refusal's reason, counted, allocates nothing.
func TestMQTTRefusalAllocs(t *testing.T) {
	m := map[proto.Reason]int{}
	round := func() { m[mqttRefusal(0x87, true)]++ }
	round()
	if n := testing.AllocsPerRun(1000, round); n > 0 {
		t.Fatalf("%.1f allocations per round, want 0", n)
	}
	if m["mqtt 0x87 not authorized"] != 1002 {
		t.Fatalf("counted %v", m)
	}
}
