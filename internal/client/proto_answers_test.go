package client

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Error answers in the protocols' own words: the code a JSON-RPC error,
// a GraphQL error or a STOMP ERROR gives the script to count them by.

// TestRPCErrorWhy: an error object's reason is its integer code; a code
// that is not one says so without it.
func TestRPCErrorWhy(t *testing.T) {
	for _, tc := range []struct {
		obj  string
		want Reason
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
	p, _ := newJSONRPC(ProtocolOptions{})
	g := newProtoRig(t, p)
	g.serve(t, []byte(`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":7}`))
	if k := g.sink; k.typ != msgError || string(k.mid) != "7" || k.why != "jsonrpc -32601" {
		t.Errorf("error response: type %d id %q why %q", k.typ, k.mid, k.why)
	}
	g.serve(t, []byte(`{"jsonrpc":"2.0","result":{"room.9":"provided event invalid"},"id":"j4"}`))
	if k := g.sink; k.typ != msgError || k.why != reasonRPCJoinRefused {
		t.Errorf("refused rpc.on: type %d why %q", k.typ, k.why)
	}
}

// TestJSONRPCErrorAnswers: calls to a method the server does not have
// are error answers counted by code (-32601), the exchange not
// completed; the calls it has complete.
func TestJSONRPCErrorAnswers(t *testing.T) {
	s := &rpcServer{}
	c := newClient(t, Options{Targets: []string{s.start(t)}, Loops: 2, Protocol: ProtocolOptions{Name: ProtoJSONRPC}})
	res, err := c.Run(t.Context(), &ScriptParams{Steps: steps(t, `
steps:
  - loop:
      count: 3
      steps:
        - call: {method: nosuch, as: nosuch}
        - call: {method: sum, params: '[1, 2]', as: sum}
  - call: {method: nosuch}
`), Users: 5, Iterations: 1, Concurrency: 5, Timeout: 5 * time.Second, ConnectTimeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*ScriptResult)
	const why = "jsonrpc -32601"
	nosuch, sum := r.Exchanges["nosuch"], r.Exchanges["sum"]
	if nosuch.Count != 0 || nosuch.Errors != 15 || nosuch.ErrorCodes[why] != 15 || sum.Count != 15 || sum.Errors != 0 {
		t.Fatalf("nosuch %+v, sum %+v: want 15 error answers and 15 sums", nosuch, sum)
	}
	if r.ErrorAnswers[why] != 20 || len(r.ErrorAnswers) != 1 || r.Answers != 35 || r.Failures["steps[1].call"][why] != 5 || r.Finished != 5 {
		t.Fatalf("error answers %v, answers %d, failures %v, finished %d: want 20 × %q (5 unnamed), 35 answers", r.ErrorAnswers, r.Answers, r.Failures, r.Finished, why)
	}
}

// TestGQLErrorWhy: an error answer's reason is its first error's message,
// unescaped, on one line, clipped at a character.
func TestGQLErrorWhy(t *testing.T) {
	for _, tc := range []struct {
		payload string
		want    Reason
	}{
		{`[{"message":"Forbidden","extensions":{"code":"FORBIDDEN"}},{"message":"second"}]`, "graphql error: Forbidden"},
		{`[{"message":"Cannot query field \"bad\" on \"Query\"."}]`, `graphql error: Cannot query field "bad" on "Query".`},
		{`[{"message":"line one\nline two\u0007"}]`, "graphql error: line one line two "},
		{`[{"message":"caf\u00e9 \ud83d"}]`, "graphql error: café \ufffd"},
		{`{"message":"an object (older servers)"}`, "graphql error: an object (older servers)"},
		{`[{"message":"` + strings.Repeat("ü", 30) + `"}]`, Reason("graphql error: " + strings.Repeat("ü", 20))},
		{`[{"locations":[]}]`, reasonGQLError},
		{`[]`, reasonGQLError},
		{`null`, reasonGQLError},
	} {
		if got := gqlErrorWhy([]byte(tc.payload)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.payload, got, tc.want)
		}
	}
}

// TestAnswerReasonAllocs: an error answer decoded and its reason
// counted allocate nothing once its code was seen.
func TestAnswerReasonAllocs(t *testing.T) {
	objs := [][]byte{[]byte(`{"code":-32601,"message":"Method not found"}`), []byte(`[{"message":"Forbidden"}]`)}
	var m Reasons
	round := func() {
		m.add(rpcErrorWhy(objs[0]))
		m.add(gqlErrorWhy(objs[1]))
		m.add(mqttRefusal(0x87, true))
	}
	round()
	if n := testing.AllocsPerRun(1000, round); n > 0 {
		t.Fatalf("%.1f allocations per round, want 0", n)
	}
	if m["jsonrpc -32601"] != 1002 || m["graphql error: Forbidden"] != 1002 || m["mqtt 0x87 not authorized"] != 1002 {
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
	l := &loop{}
	p := jsonRPC{}
	f.Fuzz(func(t *testing.T, msg []byte) {
		l.msgs = l.msgs[:0]
		if fail := p.decode(l, nil, &protoConn{}, opText, msg, 0); fail != "" {
			t.Fatalf("failed %q: JSON-RPC has no failure of its own", fail)
		}
		for _, m := range l.msgs {
			for _, part := range [][]byte{m.Topic, m.ID, m.Body} {
				if len(part) > 0 && !within(part, msg) {
					t.Fatalf("a decoded part %q points outside the message", part)
				}
			}
			if (m.Type == msgError) != (m.why != "") || !strings.HasPrefix(string(m.why), "jsonrpc") && m.why != "" || strings.ContainsAny(string(m.why), "\r\n") {
				t.Fatalf("message of type %d, reason %q", m.Type, m.why)
			}
		}
	})
}

// FuzzGQLErrorWhy: any error payload gives a reason of one line, at most
// 40 bytes of message, valid UTF-8 when the payload is; a message that
// appendJSONString wrote reads back as it was.
func FuzzGQLErrorWhy(f *testing.F) {
	f.Add([]byte(`[{"message":"Forbidden"}]`), "Forbidden")
	f.Add([]byte(`{"message":"x\u00e9\ud800"}`), "a \"quoted\" \\ word")
	f.Add([]byte(`[{"message":"\u0000\n"}]`), "é")
	f.Fuzz(func(t *testing.T, payload []byte, text string) {
		why := gqlErrorWhy(payload)
		const prefix = "graphql error"
		if !strings.HasPrefix(string(why), prefix) || len(why) > len(prefix)+2+40 || strings.ContainsAny(string(why), "\r\n\x00") {
			t.Fatalf("%q: reason %q", payload, why)
		}
		if utf8.Valid(payload) && !utf8.ValidString(string(why)) {
			t.Fatalf("%q: reason %q is not UTF-8", payload, why)
		}
		if !utf8.ValidString(text) || strings.ContainsFunc(text, func(r rune) bool { return r < 0x20 || r == 0x7f }) || len(text) > 40 || text == "" {
			return
		}
		obj, _ := json.Marshal([]map[string]string{{"message": text}})
		if got := gqlErrorWhy(obj); got != Reason(prefix+": "+text) {
			t.Fatalf("message %q (%s) reads %q", text, obj, got)
		}
		if got := appendJSONText(nil, appendJSONString(nil, []byte(text))[1:len(appendJSONString(nil, []byte(text)))-1]); string(got) != text {
			t.Fatalf("%q escaped and read back: %q", text, got)
		}
	})
}
