package socketio

import (
	"strings"
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

// TestSocketIOGreeting: the open packet sets the silence limit and is
// answered by the namespace connect; 40 opens the connection, 44 refuses
// it with the server's message; a ping during the handshake is answered.
func TestSocketIOGreeting(t *testing.T) {
	for _, tc := range []struct {
		ns, connect, answer string
		done                bool
		fail                proto.Reason
	}{
		{"", "40", `40{"sid":"a"}`, true, ""},
		{"/chat", "40/chat,", `40/chat,{"sid":"a"}`, true, ""},
		{"", "40", `44{"message":"not authorized"}`, false, "socket.io: connect refused: not authorized"},
		{"", "40", `42["early"]`, false, `socket.io: unexpected packet 42["early"] during the handshake`},
	} {
		p, err := New(&Settings{Namespace: "/" + strings.TrimPrefix(tc.ns, "/")})
		if err != nil {
			t.Fatal(err)
		}
		e, rec := proto.NewEnv()
		s := &proto.Conn{}
		if done, fail := p.Greet(e, s, 0); done || fail != "" || s.State != sioWaitOpen {
			t.Fatalf("greet: %v %q, state %d: want to wait for the open packet", done, fail, s.State)
		}
		step := func(msg string) (bool, proto.Reason) {
			return p.Greeting(e, s, proto.OpText, []byte(msg), 0)
		}
		if done, fail := step("2"); done || fail != "" || rec.Next() != "3" {
			t.Fatalf("a ping in the handshake: %v %q, want a pong", done, fail)
		}
		if done, fail := step(`0{"sid":"x","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}`); done || fail != "" {
			t.Fatalf("open: %v %q", done, fail)
		}
		if got := rec.Next(); got != tc.connect || s.Every != 45e9 || s.State != sioWaitConnect {
			t.Fatalf("after open: sent %q, every %d, state %d; want %q, 45 s", got, s.Every, s.State, tc.connect)
		}
		if done, fail := step(tc.answer); done != tc.done || fail != tc.fail || rec.Refused != strings.Contains(tc.answer, "44") {
			t.Errorf("%s: %v %q (refused %v), want %v %q", tc.answer, done, fail, rec.Refused, tc.done, tc.fail)
		}
	}
}
