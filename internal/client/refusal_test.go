package client

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/proto/graphqlws"
	"github.com/wsplan/wsplan/internal/proto/mqtt"
	"github.com/wsplan/wsplan/internal/proto/socketio"
	"github.com/wsplan/wsplan/internal/proto/stomp"

	"github.com/wsplan/wsplan/internal/prototest"
	"github.com/wsplan/wsplan/internal/units"
)

// TestRefusalsNotRetried: a server that refuses 20 connections on purpose
// (HTTP 401/403, MQTT CONNACK not authorized or bad credentials, STOMP
// ERROR at CONNECT, graphql-ws close 4401/4403 or connection_error,
// Socket.IO CONNECT_ERROR) sees exactly 20 attempts though the phase
// allows a retry, and each reason carries the server's words, unquoted,
// on one line. Transient failures (HTTP 503, MQTT server unavailable,
// graphql-ws 4500, a plain close) are still retried: 40 attempts.
func TestRefusalsNotRetried(t *testing.T) {
	bin, text := websocket.BinaryMessage, websocket.TextMessage
	mqtt5 := ProtocolOptions{Name: mqtt.Name, Settings: &mqtt.Settings{Version: mqtt.Version5}}
	gql := ProtocolOptions{Name: graphqlws.Name}
	for _, tc := range []struct {
		name    string
		proto   ProtocolOptions
		srv     *prototest.Refuser
		want    Reason
		refusal bool
	}{
		{"http 401", ProtocolOptions{}, &prototest.Refuser{Status: 401}, "bad status 401", true},
		{"http 403", ProtocolOptions{Name: mqtt.Name}, &prototest.Refuser{Status: 403}, "bad status 403", true},
		{"mqtt 3.1.1 bad credentials", ProtocolOptions{Name: mqtt.Name}, &prototest.Refuser{Greet: prototest.ReplyThen(bin, nil, string(connack3(4)))},
			"mqtt: connack: bad user name or password (4)", true},
		{"mqtt 3.1.1 not authorized", ProtocolOptions{Name: mqtt.Name}, &prototest.Refuser{Greet: prototest.ReplyThen(bin, nil, string(connack3(5)))},
			"mqtt: connack: not authorized (5)", true},
		{"mqtt 5 bad credentials", mqtt5, &prototest.Refuser{Greet: prototest.ReplyThen(bin, nil, string(connack5(0x86)))},
			"mqtt: connack: bad user name or password (134)", true},
		{"mqtt 5 not authorized, its words", mqtt5, &prototest.Refuser{Greet: prototest.ReplyThen(bin, nil, string(connack5(0x87, 0x1f, 0, 12, 'n', 'o', ' ', 'A', 'C', 'L', '\n', '\t', 'f', 'o', 'r', ' ')))},
			"mqtt: connack: not authorized (135): no ACL for", true},
		{"stomp error at connect", ProtocolOptions{Name: stomp.Name}, &prototest.Refuser{Greet: prototest.ReplyThen(text, nil,
			"ERROR\nmessage:Bad CONNECT\ncontent-type:text/plain\n\nAccess refused for user 'guest'\n\x00\n")},
			"stomp: ERROR: Bad CONNECT (Access refused for user 'guest')", true},
		{"graphql-ws 4403", gql, &prototest.Refuser{Greet: prototest.ReplyThen(text, websocket.FormatCloseMessage(4403, "Forbidden"))},
			"graphql-ws: forbidden (4403)", true},
		{"graphql-ws 4401, its words", gql, &prototest.Refuser{Greet: prototest.ReplyThen(text, websocket.FormatCloseMessage(4401, "Token\r\nexpired"))},
			"graphql-ws: unauthorized (4401): Token expired", true},
		{"mercurius connection_error", gql, &prototest.Refuser{Greet: prototest.ReplyThen(text, []byte{},
			`{"type":"connection_error","payload":{"message":"Forbidden"}}`)},
			"graphql-ws: connection_error: Forbidden", true},
		{"socket.io string", ProtocolOptions{Name: socketio.Name, Settings: &socketio.Settings{Namespace: "/chat"}}, &prototest.Refuser{Greet: prototest.SIORefuse(`"not authorized"`)},
			"socket.io: connect refused: not authorized", true},
		{"socket.io message", ProtocolOptions{Name: socketio.Name, Settings: &socketio.Settings{Namespace: "/chat"}}, &prototest.Refuser{Greet: prototest.SIORefuse(`{"message":"Connection rejected by server"}`)},
			"socket.io: connect refused: Connection rejected by server", true},
		// Transient: retried.
		{"http 503", ProtocolOptions{}, &prototest.Refuser{Status: 503}, "bad status 503", false},
		{"mqtt server unavailable", ProtocolOptions{Name: mqtt.Name}, &prototest.Refuser{Greet: prototest.ReplyThen(bin, nil, string(connack3(3)))},
			"mqtt: connack: server unavailable (3)", false},
		{"graphql-ws 4500", gql, &prototest.Refuser{Greet: prototest.ReplyThen(text, websocket.FormatCloseMessage(4500, "db down"))},
			"graphql-ws: internal server error (4500): db down", false},
		{"a close with words", ProtocolOptions{Name: stomp.Name}, &prototest.Refuser{Greet: prototest.ReplyThen(text, websocket.FormatCloseMessage(1013, "try\x00again later"))},
			"server close 1013: try again later", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, Options{Targets: []string{tc.srv.Start(t)}, Loops: 2, Protocol: tc.proto})
			res, err := c.Connect(t.Context(), ConnectParams{Connections: 20, Concurrency: 20, Timeout: units.Duration(2 * time.Second), Retries: 1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			attempts, retried := int64(20), int64(0)
			if !tc.refusal {
				attempts, retried = 40, 20
			}
			if got := tc.srv.Attempts.Load(); got != attempts || res.Failed != 20 || res.Retried != retried || res.Errors[tc.want] != attempts {
				t.Errorf("%d attempts, failed %d, retried %d, errors %v; want %d attempts, 20 failed, %d retried, all %q",
					got, res.Failed, res.Retried, res.Errors, attempts, retried, tc.want)
			}
		})
	}
}

