package stomp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/units"
)

// The STOMP codec: frames parsed from byte slices (several to a message,
// heart-beats between them, binary bodies by content-length), escapes,
// what the protocol decodes and encodes, and what it sends by itself.

func TestSTOMPParse(t *testing.T) {
	type want struct {
		cmd, dest, rid, msg, body string
	}
	for _, tc := range []struct {
		name string
		in   string
		want []want
		err  stompParseErr
	}{
		{name: "heart-beats only", in: "\n\r\n\n"},
		{name: "message", in: "MESSAGE\nsubscription:1\ndestination:/topic/a\nmessage-id:7\n\nhello\x00",
			want: []want{{cmd: "MESSAGE", dest: "/topic/a", body: "hello"}}},
		{name: "crlf, trailing EOLs", in: "RECEIPT\r\nreceipt-id:12\r\n\r\n\x00\r\n\n",
			want: []want{{cmd: "RECEIPT", rid: "12"}}},
		{name: "content-length keeps NULs", in: "MESSAGE\ndestination:/q\ncontent-length:5\n\na\x00b\xffc\x00\n",
			want: []want{{cmd: "MESSAGE", dest: "/q", body: "a\x00b\xffc"}}},
		{name: "several frames and heart-beats", in: "\nRECEIPT\nreceipt-id:1\n\n\x00\n\nMESSAGE\ndestination:/t\n\nx\x00ERROR\nmessage:boom\n\nwhy\x00\n",
			want: []want{{cmd: "RECEIPT", rid: "1"}, {cmd: "MESSAGE", dest: "/t", body: "x"}, {cmd: "ERROR", msg: "boom", body: "why"}}},
		{name: "first header wins", in: "MESSAGE\ndestination:/a\ndestination:/b\ncontent-length:1\ncontent-length:9\n\nz\x00",
			want: []want{{cmd: "MESSAGE", dest: "/a", body: "z"}}},
		{name: "value with colons", in: "ERROR\nmessage:a:b\n\n\x00", want: []want{{cmd: "ERROR", msg: "a:b"}}},
		{name: "no NUL", in: "MESSAGE\ndestination:/a\n\nbody", err: stompIncomplete},
		{name: "headers cut", in: "MESSAGE\ndestination:/a\n", err: stompIncomplete},
		{name: "command cut", in: "MESS", err: stompIncomplete},
		{name: "body shorter than content-length", in: "MESSAGE\ncontent-length:10\n\nabc\x00", err: stompIncomplete},
		{name: "bad length", in: "MESSAGE\ncontent-length:x\n\n\x00", err: stompBadLength},
		{name: "negative length", in: "MESSAGE\ncontent-length:-1\n\n\x00", err: stompBadLength},
		{name: "no NUL after content-length", in: "MESSAGE\ncontent-length:2\n\nabc\x00", err: stompNoNUL},
		{name: "header without colon", in: "MESSAGE\nnocolon\n\n\x00", err: stompBadHeader},
		{name: "good frame, then a cut one", in: "RECEIPT\nreceipt-id:1\n\n\x00MESSAGE\n", want: []want{{cmd: "RECEIPT", rid: "1"}}, err: stompIncomplete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte(tc.in)
			var got []want
			var f stompFrame
			var err stompParseErr
			for off := 0; off < len(b); {
				var found bool
				if off, found, err = stompParse(b, off, &f); err != stompOK || !found {
					break
				}
				got = append(got, want{string(f.cmd), string(f.destination), string(f.receiptID), string(f.message), string(f.body)})
			}
			if err != tc.err {
				t.Errorf("error %q, want %q", err, tc.err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("frames\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestSTOMPEscape(t *testing.T) {
	for _, v := range []string{"", "/topic/a", "a:b", "line\nbreak\r\n", `back\slash`, "all:\\\r\n:"} {
		esc := stompAppendEscaped(nil, []byte(v))
		if bytes.ContainsAny(esc, ":\r\n") {
			t.Errorf("escaped %q = %q still holds a colon or EOL", v, esc)
		}
		back, ok := stompUnescape(nil, esc)
		if !ok || string(back) != v {
			t.Errorf("unescape(escape(%q)) = %q, %v", v, back, ok)
		}
	}
	for _, bad := range []string{`a\t`, `end\`, `\x`} {
		if _, ok := stompUnescape(nil, []byte(bad)); ok {
			t.Errorf("unescape(%q) ok, want a protocol error", bad)
		}
	}
}

func TestSTOMPHeartBeatHeader(t *testing.T) {
	for in, want := range map[string][2]int64{"1000,2000": {1000, 2000}, "0,0": {0, 0}, " 5 , 6 ": {5, 6}, "": {0, 0}, "x,1": {0, 0}, "-1,5": {0, 0}, "7": {0, 0}} {
		if x, y := stompHeartBeat([]byte(in)); x != want[0] || y != want[1] {
			t.Errorf("heart-beat %q = %d,%d, want %v", in, x, y, want)
		}
	}
}

// stompRig runs the protocol with a Recorder for its link: it keeps
// what the protocol wrote by itself.
type stompRig struct {
	e   *proto.Env
	rec *proto.Recorder
	s   *proto.Conn
	p   *stomp
	now int64
}

func newSTOMPRig(tb testing.TB, o Settings) *stompRig {
	tb.Helper()
	wp, err := newSTOMP(o)
	if err != nil {
		tb.Fatal(err)
	}
	e, rec := proto.NewEnv()
	return &stompRig{e: e, rec: rec, s: &proto.Conn{State: stompOpen}, p: wp.(*stomp), now: 1e12}
}

// newSTOMP makes the protocol as the client does.
func newSTOMP(o Settings) (proto.Protocol, error) {
	return proto.Make(proto.Options{Name: Name, Settings: &o})
}

// stompGot is a decoded message, as text.
type stompGot struct {
	typ             uint8
	Topic, id, Body string
	Why             proto.Reason
}

func (m stompGot) String() string {
	s := fmt.Sprintf("%s topic=%q id=%q body=%q", [...]string{"data", "event", "ack", "next", "complete", "error"}[m.typ], m.Topic, m.id, m.Body)
	if m.Why != "" {
		s += fmt.Sprintf(" why=%q", m.Why)
	}
	return s
}

// decode hands the protocol each WebSocket message in turn.
func (g *stompRig) decode(msgs ...string) (out []stompGot, fail proto.Reason) {
	for _, msg := range msgs {
		g.e.Msgs = g.e.Msgs[:0]
		fail = g.p.Decode(g.e, g.s, proto.OpBinary, []byte(msg), g.now)
		out = append(out, stompGots(g.e.Msgs)...)
		g.s.Buf = g.s.Buf[:0] // as protoData does once the run took them
		if fail != "" {
			return out, fail
		}
	}
	return out, ""
}

// written returns the WebSocket payloads the protocol wrote since the
// last call.
func (g *stompRig) written(tb testing.TB) []string {
	tb.Helper()
	var out []string
	for len(g.rec.Sent) > 0 {
		out = append(out, g.rec.Next())
	}
	return out
}

func TestSTOMPDecode(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []string
		want string
		fail proto.Reason
	}{
		{name: "message", msgs: []string{"MESSAGE\nsubscription:/t/a\ndestination:/t/a\nmessage-id:1\ncontent-length:3\n\nabc\x00\n"},
			want: `[event topic="/t/a" id="" body="abc"]`},
		{name: "heart-beats are no messages", msgs: []string{"\n", "\r\n", "\n\n"}, want: `[]`},
		{name: "several to a message", msgs: []string{"RECEIPT\nreceipt-id:4\n\n\x00\nMESSAGE\ndestination:/q\n\nx\x00\n\nRECEIPT\nreceipt-id:5\n\n\x00"},
			want: `[ack topic="" id="4" body="" event topic="/q" id="" body="x" ack topic="" id="5" body=""]`},
		{name: "escaped destination", msgs: []string{"MESSAGE\ndestination:/t/a\\cb\\\\c\n\nx\x00"},
			want: `[event topic="/t/a:b\\c" id="" body="x"]`},
		{name: "bad escape", msgs: []string{"MESSAGE\ndestination:/t\\t\n\nx\x00"},
			want: `[]`, fail: "stomp: a header with an escape STOMP does not define"},
		{name: "error answers, then ends", msgs: []string{"RECEIPT\nreceipt-id:1\n\n\x00ERROR\nreceipt-id:2\nmessage:Unknown destination\n\n'/x' is not a valid destination\nmore\x00"},
			want: `[ack topic="" id="1" body="" error topic="" id="2" body="'/x' is not a valid destination\nmore" why="stomp ERROR: Unknown destination"]`,
			fail: "stomp: ERROR: Unknown destination ('/x' is not a valid destination)"},
		{name: "error answer without a message", msgs: []string{"ERROR\nreceipt-id:3\n\n\x00"},
			want: `[error topic="" id="3" body="" why="stomp ERROR"]`, fail: "stomp: ERROR"},
		{name: "error answer's message clipped", msgs: []string{"ERROR\nreceipt-id:4\nmessage:" + strings.Repeat("é", 120) + "\n\n\x00"},
			want: `[error topic="" id="4" body="" why="stomp ERROR: ` + strings.Repeat("é", 20) + `"]`, fail: "stomp: ERROR: " + proto.Reason(strings.Repeat("é", proto.MaxWords/2)) + "…"},
		{name: "error without receipt-id only ends", msgs: []string{"ERROR\nmessage:Unknown destination\n\nno\x00"},
			want: `[]`, fail: "stomp: ERROR: Unknown destination (no)"},
		{name: "unknown frame", msgs: []string{"CONNECTED\nversion:1.2\n\n\x00"}, want: `[]`, fail: "stomp: unexpected CONNECTED frame"},
		{name: "a frame's first part waits", msgs: []string{"MESSAGE\ndestination:/q\n\nx"}, want: `[]`},
		{name: "frames split over messages", msgs: []string{"RECEIPT\nreceipt-id:1\n\n\x00MESS", "AGE\ndestination:/q\ncontent-length:3\n\na\x00", "", "b\x00\nRECEIPT\nreceipt-id:2\n\n\x00\n"},
			want: `[ack topic="" id="1" body="" event topic="/q" id="" body="a\x00b" ack topic="" id="2" body=""]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newSTOMPRig(t, Settings{})
			got, fail := g.decode(tc.msgs...)
			if s := fmt.Sprint(got); s != tc.want {
				t.Errorf("decoded\n got %s\nwant %s", s, tc.want)
			}
			if fail != tc.fail {
				t.Errorf("fail %q, want %q", fail, tc.fail)
			}
		})
	}
}

func TestSTOMPGreeting(t *testing.T) {
	for _, tc := range []struct {
		name          string
		o             Settings
		msg           string // split at | into WebSocket messages
		done          bool
		fail          proto.Reason
		every, silent time.Duration
		v10           bool
	}{
		{name: "heart-beats both ways", msg: "CONNECTED\nversion:1.2\nheart-beat:5000,20000\n\n\x00\n", done: true,
			every: 20 * time.Second, silent: 20 * time.Second},
		{name: "keepalive option", o: Settings{Keepalive: units.Duration(time.Second)}, msg: "CONNECTED\nversion:1.2\nheart-beat:500,200\n\n\x00", done: true,
			every: time.Second, silent: 2 * time.Second},
		{name: "server sends none", msg: "CONNECTED\nversion:1.2\nheart-beat:0,1000\n\n\x00", done: true, every: 10 * time.Second},
		{name: "server wants none", msg: "CONNECTED\nversion:1.1\nheart-beat:1000,0\n\n\x00", done: true, silent: 20 * time.Second},
		{name: "stomp 1.0", msg: "CONNECTED\nsession:1\n\n\x00", done: true, v10: true},
		{name: "heart-beat first", msg: "\n"},
		{name: "refused", msg: "ERROR\nmessage:Bad CONNECT\ncontent-type:text/plain\ncontent-length:32\n\nAccess refused for user 'guest'\n\x00\n",
			fail: "stomp: ERROR: Bad CONNECT (Access refused for user 'guest')"},
		{name: "error after connected", msg: "CONNECTED\nversion:1.2\n\n\x00ERROR\nmessage:later\n\n\x00", fail: "stomp: ERROR: later"},
		{name: "another frame", msg: "MESSAGE\ndestination:/q\n\n\x00", fail: "stomp: MESSAGE frame before CONNECTED"},
		{name: "a first part waits", msg: "CONNECTED\nversion"},
		{name: "split", msg: "CONNECTED\nversion:1.2\nheart-|beat:0,500\n\n|\x00", done: true, every: 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newSTOMPRig(t, tc.o)
			g.s.State = 0
			if done, fail := g.p.Greet(g.e, g.s, g.now); done || fail != "" {
				t.Fatalf("greet = %v, %q", done, fail)
			}
			w := g.written(t)
			if len(w) != 1 || !strings.HasPrefix(w[0], "CONNECT\naccept-version:1.0,1.1,1.2\nhost:/\n") || !strings.HasSuffix(w[0], "\n\n\x00") {
				t.Fatalf("CONNECT frame %q", w)
			}
			var done bool
			var fail proto.Reason
			for _, m := range strings.Split(tc.msg, "|") {
				if done, fail = g.p.Greeting(g.e, g.s, proto.OpBinary, []byte(m), g.now); done || fail != "" {
					break
				}
			}
			if done != tc.done || fail != tc.fail {
				t.Fatalf("greeting = %v, %q; want %v, %q", done, fail, tc.done, tc.fail)
			}
			if !done {
				return
			}
			if g.s.Every != int64(tc.every) || g.s.Silence != int64(tc.silent) || (g.s.State&stompV10 != 0) != tc.v10 || g.s.State&^stompV10 != stompOpen {
				t.Errorf("every %v silence %v state %x; want %v, %v, v1.0 %v", time.Duration(g.s.Every), time.Duration(g.s.Silence), g.s.State, tc.every, tc.silent, tc.v10)
			}
		})
	}
}

func TestSTOMPConnectFrame(t *testing.T) {
	p, err := newSTOMP(Settings{Host: "vh", Username: "u", Password: "p", Keepalive: units.Duration(1500 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	want := "CONNECT\naccept-version:1.0,1.1,1.2\nhost:vh\nlogin:u\npasscode:p\nheart-beat:1500,1500\n\n\x00"
	if got := string(p.(*stomp).connect); got != want {
		t.Errorf("CONNECT\n got %q\nwant %q", got, want)
	}
	for _, o := range []Settings{{Username: "a\nb"}, {Host: "x\x00"}, {Keepalive: units.Duration(time.Microsecond)}} {
		if _, err := newSTOMP(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestSTOMPTick(t *testing.T) {
	g := newSTOMPRig(t, Settings{})
	now := g.now
	g.s.Every, g.s.Silence = int64(time.Second), int64(3*time.Second)
	g.s.LastSent, g.s.LastRecv = now, now
	if fail := g.p.Tick(g.e, g.s, now+int64(500*time.Millisecond)); fail != "" {
		t.Fatal(fail)
	}
	if w := g.written(t); len(w) != 0 {
		t.Fatalf("a heart-beat %q half an interval after a write", w)
	}
	// The next tick would come after the interval: the heart-beat leaves now.
	if fail := g.p.Tick(g.e, g.s, now+int64(time.Second-proto.TickEvery/2)); fail != "" {
		t.Fatal(fail)
	}
	if w := g.written(t); len(w) != 1 || w[0] != "\n" {
		t.Fatalf("heart-beat %q, want one EOL", w)
	}
	g.s.LastSent = now + int64(time.Second) // the loop notes every write
	if fail := g.p.Tick(g.e, g.s, now+int64(3*time.Second)+1); fail != "stomp: no heart-beat from the server for 2 of its intervals" {
		t.Errorf("a silent server: %q", fail)
	}
}

func TestSTOMPEncode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		m      proto.Out
		want   string
		id     string
		op     byte
		errMsg string
	}{
		{name: "publish", m: proto.Out{Verb: proto.VerbPublish, Topic: []byte("/queue/a"), Body: []byte("hi")},
			want: "SEND\ndestination:/queue/a\ncontent-length:2\n\nhi\x00", op: proto.OpText},
		{name: "publish with receipt", m: proto.Out{Verb: proto.VerbPublish, Topic: []byte("/topic/x:y"), Body: []byte("a\x00b"), Ack: true},
			want: "SEND\ndestination:/topic/x\\cy\nreceipt:1\ncontent-length:3\n\na\x00b\x00", id: "1", op: proto.OpText},
		{name: "subscribe always asks a receipt", m: proto.Out{Verb: proto.VerbSubscribe, Topic: []byte("/topic/t")},
			want: "SUBSCRIBE\nid:/topic/t\ndestination:/topic/t\nack:auto\nreceipt:1\n\n\x00", id: "1", op: proto.OpText},
		{name: "unsubscribe", m: proto.Out{Verb: proto.VerbUnsubscribe, Topic: []byte("/topic/t"), Ack: true},
			want: "UNSUBSCRIBE\nid:/topic/t\nreceipt:1\n\n\x00", id: "1", op: proto.OpText},
		{name: "send is a frame as written", m: proto.Out{Verb: proto.VerbSend, Body: []byte("BEGIN\ntransaction:t\n\n")},
			want: "BEGIN\ntransaction:t\n\n\x00", op: proto.OpText},
		{name: "send keeps its NUL", m: proto.Out{Verb: proto.VerbSend, Body: []byte("ACK\nid:1\n\n\x00"), Binary: true},
			want: "ACK\nid:1\n\n\x00", op: proto.OpBinary},
		{name: "NUL in a destination", m: proto.Out{Verb: proto.VerbPublish, Topic: []byte("/a\x00")}, errMsg: "stomp: a destination cannot hold a NUL byte"},
		{name: "not a STOMP verb", m: proto.Out{Verb: proto.VerbEmit, Topic: []byte("x")}, errMsg: "stomp: the verb is not STOMP's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newSTOMPRig(t, Settings{})
			out, op, id, err := g.p.Encode(nil, g.s, &tc.m, []byte("x"))
			if tc.errMsg != "" {
				if err == nil || err.Error() != tc.errMsg {
					t.Fatalf("error %v, want %q", err, tc.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want || op != tc.op || string(id) != "x"+tc.id {
				t.Errorf("encode = %q op %d id %q\nwant     %q op %d id %q", out, op, id, tc.want, tc.op, "x"+tc.id)
			}
			var f stompFrame
			if _, found, perr := stompParse(out, 0, &f); !found || perr != stompOK {
				t.Errorf("the frame does not parse back: %v", perr)
			}
		})
	}
}

// TestSTOMPRooms: a member subscribes to its room with a receipt, a
// publisher sends the binary payload, and the MESSAGE that comes back is
// a delivery of exactly those bytes.
func TestSTOMPRooms(t *testing.T) {
	g := newSTOMPRig(t, Settings{})
	join, op, id, answered := g.p.JoinRoom(nil, g.s, 7, nil)
	if string(join) != "SUBSCRIBE\nid:/topic/wsplan.room.7\ndestination:/topic/wsplan.room.7\nack:auto\nreceipt:1\n\n\x00" || op != proto.OpText || string(id) != "1" || !answered {
		t.Errorf("join %q op %d id %q answered %v", join, op, id, answered)
	}
	payload := []byte{0, 1, 2, 0, 0xff, '\n'}
	pub, op := g.p.PublishRoom(nil, g.s, 7, payload)
	if string(pub) != "SEND\ndestination:/topic/wsplan.room.7\ncontent-length:6\n\n\x00\x01\x02\x00\xff\n\x00" || op != proto.OpBinary {
		t.Errorf("publish %q op %d", pub, op)
	}
	// What RabbitMQ makes of it.
	msg := "MESSAGE\nsubscription:/topic/wsplan.room.7\ndestination:/topic/wsplan.room.7\nmessage-id:T_1@@s@@1\nredelivered:false\ncontent-length:6\n\n" + string(payload) + "\x00\n"
	g.e.Msgs = g.e.Msgs[:0]
	if fail := g.p.Decode(g.e, g.s, proto.OpBinary, []byte(msg), g.now); fail != "" || len(g.e.Msgs) != 1 {
		t.Fatalf("decode: %q, %d messages", fail, len(g.e.Msgs))
	}
	got, ok := g.p.Delivery(&g.e.Msgs[0], nil)
	if !ok || !bytes.Equal(got, payload) {
		t.Errorf("delivery %q %v, want %q", got, ok, payload)
	}
	if _, ok := g.p.Delivery(&proto.Message{Msg: proto.NewMessage(proto.MsgAck, proto.OpBinary, nil, []byte("1"), nil).Msg}, nil); ok {
		t.Error("a RECEIPT is a delivery")
	}
}

// FuzzSTOMPDecode: any message decodes without panicking, and every
// decoded message points inside it or into the connection's buffer.
func FuzzSTOMPDecode(f *testing.F) {
	for _, s := range []string{
		"\n", "MESSAGE\ndestination:/t\n\nx\x00", "RECEIPT\nreceipt-id:1\n\n\x00\n",
		"MESSAGE\ndestination:/a\\cb\ncontent-length:3\n\na\x00b\x00", "ERROR\nmessage:m\n\nbody\x00",
		"MESSAGE\ncontent-length:99999999999999999999\n\n\x00", "\r\n\r\nRECEIPT\r\nreceipt-id:\\\\\r\n\r\n\x00",
	} {
		f.Add([]byte(s))
	}
	e := &proto.Env{Link: &proto.Recorder{}}
	p := &stomp{}
	f.Fuzz(func(t *testing.T, msg []byte) {
		s := &proto.Conn{State: stompOpen}
		e.Msgs = e.Msgs[:0]
		fail := p.Decode(e, s, proto.OpBinary, msg, 0)
		for _, m := range e.Msgs {
			for _, part := range [][]byte{m.Topic, m.ID, m.Body} {
				if len(part) > 0 && !proto.Within(part, msg) && !proto.Within(part, s.Buf) {
					t.Fatalf("a decoded part %q points outside the message", part)
				}
			}
		}
		if len(e.Msgs) > 0 && e.Msgs[len(e.Msgs)-1].Type == proto.MsgError && fail == "" {
			t.Fatal("an ERROR frame did not end the connection")
		}
		// The same bytes in two WebSocket messages decode the same.
		if fail == "" && len(msg) > 1 {
			whole := stompGots(e.Msgs)
			cut := int(msg[0]) % len(msg)
			s2 := &proto.Conn{State: stompOpen}
			e.Msgs = e.Msgs[:0]
			if f2 := p.Decode(e, s2, proto.OpBinary, append([]byte(nil), msg[:cut]...), 0); f2 != "" {
				t.Fatalf("the first %d bytes fail (%q) where the whole message did not", cut, f2)
			}
			first := stompGots(e.Msgs)
			e.Msgs = e.Msgs[:0]
			if f2 := p.Decode(e, s2, proto.OpBinary, append([]byte(nil), msg[cut:]...), 0); f2 != "" {
				t.Fatalf("split at %d: %q where the whole message did not fail", cut, f2)
			}
			if got := fmt.Sprint(append(first, stompGots(e.Msgs)...)); got != fmt.Sprint(whole) {
				t.Fatalf("split at %d decodes\n%s\nwhole\n%s", cut, got, fmt.Sprint(whole))
			}
		}
		// Whatever parsed, frames re-encoded from it parse the same.
		var fr stompFrame
		for off := 0; off < len(msg); {
			var found bool
			var perr stompParseErr
			if off, found, perr = stompParse(msg, off, &fr); perr != stompOK || !found {
				break
			}
			out := stompAppendBody(stompAppendHeader(append(append([]byte(nil), fr.cmd...), '\n'), "destination", fr.destination), fr.body)
			var back stompFrame
			if _, ok, perr := stompParse(out, 0, &back); !ok || perr != stompOK || !bytes.Equal(back.body, fr.body) {
				t.Fatalf("re-encoded frame %q does not parse back (%v)", out, perr)
			}
		}
	})
}

// stompGots copies decoded messages as text.
func stompGots(ms []proto.Message) []stompGot {
	out := make([]stompGot, 0, len(ms))
	for _, m := range ms {
		out = append(out, stompGot{m.Type, string(m.Topic), string(m.ID), string(m.Body), m.Why})
	}
	return out
}
