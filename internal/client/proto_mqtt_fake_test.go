package client

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/proto/mqtt"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// The MQTT protocol against a fake broker that bends the rules: refusals,
// silence, a Server Keep Alive, packets cut across messages.

// fakeBroker speaks just enough MQTT over WebSocket for a test.
type fakeBroker struct {
	connack  func(n int64) [][]byte // the messages that answer the n-th CONNECT (1-based); nil = silence
	pingresp bool                   // answer PINGREQ
	op       byte                   // opcode of its messages; 0 = binary

	mu       sync.Mutex
	ids      []string // client ids of the CONNECTs
	offered  []string // Sec-WebSocket-Protocol of the upgrades
	connects atomic.Int64
	pings    atomic.Int64
}

// start serves fb on a loopback port until the test ends.
func (fb *fakeBroker) start(t testing.TB) string {
	s := &testserver.RawServer{Handshake: fb.serve}
	return s.Start(t)
}

func (fb *fakeBroker) serve(c net.Conn, r *bufio.Reader) {
	req, err := http.ReadRequest(r)
	if err != nil {
		return
	}
	fb.mu.Lock()
	fb.offered = append(fb.offered, req.Header.Get("Sec-WebSocket-Protocol"))
	fb.mu.Unlock()
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Protocol: mqtt\r\nSec-WebSocket-Accept: " +
		testserver.Accept(req.Header.Get("Sec-WebSocket-Key")) + "\r\n\r\n"
	if _, err := c.Write([]byte(resp)); err != nil {
		return
	}
	op := fb.op
	if op == 0 {
		op = OpBinary
	}
	for {
		_, _, p, err := testserver.ReadClientFrame(r)
		if err != nil {
			return
		}
		first, body, n, _ := mqtt.Split(p)
		if n == 0 {
			return
		}
		switch first >> 4 {
		case mqtt.Connect:
			// protocol name, level, flags, keepalive, [v5 properties], client id
			rest := body[10:]
			if body[6] == 5 {
				_, rest, _ = mqtt.SkipProps(rest)
			}
			id, _, _ := mqtt.ReadString(rest)
			fb.mu.Lock()
			fb.ids = append(fb.ids, string(id))
			fb.mu.Unlock()
			k := fb.connects.Add(1)
			if fb.connack == nil {
				continue
			}
			for _, m := range fb.connack(k) {
				if _, err := c.Write(testserver.ServerFrame(true, op, m)); err != nil {
					return
				}
			}
		case mqtt.Pingreq:
			fb.pings.Add(1)
			if fb.pingresp {
				if _, err := c.Write(testserver.ServerFrame(true, op, []byte{mqtt.Pingresp << 4, 0})); err != nil {
					return
				}
			}
		}
	}
}

// connack3 and connack5 are CONNACKs with a code (v5: and properties).
func connack3(code byte) []byte { return []byte{mqtt.Connack << 4, 2, 0, code} }
func connack5(code byte, props ...byte) []byte {
	return append([]byte{mqtt.Connack << 4, byte(3 + len(props)), 0, code, byte(len(props))}, props...)
}

