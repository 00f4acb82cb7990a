package faultserver

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// start serves o until the test ends.
func start(t *testing.T, o Options) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// dial opens a WebSocket to path on s.
func dial(t *testing.T, s *Server, path string, subprotocols ...string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{Subprotocols: subprotocols, HandshakeTimeout: 500 * time.Millisecond}
	return d.Dial("ws://"+s.Addr()+path, nil)
}

// reader reads a connection's messages into a channel ("closed CODE"
// for a close): a gorilla read that timed out cannot be retried.
func reader(c *websocket.Conn) <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		for {
			_, b, err := c.ReadMessage()
			if ce, ok := err.(*websocket.CloseError); ok {
				ch <- "closed " + strconv.Itoa(ce.Code)
				return
			}
			if err != nil {
				return
			}
			ch <- string(b)
		}
	}()
	return ch
}

// answers returns what comes on ch within 150 ms, joined by " + ".
func answers(ch <-chan string) string {
	var got []string
	t := time.After(150 * time.Millisecond)
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				return strings.Join(got, " + ")
			}
			got = append(got, m)
		case <-t:
			return strings.Join(got, " + ")
		}
	}
}

// convCh writes each message of send and collects its answers from ch
// (c's reader).
func convCh(t *testing.T, c *websocket.Conn, ch <-chan string, op int, send ...string) (got []string) {
	t.Helper()
	for _, m := range send {
		if err := c.WriteMessage(op, []byte(m)); err != nil {
			t.Fatal(err)
		}
		got = append(got, answers(ch))
	}
	return got
}

// textCase is a conversation in text messages: each message sent, and
// what comes back within 150 ms (answers).
type textCase struct {
	name string
	o    Options
	send []string
	want []string
}

