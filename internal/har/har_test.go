package har

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/plan"
)

// entry writes one HAR entry as JSON: url, response status (0 = none),
// request headers as name, value pairs, and messages.
func entry(url string, status int, headers []string, msgs ...map[string]any) map[string]any {
	var hs []Header
	for i := 0; i+1 < len(headers); i += 2 {
		hs = append(hs, Header{Name: headers[i], Value: headers[i+1]})
	}
	e := map[string]any{"request": map[string]any{"method": "GET", "url": url, "headers": hs}}
	if status != 0 {
		e["response"] = map[string]any{"status": status, "headers": []Header{}}
	}
	if len(msgs) > 0 {
		e["_resourceType"] = "websocket"
		e["_webSocketMessages"] = msgs
	}
	return e
}

// sent and recv are messages of an entry, at t seconds.
func sent(t float64, data string) map[string]any {
	return map[string]any{"type": "send", "time": 1.7e9 + t, "opcode": 1, "data": data}
}

func recv(t float64, data string) map[string]any {
	return map[string]any{"type": "receive", "time": 1.7e9 + t, "opcode": 1, "data": data}
}

// harOf writes a HAR file of entries.
func harOf(t testing.TB, entries ...map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "test", "version": "1"}, "entries": entries}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParse: what Parse reads of Chrome's and Firefox's layouts, and the
// errors of files it cannot read, each naming the entry and the field.
func TestParse(t *testing.T) {
	t.Run("chrome", func(t *testing.T) {
		a, err := Parse(harOf(t,
			entry("http://h/", 200, nil),
			entry("wss://h:8443/ws?x=1#frag", 101, []string{"Cookie", "a=b"},
				sent(0.5, `{"op":"x"}`), recv(0.75, "plain"),
				map[string]any{"type": "receive", "time": 1.7e9 + 1, "opcode": 2, "data": "AAEC"}),
		))
		if err != nil {
			t.Fatal(err)
		}
		if a.Entries != 2 || a.Creator != "test 1" || len(a.WebSockets) != 1 {
			t.Fatalf("archive %+v", a)
		}
		ws := a.WebSockets[0]
		if ws.Entry != 1 || ws.URL != "wss://h:8443/ws?x=1" || ws.Status != 101 || len(ws.Messages) != 3 {
			t.Fatalf("websocket %+v", ws)
		}
		m := ws.Messages
		if !m[0].Send || string(m[0].Data) != `{"op":"x"}` || m[1].Send || m[1].Time.Sub(m[0].Time) != 250*time.Millisecond {
			t.Errorf("messages %+v", m)
		}
		if m[2].Opcode != OpBinary || !bytes.Equal(m[2].Data, []byte{0, 1, 2}) {
			t.Errorf("binary message %+v: want its base64 decoded", m[2])
		}
	})
	t.Run("firefox", func(t *testing.T) {
		a, err := Parse([]byte(`{"log": {"creator": {"name": "Firefox", "version": "128.0"}, "entries": [
			{"startedDateTime": "2026-12-04T15:02:11.258+01:00", "request": {"url": "https://h/ws", "headers": [{"name": "Upgrade", "value": "websocket"}]},
			 "response": {"status": 101}, "_webSocketMessages": [{"type": "send", "time": 1796392931262, "opcode": 1, "data": "x"}]},
			{"request": {"url": "http://h/ws2"}, "response": {"status": 101}}]}}`))
		if err != nil {
			t.Fatal(err)
		}
		if len(a.WebSockets) != 2 || a.WebSockets[0].URL != "wss://h/ws" || a.WebSockets[1].URL != "ws://h/ws2" || len(a.WebSockets[1].Messages) != 0 {
			t.Fatalf("websockets %+v", a.WebSockets)
		}
		ws := a.WebSockets[0]
		if want := time.Date(2026, 12, 4, 14, 2, 11, 258e6, time.UTC); !ws.Started.Equal(want) {
			t.Errorf("started %v, want %v", ws.Started, want)
		}
		if want := time.UnixMilli(1796392931262); !ws.Messages[0].Time.Equal(want) {
			t.Errorf("a time in milliseconds read as %v, want %v", ws.Messages[0].Time, want)
		}
	})
	ws := func(msg string) string {
		return `{"log": {"entries": [{"request": {"url": "http://h/"}}, {"_resourceType": "websocket", "request": {"url": "ws://h/"}, "_webSocketMessages": [` + msg + `]}]}}`
	}
	for _, c := range []struct{ name, in, want string }{
		{"not JSON", "<html>", "not a HAR file: invalid character '<' looking for beginning of value"},
		{"no log", `{"version": "1.2"}`, "not a HAR file: no log object"},
		{"entries not a list", `{"log": {"entries": {}}}`, "not a HAR file: json: cannot unmarshal object into Go struct field harLog.log.entries of type []json.RawMessage"},
		{"entry not an object", `{"log": {"entries": [3]}}`, "entries[0]: json: cannot unmarshal number into Go value of type har.harEntry"},
		{"no request", `{"log": {"entries": [{}]}}`, "entries[0].request: missing"},
		{"bad url", `{"log": {"entries": [{"_resourceType": "websocket", "request": {"url": "ftp://h/"}}]}}`, `entries[0].request.url: "ftp://h/": want a ws://, wss://, http:// or https:// URL`},
		{"no host", `{"log": {"entries": [{"_resourceType": "websocket", "request": {"url": "ws:///x"}}]}}`, `entries[0].request.url: "ws:///x": no host`},
		{"bad status", `{"log": {"entries": [{"request": {"url": "ws://h/"}, "response": {"status": 1e9}}]}}`, "entries[0].response.status: want an HTTP status, got 1e9"},
		{"bad time", `{"log": {"entries": [{"startedDateTime": "yesterday", "request": {"url": "ws://h/"}}]}}`, `entries[0].startedDateTime: want an ISO 8601 time, got "yesterday"`},
		{"bad type", ws(`{"type": "sent", "data": "x"}`), `entries[1]._webSocketMessages[0].type: want send or receive, got "sent"`},
		{"bad opcode", ws(`{"type": "send", "opcode": 16}`), "entries[1]._webSocketMessages[0].opcode: want 0-15, got 16"},
		{"negative time", ws(`{"type": "send", "time": -1}`), "entries[1]._webSocketMessages[0].time: want seconds since the epoch, got -1"},
		{"time far off", ws(`{"type": "send", "time": 1e20}`), "entries[1]._webSocketMessages[0].time: want seconds since the epoch, got 1e20"},
		{"bad base64", ws(`{"type": "send", "opcode": 2, "data": "!!"}`), "entries[1]._webSocketMessages[0].data: a binary message is base64: illegal base64 data at input byte 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.in))
			if err == nil || err.Error() != c.want {
				t.Errorf("error %v,\nwant %s", err, c.want)
			}
		})
	}
}