// TestServerWords: a server's text reads verbatim on one line: spaces and
// control characters fold into one space, invalid UTF-8 is replaced, the
// ends are trimmed, and it stops at proto.MaxWords bytes (at a character's
// start) with "…".
func TestServerWords(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes
	for _, tc := range []struct{ in, want string }{
		{"Forbidden", "Forbidden"},
		{"Access refused\r\nfor user 'guest'", "Access refused for user 'guest'"},
		{"  \t padded \x00\x1b[31m red\x7f ", "padded [31m red"},
		{"a\u2028b\u0085c", "a b c"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{strings.Repeat("x", proto.MaxWords), strings.Repeat("x", proto.MaxWords)},
		{strings.Repeat("x", proto.MaxWords) + "   ", strings.Repeat("x", proto.MaxWords)},
		// Sad half: nothing to show, or too much.
		{"", ""},
		{" \r\n\t", ""},
		{strings.Repeat("x", proto.MaxWords+1), strings.Repeat("x", proto.MaxWords) + "…"},
		{long, strings.Repeat("é", proto.MaxWords/2) + "…"},
		{"y" + long, "y" + strings.Repeat("é", (proto.MaxWords-1)/2) + "…"},
	} {
		if got := serverWords([]byte(tc.in)); got != tc.want {
			t.Errorf("serverWords(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestJSONWords: a JSON reason reads as its words: a string unquoted, an
// object's (or the first error's) message; anything else as sent.
func TestJSONWords(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"not authorized"`, "not authorized"},
		{` "line\nbreak \"quoted\"" `, `line break "quoted"`},
		{`{"message":"Forbidden","data":{"x":1}}`, "Forbidden"},
		{`[{"message":"Unauthorized","locations":[]}]`, "Unauthorized"},
		// Sad half: no words of its own.
		{`{"code":4}`, `{"code":4}`},
		{`{"message":7}`, `{"message":7}`},
		{`[1,2]`, `[1,2]`},
		{"not json\n", "not json"},
		{``, ``},
	} {
		if got := proto.JSONWords([]byte(tc.in)); got != tc.want {
			t.Errorf("proto.JSONWords(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// checkWords fails unless s is one line of at most proto.MaxWords bytes (and
// the mark of a cut): valid UTF-8, no control character, no space at
// either end or twice in a row.
func checkWords(t *testing.T, s string) {
	t.Helper()
	body := strings.TrimSuffix(s, "…")
	if len(body) > proto.MaxWords || !utf8.ValidString(s) || strings.TrimSpace(body) != body || strings.Contains(body, "  ") {
		t.Fatalf("words %q: not one trimmed line of at most %d bytes", s, proto.MaxWords)
	}
	for _, r := range body {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			t.Fatalf("words %q hold control character %U", s, r)
		}
	}
}

func FuzzServerWords(f *testing.F) {
	for _, s := range []string{"Forbidden", "a\r\nb", "\xff\xfe", strings.Repeat("é", 120), "  x  "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkWords(t, serverWords(b))
		checkWords(t, proto.JSONWords(b))
	})
}

// FuzzMQTTConnackWords: a CONNACK body of any bytes yields its Reason
// String, a part of the body, or nothing; never a panic.
func FuzzMQTTConnackWords(f *testing.F) {
	f.Add(connack5(0x87, 0x1f, 0, 2, 'n', 'o')[2:])
	f.Add(connack5(0x87, 0x13, 0, 30, 0x1f, 0, 1, 'x')[2:])
	f.Add(connack5(0x87, 0x26, 0, 1, 'k', 0, 1, 'v')[2:])
	f.Add([]byte{0, 0x87, 5, 0x1f, 0, 9})
	f.Fuzz(func(t *testing.T, body []byte) {
		if w := mqtt.ConnackWords(body); len(w) > len(body) {
			t.Fatalf("words %q longer than the body %q", w, body)
		}
	})
}
