package jsonrpc

import (
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/proto"
)

// TestRPCErrorWhy: an error object's reason is its integer code; a code
// that is not one says so without it.
func TestRPCErrorWhy(t *testing.T) {
	for _, tc := range []struct {
		obj  string
		want proto.Reason
	}{
		{`{"code":-32601,"message":"Method not found"}`, "jsonrpc -32601"},
		{`{"message":"x","code": 4001}`, "jsonrpc 4001"},
		{`{"code":0}`, "jsonrpc 0"},
		{`{"code":"E42"}`, reasonRPCError},
		{`{"code":-}`, reasonRPCError},
		{`{"code":1.5}`, reasonRPCError},
		{`{"code":123456789012345678901}`, reasonRPCError},
		{`{"message":"no code"}`, reasonRPCError},
		{`"just a string"`, reasonRPCError},
		{`{}`, reasonRPCError},
	} {
		if got := rpcErrorWhy([]byte(tc.obj)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.obj, got, tc.want)
		}
	}
	e, _ := proto.NewEnv()
	p := jsonRPC{}
	if p.Decode(e, &proto.Conn{}, proto.OpText, []byte(`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":7}`), 0) != "" || len(e.Msgs) != 1 {
		t.Fatalf("error response: %d messages", len(e.Msgs))
	}
	if k := e.Msgs[0]; k.Type != proto.MsgError || string(k.ID) != "7" || k.Why != "jsonrpc -32601" {
		t.Errorf("error response: type %d id %q why %q", k.Type, k.ID, k.Why)
	}
	e.Msgs = e.Msgs[:0]
	if p.Decode(e, &proto.Conn{}, proto.OpText, []byte(`{"jsonrpc":"2.0","result":{"room.9":"provided event invalid"},"id":"j4"}`), 0) != "" || len(e.Msgs) != 1 {
		t.Fatalf("refused rpc.on: %d messages", len(e.Msgs))
	}
	if k := e.Msgs[0]; k.Type != proto.MsgError || k.Why != reasonRPCJoinRefused {
		t.Errorf("refused rpc.on: type %d why %q", k.Type, k.Why)
	}
}

// TestRPCErrorWhyAllocs: an error answer's reason, counted, allocates
// nothing once its code was seen.
func TestRPCErrorWhyAllocs(t *testing.T) {
	obj := []byte(`{"code":-32601,"message":"Method not found"}`)
	m := map[proto.Reason]int{}
	round := func() { m[rpcErrorWhy(obj)]++ }
	round()
	if n := testing.AllocsPerRun(1000, round); n > 0 {
		t.Fatalf("%.1f allocations per round, want 0", n)
	}
	if m["jsonrpc -32601"] != 1002 {
		t.Fatalf("counted %v", m)
	}
}

// FuzzJSONRPCDecode: whatever the server sends, the decoder hands the
// run messages whose parts lie in the message, and an error answer's
// reason is one line that names the protocol.
func FuzzJSONRPCDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":2}`,
		`[{"jsonrpc":"2.0","result":1,"id":7},{"jsonrpc":"2.0","error":{"code":"x"},"id":8}]`,
		`{"notification":"room.3","params":["eA=="]}`, `{"jsonrpc":"2.0","result":{"room.9":"no"},"id":"j4"}`, `hello`, `[`, `{"error":{"code":-`,
	} {
		f.Add([]byte(s))
	}
	e := &proto.Env{Link: &proto.Recorder{}}
	p := jsonRPC{}
	f.Fuzz(func(t *testing.T, msg []byte) {
		e.Msgs = e.Msgs[:0]
		if fail := p.Decode(e, &proto.Conn{}, proto.OpText, msg, 0); fail != "" {
			t.Fatalf("failed %q: JSON-RPC has no failure of its own", fail)
		}
		for _, m := range e.Msgs {
			for _, part := range [][]byte{m.Topic, m.ID, m.Body} {
				if len(part) > 0 && !proto.Within(part, msg) {
					t.Fatalf("a decoded part %q points outside the message", part)
				}
			}
			if (m.Type == proto.MsgError) != (m.Why != "") || !strings.HasPrefix(string(m.Why), "jsonrpc") && m.Why != "" || strings.ContainsAny(string(m.Why), "\r\n") {
				t.Fatalf("message of type %d, reason %q", m.Type, m.Why)
			}
		}
	})
}