// TestParseBounds: every bound is an error naming it, and the entry.
func TestParseBounds(t *testing.T) {
	if _, err := Parse(make([]byte, MaxInput+1)); err == nil || !strings.Contains(err.Error(), "more than the 100 MiB") {
		t.Errorf("input: %v", err)
	}
	entries := strings.Repeat(`{"request":{"url":"http://h/"}},`, MaxEntries)
	if _, err := Parse([]byte(`{"log":{"entries":[` + entries + `{"request":{"url":"http://h/"}}]}}`)); err == nil || err.Error() != "log.entries: 100001 entries, more than 100000" {
		t.Errorf("entries: %v", err)
	}
	msgs := strings.Repeat(`{"type":"send"},`, MaxMessages)
	if _, err := Parse([]byte(`{"log":{"entries":[{"request":{"url":"ws://h/"},"_webSocketMessages":[` + msgs + `{"type":"send"}]}]}}`)); err == nil || err.Error() != "entries[0]._webSocketMessages: 100001 messages, more than 100000" {
		t.Errorf("messages: %v", err)
	}
	big := strings.Repeat("x", MaxMessageSize+1)
	if _, err := Parse(harOf(t, entry("ws://h/", 101, nil, sent(0, big)))); err == nil || err.Error() != "entries[0]._webSocketMessages[0].data: 1048577 bytes, more than the 1024 KiB a message may have" {
		t.Errorf("message size: %v", err)
	}
	if _, err := Parse(harOf(t, entry("ws://h/", 101, nil, sent(0, big[1:])))); err != nil {
		t.Errorf("a message of the largest size: %v", err)
	}
}

