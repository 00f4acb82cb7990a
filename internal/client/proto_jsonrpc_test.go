package client

import (
	"encoding/json"
	"testing"

	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/proto/jsonrpc"
)

// TestJSONRPCCodec: calls take ids from 1, notifications none; responses
// decode by id (numbers and strings), errors as errors, events and
// notifications by name, a batch into its messages.
func TestJSONRPCCodec(t *testing.T) {
	p, _ := proto.Make(ProtocolOptions{Name: jsonrpc.Name, Settings: &jsonrpc.Settings{}})
	g := newProtoRig(t, p)
	enc := func(m proto.Out) (string, string) {
		t.Helper()
		out, op, id, err := p.Encode(nil, g.s, &m, nil)
		if err != nil || op != OpText || !json.Valid(out) {
			t.Fatalf("encode %+v: %s %v", m, out, err)
		}
		return string(out), string(id)
	}
	for _, tc := range []struct {
		m         proto.Out
		want, id  string
		wantError bool
	}{
		{proto.Out{Verb: proto.VerbCall, Topic: []byte("sum"), Body: []byte("[1, 2]")}, `{"jsonrpc":"2.0","method":"sum","params":[1, 2],"id":1}`, "1", false},
		{proto.Out{Verb: proto.VerbCall, Topic: []byte(`we"ird`)}, `{"jsonrpc":"2.0","method":"we\"ird","id":2}`, "2", false},
		{proto.Out{Verb: proto.VerbNotify, Topic: []byte("log"), Body: []byte(` {"a":1} `)}, `{"jsonrpc":"2.0","method":"log","params":{"a":1}}`, "", false},
		{proto.Out{Verb: proto.VerbSend, Body: []byte(`{"raw":true}`)}, `{"raw":true}`, "", false},
	} {
		if out, id := enc(tc.m); out != tc.want || id != tc.id {
			t.Errorf("%+v: %s id %q, want %s id %q", tc.m, out, id, tc.want, tc.id)
		}
	}
	for _, bad := range []string{`1`, `"s"`, `[1`} {
		if _, _, _, err := p.Encode(nil, g.s, &proto.Out{Verb: proto.VerbCall, Topic: []byte("m"), Body: []byte(bad)}, nil); err == nil {
			t.Errorf("params %s: no error", bad)
		}
	}

	for _, tc := range []struct {
		in              string
		n               int
		typ             uint8
		topic, id, body string
	}{
		{`{"jsonrpc":"2.0","result":3,"id":1}`, 1, proto.MsgAck, "", "1", "3"},
		{`{"jsonrpc":"2.0","result":null,"id":"abc"}`, 2, proto.MsgAck, "", "abc", "null"},
		{`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":2}`, 3, proto.MsgError, "", "2", `{"code":-32601,"message":"Method not found"}`},
		{`{"notification":"room.3","params":["eA=="]}`, 4, proto.MsgEvent, "room.3", "", `["eA=="]`},
		{`{"jsonrpc":"2.0","method":"tick","params":{"n":1}}`, 5, proto.MsgEvent, "tick", "", `{"n":1}`},
		{` [{"jsonrpc":"2.0","result":1,"id":7}, {"jsonrpc":"2.0","result":2,"id":8}]`, 7, proto.MsgAck, "", "8", "2"},
		{`{"jsonrpc":"2.0","result":{"room.1":"ok"},"id":"j3"}`, 8, proto.MsgAck, "", "j3", `{"room.1":"ok"}`},
		{`{"jsonrpc":"2.0","result":{"room.9":"provided event invalid"},"id":"j4"}`, 9, proto.MsgError, "", "j4", `{"room.9":"provided event invalid"}`},
		{`hello`, 10, proto.MsgData, "", "", "hello"},
	} {
		g.serve(t, []byte(tc.in))
		k := g.sink
		if k.n != tc.n || k.typ != tc.typ || string(k.topic) != tc.topic || string(k.mid) != tc.id || string(k.body) != tc.body {
			t.Errorf("%s: %d messages, last type %d topic %q id %q body %s; want %d, %d %q %q %s", tc.in, k.n, k.typ, k.topic, k.mid, k.body, tc.n, tc.typ, tc.topic, tc.id, tc.body)
		}
	}
}

