package graphqlws

import (
	"testing"

	"github.com/wsplan/wsplan/internal/proto"
)

// FuzzGraphQLWSDecode: whatever the server sends, the greeting and the
// decoder fail cleanly or decode; what they decode points into the
// message; a ping is answered by a pong, and an error answer has a
// reason.
func FuzzGraphQLWSDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"connection_ack"}`, `{"type":"connection_error","payload":{"message":"no"}}`,
		`{"id":"1","type":"next","payload":{"data":{"message":"eA=="}}}`, `{"id":"1","type":"complete"}`,
		`{"type":"error","id":"2","payload":[{"message":"no"}]}`, `{"type":"ping"}`, `{"type":"pong","payload":{}}`,
		`{"id":"1","type":"data"}`, `not json`, `{"id":"1"}`, `[{"type":"ping"}]`, `{"type":`, "",
	} {
		f.Add([]byte(s), false)
	}
	p, err := New(&Settings{Init: `{"token":"t"}`})
	if err != nil {
		f.Fatal(err)
	}
	rec := &proto.Recorder{Keep: true}
	e := &proto.Env{Link: rec}
	f.Fuzz(func(t *testing.T, msg []byte, greeting bool) {
		s := &proto.Conn{State: gqlOpen}
		e.Msgs, rec.Sent, rec.Ops, rec.Refused = e.Msgs[:0], nil, nil, false
		var fail proto.Reason
		if greeting {
			s.State = gqlWaitAck
			_, fail = p.Greeting(e, s, proto.OpText, msg, 0)
		} else {
			fail = p.Decode(e, s, proto.OpText, msg, 0)
		}
		if why := proto.CheckDecoded(e, s, msg, fail, "graphql"); why != "" {
			t.Fatalf("%q: %s", msg, why)
		}
		if string(msg) == `{"type":"ping"}` && (len(rec.Sent) != 1 || string(rec.Sent[0]) != `{"type":"pong"}`) {
			t.Fatalf("a ping answered with %q", rec.Sent)
		}
	})
}
