package client

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/proto/graphqlws"
	"github.com/wsplan/wsplan/internal/prototest"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/units"
)

// graphql-transport-ws against prototest.GQLServer, the server the
// script kind's tests run too.

// gqlClient makes a client of the graphql-ws protocol.
func gqlClient(t *testing.T, addr string, o graphqlws.Settings) *Client {
	t.Helper()
	return newClient(t, Options{Targets: []string{addr}, Loops: 2, Protocol: ProtocolOptions{Name: graphqlws.Name, Settings: &o}})
}

// TestGraphQLWSGreeting: connection_init carries the init payload and
// the connection opens on connection_ack, with the subprotocol offered;
// a refused init (4403) and a server that never acks fail the
// connections with the protocol's reasons.
func TestGraphQLWSGreeting(t *testing.T) {
	ok := &prototest.GQLServer{Token: "t0k"}
	c := gqlClient(t, ok.Start(t), graphqlws.Settings{Init: `{"token":"t0k"}`})
	res, err := c.Run(t.Context(), &ConnectParams{Connections: 20, Concurrency: 20, Timeout: units.Duration(2 * time.Second), Retries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cr := res.(*ConnectResult)
	if cr.Success != 20 || cr.Greeting.TotalCount() != 20 || cr.Subprotocol != graphqlws.Subprotocol {
		t.Fatalf("success %d, greetings %d, subprotocol %q (errors %v), want 20 acked over %s", cr.Success, cr.Greeting.TotalCount(), cr.Subprotocol, cr.Errors, graphqlws.Subprotocol)
	}
	for _, tc := range []struct {
		name string
		srv  *prototest.GQLServer
		init string
		want Reason
	}{
		{"refused", &prototest.GQLServer{Refuse: true}, "", "graphql-ws: forbidden (4403)"},
		{"wrong token", &prototest.GQLServer{Token: "t0k"}, `{"token":"nope"}`, "graphql-ws: forbidden (4403)"},
		{"no ack", &prototest.GQLServer{Mute: true}, "", "graphql-ws: no connection_ack"},
	} {
		c := gqlClient(t, tc.srv.Start(t), graphqlws.Settings{Init: tc.init})
		res, err := c.Run(t.Context(), &ConnectParams{Connections: 5, Concurrency: 5, Timeout: units.Duration(500 * time.Millisecond), Retries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cr := res.(*ConnectResult)
		if cr.Failed != 5 || cr.Errors[tc.want] != 5 {
			t.Errorf("%s: failed %d, errors %v, want 5 × %q", tc.name, cr.Failed, cr.Errors, tc.want)
		}
	}
	if _, err := New(Options{Targets: []string{"127.0.0.1:1"}, Protocol: ProtocolOptions{Name: graphqlws.Name, Settings: &graphqlws.Settings{Init: `[1]`}}}); err == nil || !strings.Contains(err.Error(), "init: must be a JSON object") {
		t.Errorf("init [1]: got %v, want an error", err)
	}
}

// TestGraphQLWSKeepalive: the server's pings are answered by the
// protocol layer (never seen by the run); with a keepalive, a client
// silent that long pings the server (any write counts: a client that
// answers pings sends none of its own). On a loaded host a stall of
// either side may leave a client silent for a keepalive, and its ping is
// then right: only a ping while both sides were talking counts against it
// (prototest.GQLServer.Quiet).
func TestGraphQLWSKeepalive(t *testing.T) {
	testenv.Slow(t, "1 s: graphql-ws keepalives waited for")
	const keepalive = 300 * time.Millisecond
	s := &prototest.GQLServer{Ping: 20 * time.Millisecond, Quiet: keepalive}
	c := gqlClient(t, s.Start(t), graphqlws.Settings{Keepalive: units.Duration(keepalive)})
	mustConnect(t, c, 10)
	hold(t, c, 10)
	testenv.WaitFor(t, "pongs", func() bool { return s.Pings.Load() >= 100 && s.Pongs.Load() >= s.Pings.Load()-10 })
	if n := s.EarlyPings.Load(); n != 0 {
		t.Errorf("%d client pings (of %d) while it answered the server's pings, want none: the pongs showed it alive", n, s.ClientPings.Load())
	} else if n := s.ClientPings.Load(); n != 0 {
		t.Logf("%d client pings after a stall of a keepalive", n)
	}

	quiet := &prototest.GQLServer{}
	c = gqlClient(t, quiet.Start(t), graphqlws.Settings{Keepalive: units.Duration(50 * time.Millisecond)})
	mustConnect(t, c, 10)
	hold(t, c, 10)
	// 10 connections pinging about every 200ms (the loop's tick) for
	// 0.5 s, each pong keeping them alive.
	if n := quiet.ClientPings.Load(); n < 10 {
		t.Errorf("%d client pings, want ≥ 10", n)
	}
}

// hold holds c's n connections for half a second and fails unless all
// are alive after.
func hold(t *testing.T, c *Client, n int64) {
	t.Helper()
	res, err := idle(t.Context(), c, 500*time.Millisecond, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hr := res; hr.Alive != n || len(hr.Errors) != 0 {
		t.Fatalf("alive %d, errors %v, want %d held", hr.Alive, hr.Errors, n)
	}
}

// TestGraphQLWSCodec: verbs encode as graphql-transport-ws messages with
// the ids their answers carry; server messages decode by type and id,
// keepalives answered below the run.
func TestGraphQLWSCodec(t *testing.T) {
	p, _ := proto.Make(ProtocolOptions{Name: graphqlws.Name, Settings: &graphqlws.Settings{}})
	g := newProtoRig(t, p)
	enc := func(m proto.Out) (map[string]any, string) {
		t.Helper()
		out, op, id, err := p.Encode(nil, g.s, &m, nil)
		if err != nil || op != OpText {
			t.Fatalf("encode %+v: %v", m, err)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		return v, string(id)
	}
	query := "subscription {\n  message(room: \"a\\b\")\n}"
	v, id := enc(proto.Out{Verb: proto.VerbSubscribe, Topic: []byte(query), Body: []byte(`{"room":"r1"}`)})
	pl, _ := v["payload"].(map[string]any)
	if id != "1" || v["id"] != "1" || v["type"] != "subscribe" || pl["query"] != query || pl["variables"].(map[string]any)["room"] != "r1" {
		t.Errorf("subscribe: %v, id %q", v, id)
	}
	if v, id = enc(proto.Out{Verb: proto.VerbPublish, Topic: []byte("mutation { m }"), Awaited: true}); id != "p1" || v["id"] != "p1" || v["payload"].(map[string]any)["variables"] != nil {
		t.Errorf("awaited publish: %v, id %q", v, id)
	}
	if v, id = enc(proto.Out{Verb: proto.VerbPublish, Topic: []byte("mutation { m }")}); id != "q2" || v["type"] != "subscribe" {
		t.Errorf("publish: %v, id %q", v, id)
	}
	if _, id = enc(proto.Out{Verb: proto.VerbSubscribe, Topic: []byte("subscription { s }")}); id != "2" {
		t.Errorf("second subscribe: id %q, want 2", id)
	}
	if v, id = enc(proto.Out{Verb: proto.VerbUnsubscribe, Topic: []byte("2")}); id != "" || v["id"] != "2" || v["type"] != "complete" {
		t.Errorf("unsubscribe: %v, id %q", v, id)
	}
	if v, _ = enc(proto.Out{Verb: proto.VerbSend, Body: []byte(`{"type":"ping"}`)}); v["type"] != "ping" {
		t.Errorf("send: %v", v)
	}
	if _, _, _, err := p.Encode(nil, g.s, &proto.Out{Verb: proto.VerbSubscribe, Topic: []byte("q"), Body: []byte(`[1]`)}, nil); err == nil {
		t.Error("variables [1]: no error")
	}

	for _, tc := range []struct {
		in         string
		n          int // messages the run got so far
		typ        uint8
		id, body   string
		clientSent string
	}{
		{`{"id":"1","type":"next","payload":{"data":{"message":"x"}}}`, 1, proto.MsgNext, "1", `{"data":{"message":"x"}}`, ""},
		{`{"type":"error","id":"2","payload":[{"message":"no"}]}`, 2, proto.MsgError, "2", `[{"message":"no"}]`, ""},
		{`{"id":"1","type":"complete"}`, 3, proto.MsgComplete, "1", "", ""},
		{`{"id":"p1","type":"next","payload":{"data":{"m":true}}}`, 4, proto.MsgNext, "p1", `{"data":{"m":true}}`, ""},
		{`{"id":"p1","type":"complete"}`, 4, proto.MsgNext, "p1", `{"data":{"m":true}}`, ""}, // dropped
		{`{"id":"q2","type":"next","payload":{"data":{"m":true}}}`, 4, proto.MsgNext, "p1", `{"data":{"m":true}}`, ""},
		{`{"id":"q2","type":"complete"}`, 4, proto.MsgNext, "p1", `{"data":{"m":true}}`, ""},
		{`{"type":"ping"}`, 4, proto.MsgNext, "p1", `{"data":{"m":true}}`, `{"type":"pong"}`},
		{`{"type":"pong","payload":{}}`, 4, proto.MsgNext, "p1", `{"data":{"m":true}}`, ""},
	} {
		g.serve(t, []byte(tc.in))
		k := g.sink
		if k.n != tc.n || k.typ != tc.typ || string(k.mid) != tc.id || string(k.body) != tc.body {
			t.Errorf("%s: got %d messages, last type %d id %q body %s; want %d, %d %q %s", tc.in, k.n, k.typ, k.mid, k.body, tc.n, tc.typ, tc.id, tc.body)
		}
		if got := g.sent(t); got != tc.clientSent {
			t.Errorf("%s: the client sent %q, want %q", tc.in, got, tc.clientSent)
		}
	}
	for in, want := range map[string]proto.Reason{
		`{"id":"1","type":"data"}`: "graphql-ws: unexpected message type data",
		`not json`:                 "graphql-ws: a message that is not a JSON object with a type",
		`{"id":"1"}`:               "graphql-ws: a message that is not a JSON object with a type",
	} {
		if got := p.Decode(g.l.env(g.c), g.s, OpText, []byte(in), 0); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

// TestGraphQLWSReceiveAllocs: a next read, decoded and handed to the
// run, and a delivery decoded from it, allocate nothing.
func TestGraphQLWSReceiveAllocs(t *testing.T) {
	p, _ := proto.Make(ProtocolOptions{Name: graphqlws.Name, Settings: &graphqlws.Settings{}})
	g := newProtoRig(t, p)
	out, _ := p.(proto.Rooms).PublishRoom(nil, &proto.Conn{}, 3, make([]byte, 256))
	var v struct {
		Payload struct{ Variables map[string]string }
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	next := []byte(`{"id":"12","type":"next","payload":{"data":{"message":"` + v.Payload.Variables["data"] + `"}}}`)
	scratch := make([]byte, 0, 512)
	var m proto.Message
	round := func() {
		g.serve(t, next)
		m = proto.NewMessage(g.sink.typ, OpText, nil, g.sink.mid, g.sink.body)
		if d, ok := p.(proto.Rooms).Delivery(&m, scratch); !ok || len(d) != 256 {
			t.Fatalf("delivery: %d bytes, %v", len(d), ok)
		}
	}
	round()
	if n := testing.AllocsPerRun(1000, round); n > 0 {
		t.Errorf("%.1f allocations per message, want 0", n)
	}
}
