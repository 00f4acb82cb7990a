package script

import (
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/proto/mqtt"
	"golang.org/x/sys/unix"
)

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
`, client.ProtocolOptions{Name: mqtt.Name})
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
		_, body, _, _ := mqtt.Split(p)
		_, _, pid, qos, fail := mqtt.PublishOf(p[0], body, false)
		if qos != 1 || fail != "" {
			t.Fatalf("sent % x: want a QoS 1 PUBLISH", p)
		}
		ack = append(ack[:0], 0x80|client.OpBinary, 4)
		ack = mqtt.AppendAck(ack, mqtt.Puback, pid)
		if _, err := unix.Write(g.peer, ack); err != nil {
			t.Fatal(err)
		}
		g.l.ReadFrames(g.c)
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

// newScriptRigProto is newScriptRig whose connection speaks o's protocol.
func newScriptRigProto(tb testing.TB, body string, o client.ProtocolOptions) *scriptRig {
	tb.Helper()
	return newScriptRigWith(tb, body, &o)
}
