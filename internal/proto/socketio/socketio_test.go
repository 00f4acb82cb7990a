package socketio

import (
	"testing"

	"github.com/wsplan/wsplan/internal/proto"
)

// FuzzSocketIODecode: whatever the server sends, the greeting and the
// decoder fail cleanly or decode; what they decode points into the
// message; every ping is answered by one pong.
func FuzzSocketIODecode(f *testing.F) {
	for _, s := range []string{
		`0{"sid":"x","pingInterval":25000,"pingTimeout":20000}`, `40{"sid":"a"}`, `40/chat,{"sid":"a"}`,
		`42/chat,["chat",{"n":1}]`, `42/chat,17["ask",1]`, `43/chat,5[{"n":1}]`, "2", "6", "1", "41",
		`44{"message":"bye"}`, `45-["b",{}]`, `42["\u00e9",`, `4217`, `42/chat`, "",
	} {
		f.Add([]byte(s), false)
	}
	p, err := New(&Settings{Namespace: "/chat"})
	if err != nil {
		f.Fatal(err)
	}
	rec := &proto.Recorder{Keep: true}
	e := &proto.Env{Link: rec}
	f.Fuzz(func(t *testing.T, msg []byte, greeting bool) {
		s := &proto.Conn{}
		e.Msgs, rec.Sent, rec.Ops = e.Msgs[:0], nil, nil
		var fail proto.Reason
		if greeting {
			if _, fail = p.Greeting(e, s, proto.OpText, msg, 0); fail != "" && rec.Refused {
				rec.Refused = false // a refusal is one of the greeting's outcomes
			}
		} else {
			fail = p.Decode(e, s, proto.OpText, msg, 0)
		}
		if why := proto.CheckDecoded(e, s, msg, fail, "socket.io"); why != "" {
			t.Fatalf("%q: %s", msg, why)
		}
		if string(msg) == "2" && (len(rec.Sent) != 1 || string(rec.Sent[0]) != "3") {
			t.Fatalf("a ping answered with %q", rec.Sent)
		}
	})
}