// TestMQTTGreetingFake: CONNECT carries a client id of its own per
// connection and the subprotocol is offered; a refusal, silence, a text
// message or another packet before CONNACK fails the attempt with MQTT's
// reason; a CONNACK cut over two messages opens the connection.
func TestMQTTGreetingFake(t *testing.T) {
	ok := func(int64) [][]byte { return [][]byte{connack3(0)} }
	for _, tc := range []struct {
		name    string
		version string
		fb      *fakeBroker
		want    Reason // "" = every connection opens
	}{
		{"accepted", "", &fakeBroker{connack: ok}, ""},
		{"connack in two messages", mqtt.Version5, &fakeBroker{connack: func(int64) [][]byte {
			c := connack5(0, 0x13, 0, 30) // with a Server Keep Alive
			return [][]byte{c[:3], c[3:]}
		}}, ""},
		{"refused 3.1.1", "", &fakeBroker{connack: func(int64) [][]byte { return [][]byte{connack3(2)} }}, "mqtt: connack: identifier rejected (2)"},
		{"refused 5", mqtt.Version5, &fakeBroker{connack: func(int64) [][]byte { return [][]byte{connack5(0x8a)} }}, "mqtt: connack: banned (138)"},
		{"silent", "", &fakeBroker{}, "mqtt: no CONNACK"},
		{"text message", "", &fakeBroker{connack: ok, op: OpText}, "mqtt: a text message (MQTT travels in binary messages)"},
		{"publish first", "", &fakeBroker{connack: func(int64) [][]byte { return [][]byte{{0x30, 3, 0, 1, 't'}} }}, "mqtt: PUBLISH before CONNACK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.fb.start(t)
			c := mqttClient(t, addr, mqtt.Settings{Version: tc.version})
			res, err := c.Connect(t.Context(), ConnectParams{Connections: 20, Concurrency: 20, Timeout: units.Duration(500 * time.Millisecond), Retries: -1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" {
				if res.Success != 0 || res.Errors[tc.want] != 20 {
					t.Fatalf("success %d errors %v, want 20 × %q", res.Success, res.Errors, tc.want)
				}
				return
			}
			if res.Success != 20 || res.Greeting.TotalCount() != 20 || res.Subprotocol != "mqtt" {
				t.Fatalf("success %d greetings %d subprotocol %q errors %v", res.Success, res.Greeting.TotalCount(), res.Subprotocol, res.Errors)
			}
			tc.fb.mu.Lock()
			defer tc.fb.mu.Unlock()
			seen := map[string]bool{}
			for i, id := range tc.fb.ids {
				if seen[id] || !strings.HasPrefix(id, "wsplan-") || tc.fb.offered[i] != "mqtt" {
					t.Fatalf("connection %d: client id %q (seen: %v), offered %q", i, id, seen[id], tc.fb.offered[i])
				}
				seen[id] = true
			}
		})
	}
}

// TestMQTTKeepaliveFake: a v5 broker's Server Keep Alive (1 s) replaces
// the client's 60 s: PINGREQs go every half second (over 1.5 s, at least
// one a connection, where 60 s would send none, and never more often than
// that, which a slow host cannot break: it sends fewer); a broker that
// never answers them (nor sends anything) fails the connections after
// 1.5 × the keepalive, with that reason (the wait ends when they fail).
func TestMQTTKeepaliveFake(t *testing.T) {
	testenv.Slow(t, "3 s: MQTT keepalives waited for")
	fb := &fakeBroker{pingresp: true, connack: func(int64) [][]byte { return [][]byte{connack5(0, 0x13, 0, 1)} }}
	c := mqttClient(t, fb.start(t), mqtt.Settings{Version: mqtt.Version5})
	mustConnect(t, c, 2)
	res, err := idle(t.Context(), c, 1500*time.Millisecond, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	// At most one a connection at 0, 0.5, 1 and 1.5 s.
	if res.Alive != 2 || fb.pings.Load() < 2 || fb.pings.Load() > 8 {
		t.Fatalf("alive %d, %d PINGREQs in 1.5 s on 2 connections, want 2 to 8 (every 0.5 s)", res.Alive, fb.pings.Load())
	}

	mute := &fakeBroker{connack: func(int64) [][]byte { return [][]byte{connack3(0)} }}
	c = mqttClient(t, mute.start(t), mqtt.Settings{Keepalive: units.Duration(time.Second)})
	mustConnect(t, c, 3)
	start := time.Now()
	res, err = idleUntilDropped(t.Context(), c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Alive != 0 || res.Errors["mqtt: no packet from the broker within 1.5 × keepalive"] != 3 || mute.pings.Load() == 0 {
		t.Fatalf("alive %d errors %v PINGREQs %d after %v, want 3 × %q", res.Alive, res.Errors, mute.pings.Load(), time.Since(start), "mqtt: no packet from the broker within 1.5 × keepalive")
	}
}