// runText runs each case against its own server on path, offering
// subprotocols; opening is the start of the server's first message, sent
// before the client's ("" = none).
func runText(t *testing.T, path, opening string, cases []textCase, subprotocols ...string) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _, err := dial(t, start(t, tc.o), path, subprotocols...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ch := reader(c)
			if opening != "" {
				if open := answers(ch); !strings.HasPrefix(open, opening) {
					t.Fatalf("first message %q, want %s…", open, opening)
				}
			}
			if got := convCh(t, c, ch, websocket.TextMessage, tc.send...); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRaw: the echo answers, wrongly (a digit, the last byte), or not
// at all; the upgrade is refused, garbled or left hanging; Spare and
// Every pick which units are hit.
func TestRaw(t *testing.T) {
	runText(t, PathRaw, "", []textCase{
		{"echo", Options{}, []string{"a1", "b2"}, []string{"a1", "b2"}},
		{"wrong", Options{Fault: Wrong}, []string{"a1", "b9", "xy"}, []string{"a2", "b0", "xx"}},
		{"drop every 2nd after 1", Options{Fault: Drop, Every: 2, Spare: 1}, []string{"1", "2", "3", "4"}, []string{"1", "2", "", "4"}},
	})
	for _, tc := range []struct {
		fault  Fault
		status int // 0 = no answer
	}{{Refuse, 401}, {Garble, 200}, {Mute, 0}} {
		t.Run(string(tc.fault), func(t *testing.T) {
			t.Parallel()
			s := start(t, Options{Fault: tc.fault, Spare: 1})
			c, _, err := dial(t, s, PathRaw)
			if err != nil {
				t.Fatalf("the spared upgrade: %v", err)
			}
			c.Close()
			_, resp, err := dial(t, s, PathRaw)
			switch {
			case err == nil:
				t.Fatal("upgraded")
			case tc.status == 0 && resp != nil:
				t.Fatalf("answered %d", resp.StatusCode)
			case tc.status != 0 && (resp == nil || resp.StatusCode != tc.status):
				t.Fatalf("response %v (%v), want %d", resp, err, tc.status)
			}
		})
	}
}

// TestRawRooms: a room's members get each message, the sender too; with
// Deliveries, Drop leaves some out and answers stay untouched.
func TestRawRooms(t *testing.T) {
	s := start(t, Options{Fault: Drop, Deliveries: true, Every: 2})
	a, _, err := dial(t, s, PathRaw+"?room=1")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _, err := dial(t, s, PathRaw+"?room=1")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ra, rb := reader(a), reader(b)
	if err := a.WriteMessage(websocket.BinaryMessage, []byte("m")); err != nil {
		t.Fatal(err)
	}
	// Two deliveries, the second dropped: one of a and b has it.
	if got := answers(ra) + answers(rb); got != "m" {
		t.Errorf("deliveries %q, want one", got)
	}
}

// TestSocketIO: open, namespace connect (refused, garbled), acks (wrong,
// dropped), rooms.
func TestSocketIO(t *testing.T) {
	const path = PathSocketIO + "?EIO=4&transport=websocket"
	runText(t, path, `0{"sid":`, []textCase{
		{"ack", Options{}, []string{"40", `421["chat",{"n":5}]`, `42["x"]`}, []string{`40{"sid":"x"}`, `431[{"n":5}]`, ""}},
		{"namespace", Options{}, []string{"40/chat,", `42/chat,7["e",1]`}, []string{`40/chat,{"sid":"x"}`, `43/chat,7[1]`}},
		{"refused", Options{Fault: Refuse}, []string{"40"}, []string{`44{"message":"not authorized"}`}},
		{"garbled", Options{Fault: Garble}, []string{"40"}, []string{`42["hello"]`}},
		{"wrong", Options{Fault: Wrong}, []string{"40", `421["chat",{"n":5}]`}, []string{`40{"sid":"x"}`, `431[{"n":6}]`}},
		{"drop", Options{Fault: Drop, Beat: time.Hour}, []string{"40", `421["chat",{"n":5}]`}, []string{`40{"sid":"x"}`, ""}},
		{"silent", Options{Fault: Silent, Beat: 50 * time.Millisecond}, []string{"40", `421["chat",{"n":5}]`}, []string{`40{"sid":"x"}`, `431[{"n":5}]`}},
	})
}

// TestGraphQLWS: init (refused: 4403), queries echoed (wrong, error,
// dropped), a room's subscription fed by a mutation.
func TestGraphQLWS(t *testing.T) {
	const q = `{"id":"1","type":"subscribe","payload":{"query":"query($t:String!){ echo(text:$t) }","variables":{"t":"q5"}}}`
	runText(t, PathGraphQL, "", []textCase{
		{"query", Options{}, []string{`{"type":"connection_init"}`, q, `{"type":"ping"}`},
			[]string{`{"type":"connection_ack"}`, `{"id":"1","type":"next","payload":{"data":{"echo":"q5"}}} + {"id":"1","type":"complete"}`, `{"type":"pong"}`}},
		{"refused", Options{Fault: Refuse}, []string{`{"type":"connection_init"}`}, []string{"closed 4403"}},
		{"wrong", Options{Fault: Wrong}, []string{`{"type":"connection_init"}`, q},
			[]string{`{"type":"connection_ack"}`, `{"id":"1","type":"next","payload":{"data":{"echo":"q6"}}} + {"id":"1","type":"complete"}`}},
		{"error", Options{Fault: Error}, []string{`{"type":"connection_init"}`, q},
			[]string{`{"type":"connection_ack"}`, `{"id":"1","type":"error","payload":[{"message":"Forbidden","extensions":{"code":"FORBIDDEN"}}]}`}},
		{"drop", Options{Fault: Drop}, []string{`{"type":"connection_init"}`, q, `{"type":"ping"}`}, []string{`{"type":"connection_ack"}`, "", `{"type":"pong"}`}},
		{"silent", Options{Fault: Silent}, []string{`{"type":"connection_init"}`, `{"type":"ping"}`, q}, []string{`{"type":"connection_ack"}`, "",
			`{"id":"1","type":"next","payload":{"data":{"echo":"q5"}}} + {"id":"1","type":"complete"}`}},
		{"room", Options{}, []string{`{"type":"connection_init"}`,
			`{"id":"1","type":"subscribe","payload":{"query":"subscription($room:String!){message(room:$room)}","variables":{"room":"room.1"}}}`,
			`{"id":"q1","type":"subscribe","payload":{"query":"mutation($room:String!,$data:String!){publish(room:$room,data:$data)}","variables":{"room":"room.1","data":"aGk="}}}`},
			[]string{`{"type":"connection_ack"}`, `{"id":"1","type":"next","payload":{"data":{"message":null}}}`,
				`{"id":"1","type":"next","payload":{"data":{"message":"aGk="}}} + {"id":"q1","type":"next","payload":{"data":{"publish":true}}} + {"id":"q1","type":"complete"}`}},
	}, "graphql-transport-ws")
}

// TestJSONRPC: results echo params (wrong, error, dropped), batches,
// rpc.on joins, broadcast.
func TestJSONRPC(t *testing.T) {
	const call = `{"jsonrpc":"2.0","method":"echo","params":{"n":5},"id":3}`
	runText(t, PathJSONRPC, "", []textCase{
		{"echo", Options{}, []string{call, `[` + call + `]`, `{"jsonrpc":"2.0","method":"log"}`},
			[]string{`{"jsonrpc":"2.0","result":{"n":5},"id":3}`, `[{"jsonrpc":"2.0","result":{"n":5},"id":3}]`, ""}},
		{"wrong", Options{Fault: Wrong}, []string{call}, []string{`{"jsonrpc":"2.0","result":{"n":6},"id":3}`}},
		{"error", Options{Fault: Error}, []string{call, `{"jsonrpc":"2.0","method":"rpc.on","params":["room.1"],"id":"j1"}`},
			[]string{`{"jsonrpc":"2.0","error":{"code":-32000,"message":"Forbidden"},"id":3}`, `{"jsonrpc":"2.0","result":{"room.1":"provided event invalid"},"id":"j1"}`}},
		{"drop", Options{Fault: Drop}, []string{call}, []string{""}},
		{"room", Options{}, []string{`{"jsonrpc":"2.0","method":"rpc.on","params":["room.1"],"id":"j1"}`, `{"jsonrpc":"2.0","method":"broadcast","params":["room.1","aGk="]}`},
			[]string{`{"jsonrpc":"2.0","result":{"room.1":"ok"},"id":"j1"}`, `{"notification":"room.1","params":["aGk="]}`}},
	})
}

// TestSTOMP: CONNECTED (refused: ERROR), receipts (wrong, error,
// dropped), a SEND delivered to a subscriber of its destination.
func TestSTOMP(t *testing.T) {
	connect := "CONNECT\naccept-version:1.2\nhost:/\n\n\x00"
	sub := "SUBSCRIBE\nid:s1\ndestination:/topic/a\nreceipt:1\n\n\x00"
	send := "SEND\ndestination:/topic/a\nreceipt:2\ncontent-length:2\n\nhi\x00"
	connected := "CONNECTED\nversion:1.2\nheart-beat:0,0\nserver:faultserver\n\n\x00"
	runText(t, PathSTOMP, "", []textCase{
		{"receipts", Options{}, []string{connect, sub, send}, []string{connected, "RECEIPT\nreceipt-id:1\n\n\x00",
			"MESSAGE\nsubscription:s1\nmessage-id:1\ndestination:/topic/a\ncontent-length:2\n\nhi\x00 + RECEIPT\nreceipt-id:2\n\n\x00"}},
		{"refused", Options{Fault: Refuse}, []string{connect}, []string{"ERROR\nmessage:Access refused\ncontent-length:28\n\nLogin failed: not authorized\x00 + closed 1006"}},
		{"wrong", Options{Fault: Wrong}, []string{connect, sub}, []string{connected, "RECEIPT\nreceipt-id:2\n\n\x00"}},
		{"error", Options{Fault: Error}, []string{connect, sub}, []string{connected, "ERROR\nreceipt-id:1\nmessage:Forbidden\ncontent-length:25\n\nnot authorized to do this\x00 + closed 1006"}},
		{"drop", Options{Fault: Drop}, []string{connect, sub}, []string{connected, ""}},
	}, "v12.stomp")
}

// connectPacket is a CONNECT of protocol level v (4 or 5), client id "c".
func connectPacket(v byte) []byte {
	body := []byte{0, 4, 'M', 'Q', 'T', 'T', v, 2, 0, 60}
	if v == 5 {
		body = append(body, 0)
	}
	body = append(body, 0, 1, 'c')
	return append(mqttHeader(nil, mqttConnect<<4, len(body)), body...)
}

// mqttPublishQ is a PUBLISH of qos with packet id 7 to topic t (v5).
func mqttPublishQ(qos byte) []byte {
	body := []byte{0, 1, 't', 0, 7, 0, 'x'}
	return append(mqttHeader(nil, mqttPublish<<4|qos<<1, len(body)), body...)
}

// TestMQTT: CONNACK (refused, with Receive Maximum), PUBACK and PUBREC
// (error, wrong id, downgrade, quota), SUBACK (error, downgrade).
func TestMQTT(t *testing.T) {
	sub := []byte{mqttSubscribe<<4 | 2, 7, 0, 9, 0, 0, 1, 't', 2}
	for _, tc := range []struct {
		name string
		o    Options
		v    byte
		send [][]byte
		want [][]byte
	}{
		{"3.1.1", Options{}, 4, [][]byte{connectPacket(4), {mqttPingreq << 4, 0}}, [][]byte{{0x20, 2, 0, 0}, {0xd0, 0}}},
		{"5 with Receive Maximum", Options{ReceiveMaximum: 4}, 5, [][]byte{connectPacket(5), mqttPublishQ(1), mqttPublishQ(2)},
			[][]byte{{0x20, 6, 0, 0, 3, 0x21, 0, 4}, {0x40, 2, 0, 7}, {0x50, 2, 0, 7}}},
		{"refused 3.1.1", Options{Fault: Refuse}, 4, [][]byte{connectPacket(4)}, [][]byte{append([]byte{0x20, 2, 0, 5}, " + closed 1006"...)}},
		{"refused 5", Options{Fault: Refuse}, 5, [][]byte{connectPacket(5)}, [][]byte{append([]byte{0x20, 3, 0, 0x87, 0}, " + closed 1006"...)}},
		{"error", Options{Fault: Error}, 5, [][]byte{connectPacket(5), mqttPublishQ(1), sub}, [][]byte{{0x20, 3, 0, 0, 0}, {0x40, 4, 0, 7, 0x87, 0}, {0x90, 4, 0, 9, 0, 0x80}}},
		{"wrong", Options{Fault: Wrong}, 5, [][]byte{connectPacket(5), mqttPublishQ(1)}, [][]byte{{0x20, 3, 0, 0, 0}, {0x40, 2, 0, 8}}},
		{"downgrade", Options{Fault: Downgrade}, 5, [][]byte{connectPacket(5), mqttPublishQ(2), sub}, [][]byte{{0x20, 3, 0, 0, 0}, {0x40, 2, 0, 7}, {0x90, 4, 0, 9, 0, 0}}},
		{"drop", Options{Fault: Drop}, 5, [][]byte{connectPacket(5), mqttPublishQ(1), {mqttPingreq << 4, 0}}, [][]byte{{0x20, 3, 0, 0, 0}, nil, {0xd0, 0}}},
		{"silent", Options{Fault: Silent}, 5, [][]byte{connectPacket(5), {mqttPingreq << 4, 0}, mqttPublishQ(1)}, [][]byte{{0x20, 3, 0, 0, 0}, nil, {0x40, 2, 0, 7}}},
		{"quota", Options{Fault: Quota, Quota: 1, AckDelay: time.Second}, 5, [][]byte{connectPacket(5), mqttPublishQ(1), mqttPublishQ(1)},
			[][]byte{{0x20, 3, 0, 0, 0}, nil, {0x40, 4, 0, 7, 0x97, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _, err := dial(t, start(t, tc.o), PathMQTT, "mqtt")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ch := reader(c)
			for i, m := range tc.send {
				if err := c.WriteMessage(websocket.BinaryMessage, m); err != nil {
					t.Fatal(err)
				}
				if got := []byte(answers(ch)); !bytes.Equal(got, tc.want[i]) {
					t.Errorf("answer %d: % x, want % x", i, got, tc.want[i])
				}
			}
		})
	}
}

// TestStrict: with Strict, an upgrade to a protocol's path must offer
// its subprotocol.
func TestStrict(t *testing.T) {
	s := start(t, Options{Strict: true})
	for _, tc := range []struct {
		path, offer string
		ok          bool
	}{{PathMQTT, "mqtt", true}, {PathMQTT, "", false}, {PathGraphQL, "graphql-transport-ws", true}, {PathSTOMP, "mqtt", false}, {PathRaw, "", true}} {
		var offer []string
		if tc.offer != "" {
			offer = []string{tc.offer}
		}
		c, resp, err := dial(t, s, tc.path, offer...)
		if c != nil {
			c.Close()
		}
		if (err == nil) != tc.ok || !tc.ok && (resp == nil || resp.StatusCode != http.StatusBadRequest) {
			t.Errorf("%s offering %q: %v (%v), want upgraded %v", tc.path, tc.offer, err, resp, tc.ok)
		}
	}
}

// TestDieAfter: the server closes its connections and refuses new ones
// once DieAfter passed since the first upgrade.
func TestDieAfter(t *testing.T) {
	s := start(t, Options{DieAfter: 100 * time.Millisecond})
	c, _, err := dial(t, s, PathRaw)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ReadMessage(); err == nil {
		t.Fatal("the connection outlived the server")
	}
	if _, _, err := dial(t, s, PathRaw); err == nil {
		t.Fatal("a dead server upgraded")
	}
}

// TestParseFlags: the flags a fault server process takes, and their
// checks.
func TestParseFlags(t *testing.T) {
	addr, o, err := ParseFlags([]string{"--addr", "127.0.0.1:9", "--fault", "drop", "--every", "3", "--in-rooms", "--die-after", "2s", "--beat", "100ms"})
	if err != nil || addr != "127.0.0.1:9" || o != (Options{Fault: Drop, Every: 3, Deliveries: true, DieAfter: 2 * time.Second, Beat: 100 * time.Millisecond}) {
		t.Fatalf("%q %+v %v", addr, o, err)
	}
	for _, bad := range [][]string{{"--fault", "lies"}, {"--every", "-1"}, {"--receive-maximum", "70000"}, {"--beat", "-1s"}, {"--nope"}} {
		if _, _, err := ParseFlags(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