// TestJSONRPCRooms: a room is the event room.N: joined by rpc.on,
// published by the notification publish, delivered as the event.
func TestJSONRPCRooms(t *testing.T) {
	p, _ := proto.Make(ProtocolOptions{Name: jsonrpc.Name, Settings: &jsonrpc.Settings{}})
	rp := p.(proto.Rooms)
	s := &proto.Conn{}
	out, op, id, answered := rp.JoinRoom(nil, s, 4, nil)
	if string(out) != `{"jsonrpc":"2.0","method":"rpc.on","params":["room.4"],"id":"j1"}` || op != OpText || string(id) != "j1" || !answered {
		t.Errorf("join: %s id %q answered %v", out, id, answered)
	}
	payload := []byte("\x00\x01marker\xffbinary")
	out, _ = rp.PublishRoom(nil, s, 4, payload)
	var v struct {
		Method string
		Params []string
		ID     any
	}
	if err := json.Unmarshal(out, &v); err != nil || v.Method != jsonrpc.RoomMethod || len(v.Params) != 2 || v.Params[0] != "room.4" || v.ID != nil {
		t.Fatalf("publish: %s (%v)", out, err)
	}
	ev := proto.NewMessage(proto.MsgEvent, OpText, []byte("room.4"), nil, []byte(`["`+v.Params[1]+`"]`))
	if got, ok := rp.Delivery(&ev, nil); !ok || string(got) != string(payload) {
		t.Errorf("delivery: %q %v, want %q", got, ok, payload)
	}
	for _, m := range []proto.Message{
		proto.NewMessage(proto.MsgEvent, OpText, []byte("news"), nil, []byte(`["eA=="]`)),
		proto.NewMessage(proto.MsgAck, OpText, nil, []byte("1"), []byte(`true`)),
		proto.NewMessage(proto.MsgEvent, OpText, []byte("room.4"), nil, []byte(`[1]`)),
	} {
		if _, ok := rp.Delivery(&m, nil); ok {
			t.Errorf("delivery of %s %s: ok", m.Topic, m.Body)
		}
	}
}

// TestJSONRPCReceiveAllocs: an event read, decoded, handed to the run
// and its delivery decoded, and a batch of responses, allocate nothing.
func TestJSONRPCReceiveAllocs(t *testing.T) {
	p, _ := proto.Make(ProtocolOptions{Name: jsonrpc.Name, Settings: &jsonrpc.Settings{}})
	g := newProtoRig(t, p)
	out, _ := p.(proto.Rooms).PublishRoom(nil, &proto.Conn{}, 3, make([]byte, 256))
	var v struct{ Params []string }
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	event := []byte(`{"notification":"room.3","params":["` + v.Params[1] + `"]}`)
	batch := []byte(`[{"jsonrpc":"2.0","result":{"a":[1,2,3]},"id":17},{"jsonrpc":"2.0","error":{"code":1,"message":"x"},"id":18}]`)
	scratch := make([]byte, 0, 512)
	var m proto.Message
	round := func() {
		g.serve(t, event)
		m = proto.NewMessage(g.sink.typ, OpText, g.sink.topic, g.sink.mid, g.sink.body)
		if d, ok := p.(proto.Rooms).Delivery(&m, scratch); !ok || len(d) != 256 {
			t.Fatalf("delivery: %d bytes, %v", len(d), ok)
		}
		g.serve(t, batch)
	}
	round()
	if n := testing.AllocsPerRun(1000, round); n > 0 {
		t.Errorf("%.1f allocations per round, want 0", n)
	}
	if g.sink.typ != proto.MsgError || string(g.sink.mid) != "18" {
		t.Errorf("last message: type %d id %s", g.sink.typ, g.sink.mid)
	}
}