// FuzzParse: Parse never panics, and whatever it reads Generate writes as
// YAML that decodes, or refuses with an error.
func FuzzParse(f *testing.F) {
	f.Add(harOf(f, entry("ws://h/ws?token=abcdefgh123", 101, []string{"Cookie", "s=1234567890", "Authorization", "Bearer abcdefghij"},
		recv(0, `{"type":"hi"}`), sent(0.1, `{"op":"login","id":1,"token":"abcdefgh123","x":"{{a}} ${b}"}`),
		recv(0.2, `{"op":"ok","id":1,"session":"sess-123456"}`), sent(0.3, `{"op":"sub","id":2,"session":"sess-123456"}`),
		sent(20, "plain {{x}}"), recv(21, `[1,{"a":[true,null]}]`))))
	f.Add([]byte(`{"log":{"entries":[{"request":{"url":"https://h/"},"response":{"status":101},"_webSocketMessages":[{"type":"receive","opcode":2,"data":"AA=="}]}]}}`))
	f.Add([]byte(`{"log":{"entries":[]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Parse(b)
		if err != nil {
			return
		}
		res, err := Generate(a, Options{Source: "f.har"})
		if err != nil {
			return
		}
		var doc map[string]any
		if err := yaml.Unmarshal(res.Plan, &doc); err != nil {
			t.Fatalf("the plan is not YAML: %v\n%s", err, res.Plan)
		}
		if doc["servers"] == nil || doc["phases"] == nil {
			t.Fatalf("the plan has no servers or phases:\n%s", res.Plan)
		}
		for _, v := range res.Env {
			t.Setenv(v, "value-of-"+v)
		}
		if _, err := plan.LoadBytes("f.yaml", res.Plan, plan.LoadOptions{}); err != nil {
			t.Fatalf("the plan does not load: %v\n%s", err, res.Plan)
		}
	})
}

func Example() {
	a, _ := Parse([]byte(`{"log": {"entries": [{"_resourceType": "websocket", "request": {"url": "ws://127.0.0.1:8080/ws"}, "response": {"status": 101},
		"_webSocketMessages": [{"type": "send", "time": 1.7e9, "opcode": 1, "data": "{\"op\":\"ping\",\"id\":1}"},
		                       {"type": "receive", "time": 1.70000000002e9, "opcode": 1, "data": "{\"op\":\"pong\",\"id\":1}"}]}]}}`))
	res, _ := Generate(a, Options{Source: "ping.har"})
	fmt.Print(string(res.Plan[bytes.Index(res.Plan, []byte("name:")):]))
	// Output:
	// name: ping
	// description: 'imported from ping.har: 1 WebSocket(s), 1 sent and 1 received messages'
	// servers:
	//   - name: server
	//     url: 'ws://127.0.0.1:8080/ws'
	// phases:
	//   # entries[0]: ws://127.0.0.1:8080/ws, 1 sent and 1 received over 20ms
	//   - script:
	//       users: 1
	//       steps:
	//         - send: '{"op":"ping","id":{{.seq}}}'
	//         - expect: {json: {$.op: pong}, correlate: $.id, as: ping}
}

// BenchmarkGenerate imports a recording of 100,000 messages (the most a
// WebSocket may have): 50,000 requests with ids, each answered.
func BenchmarkGenerate(b *testing.B) {
	var msgs []map[string]any
	for i := range MaxMessages / 2 {
		msgs = append(msgs, sent(float64(i), fmt.Sprintf(`{"op":"get","id":%d,"session":"sess-abcdef","key":"k%d"}`, i+1, i)),
			recv(float64(i)+0.5, fmt.Sprintf(`{"op":"got","id":%d,"value":"v-%08d"}`, i+1, i)))
	}
	in := harOf(b, entry("ws://127.0.0.1:9000/ws", 101, nil, msgs...))
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		a, err := Parse(in)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Generate(a, Options{Source: "big.har"}); err != nil {
			b.Fatal(err)
		}
	}
}
