// Package har reads the WebSockets a browser recorded in a HAR file (HTTP
// Archive 1.2) and writes their conversations as a wsplan plan: `wsplan
// import har FILE` is a thin command over Parse and Generate.
//
// Data flow: Parse is pure over the file's bytes (bounded: MaxInput,
// MaxEntries, MaxMessages, MaxMessageSize; every error names the entry)
// and returns the Archive's WebSockets with their messages; Generate
// infers each conversation's ids, captured values, secrets and pauses
// (infer.go) and writes the plan's YAML (plan.go), which the plan loader
// then reads like any other plan.
//
// Where the messages are in a HAR file:
//
//   - Chromium's DevTools (since Chrome 76, "Save all as HAR with
//     content") write the frames of a WebSocket on the entry of its
//     upgrade request (response status 101, `"_resourceType":
//     "websocket"`, URL ws:// or wss://) as `_webSocketMessages`: a list
//     of {type: "send" | "receive", time: wall clock in seconds since the
//     epoch (a float), opcode: 1 text | 2 binary, data: the text, or the
//     binary payload in base64}. Chromium's own layout test
//     http/tests/devtools/network/har-websocket.js ("Verifies that HAR
//     exports contain websocket messages") reads them back.
//   - Firefox's DevTools export (devtools/client/netmonitor/src/har/
//     har-builder.js in mozilla/gecko-dev) writes a WebSocket as a plain
//     entry: the upgrade request with its http:// or https:// URL, an
//     `Upgrade: websocket` request header and response status 101, no
//     `_resourceType`, `startedDateTime` with the local offset
//     (2015-05-29T16:10:30.424+02:00), Firefox's own `_securityState`
//     and `_priority` — and no frames at all: its Messages panel is not
//     exported. Tools that record Firefox's traffic and do keep the
//     frames (HTTP Toolkit, mitmproxy's HAR dump) add them to that entry
//     as Chrome's `_webSocketMessages`. Parse takes both: such an entry
//     is a WebSocket whatever its scheme, its URL is rewritten to ws:// or
//     wss://, and one without frames is returned with none (Generate says
//     why there is nothing to import).
package har

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds on what Parse reads.
const (
	// MaxInput is the largest HAR file Parse reads (100 MiB).
	MaxInput = 100 << 20
	// MaxEntries is the most entries (requests) a log may have.
	MaxEntries = 100_000
	// MaxMessages is the most messages one WebSocket may have.
	MaxMessages = 100_000
	// MaxMessageSize is the largest message (its decoded bytes, 1 MiB).
	MaxMessageSize = 1 << 20
)

// Archive is what Parse found in a HAR file.
type Archive struct {
	// Creator is the program that wrote the file (log.creator: name and
	// version), Browser the browser it recorded (log.browser), "" when
	// absent.
	Creator, Browser string
	// Entries counts the log's entries (requests of any kind).
	Entries int
	// WebSockets are the entries that upgraded to a WebSocket, in the
	// log's order.
	WebSockets []WebSocket
}

// WebSocket is one recorded WebSocket connection.
type WebSocket struct {
	// Entry is the index of its entry in log.entries.
	Entry int
	// URL is the upgrade request's URL with a ws:// or wss:// scheme.
	URL string
	// Started is the entry's startedDateTime (zero when absent).
	Started time.Time
	// Status is the upgrade's response status (101 when it succeeded).
	Status int
	// Request and Response are the upgrade's headers, in the file's order.
	Request, Response []Header
	// Messages are its data and control frames, in the file's order.
	Messages []Message
}

// Header is one HTTP header.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Message is one recorded WebSocket message.
type Message struct {
	// Send is true for a message the browser sent, false for one it
	// received.
	Send bool
	// Time is when it was sent or received (wall clock).
	Time time.Time
	// Opcode is the frame's opcode: OpText, OpBinary, or a control frame's.
	Opcode int
	// Data is the message: a text message's text, a binary message's
	// bytes (decoded from base64).
	Data []byte
}

// WebSocket opcodes (RFC 6455 section 5.2).
const (
	OpText   = 1
	OpBinary = 2
)

// The file's shape: only the fields Parse reads.
type (
	harFile struct {
		Log *harLog `json:"log"`
	}
	harLog struct {
		Creator *harCreator       `json:"creator"`
		Browser *harCreator       `json:"browser"`
		Entries []json.RawMessage `json:"entries"`
	}
	harCreator struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	harEntry struct {
		Started      string       `json:"startedDateTime"`
		ResourceType string       `json:"_resourceType"`
		Request      *harRequest  `json:"request"`
		Response     *harResponse `json:"response"`
		Messages     []harMessage `json:"_webSocketMessages"`
	}
	harRequest struct {
		URL     string   `json:"url"`
		Headers []Header `json:"headers"`
	}
	harResponse struct {
		Status  json.Number `json:"status"`
		Headers []Header    `json:"headers"`
	}
	harMessage struct {
		Type   string      `json:"type"`
		Time   json.Number `json:"time"`
		Opcode int         `json:"opcode"`
		Data   string      `json:"data"`
	}
)

// Parse reads a HAR file and returns its WebSockets. It fails on a file
// that is not a HAR log, breaks a bound, or has a WebSocket entry it
// cannot read; the error names the entry (entries[7]) and the field.
func Parse(b []byte) (*Archive, error) {
	if len(b) > MaxInput {
		return nil, fmt.Errorf("%d bytes: more than the %d MiB a HAR file may have", len(b), MaxInput>>20)
	}
	var f harFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("not a HAR file: %w", err)
	}
	if f.Log == nil {
		return nil, fmt.Errorf("not a HAR file: no log object")
	}
	if len(f.Log.Entries) > MaxEntries {
		return nil, fmt.Errorf("log.entries: %d entries, more than %d", len(f.Log.Entries), MaxEntries)
	}
	a := &Archive{Creator: creator(f.Log.Creator), Browser: creator(f.Log.Browser), Entries: len(f.Log.Entries)}
	for i, raw := range f.Log.Entries {
		ws, err := parseEntry(i, raw)
		if err != nil {
			return nil, fmt.Errorf("entries[%d]%w", i, err)
		}
		if ws != nil {
			a.WebSockets = append(a.WebSockets, *ws)
		}
	}
	return a, nil
}

func creator(c *harCreator) string {
	if c == nil {
		return ""
	}
	return strings.TrimSpace(c.Name + " " + c.Version)
}

// parseEntry reads one entry: nil when it is not a WebSocket. Its errors
// start with the field below the entry (".request.url: …", or ": …").
func parseEntry(i int, raw json.RawMessage) (*WebSocket, error) {
	var e harEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf(": %w", err)
	}
	if e.Request == nil {
		return nil, fmt.Errorf(".request: missing")
	}
	if !isWebSocket(&e) {
		return nil, nil
	}
	u, err := wsURL(e.Request.URL)
	if err != nil {
		return nil, fmt.Errorf(".request.url: %w", err)
	}
	ws := &WebSocket{Entry: i, URL: u, Request: e.Request.Headers}
	if e.Started != "" {
		t, err := time.Parse(time.RFC3339Nano, e.Started)
		if err != nil {
			return nil, fmt.Errorf(".startedDateTime: want an ISO 8601 time, got %q", clip(e.Started))
		}
		ws.Started = t
	}
	if e.Response != nil {
		ws.Response = e.Response.Headers
		if s := e.Response.Status.String(); s != "" {
			n, err := e.Response.Status.Int64()
			if err != nil || n < 0 || n > 999 {
				return nil, fmt.Errorf(".response.status: want an HTTP status, got %s", clip(s))
			}
			ws.Status = int(n)
		}
	}
	if len(e.Messages) > MaxMessages {
		return nil, fmt.Errorf("._webSocketMessages: %d messages, more than %d", len(e.Messages), MaxMessages)
	}
	for j := range e.Messages {
		m, err := parseMessage(&e.Messages[j])
		if err != nil {
			return nil, fmt.Errorf("._webSocketMessages[%d].%w", j, err)
		}
		ws.Messages = append(ws.Messages, m)
	}
	return ws, nil
}

// isWebSocket reports whether an entry is a WebSocket's upgrade: Chrome
// marks it (_resourceType, a ws:// URL), Firefox leaves the upgrade's
// marks (status 101, Upgrade: websocket).
func isWebSocket(e *harEntry) bool {
	if e.ResourceType == "websocket" || len(e.Messages) > 0 {
		return true
	}
	scheme, _, _ := strings.Cut(e.Request.URL, ":")
	if s := strings.ToLower(scheme); s == "ws" || s == "wss" {
		return true
	}
	if e.Response != nil && e.Response.Status.String() == "101" {
		return true
	}
	for _, h := range e.Request.Headers {
		if strings.EqualFold(h.Name, "upgrade") && strings.EqualFold(strings.TrimSpace(h.Value), "websocket") {
			return true
		}
	}
	return false
}

// wsURL returns u with a ws:// or wss:// scheme (http:// and https://,
// as Firefox writes them, rewritten).
func wsURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q: %w", clip(s), err)
	}
	switch strings.ToLower(u.Scheme) {
	case "ws", "http":
		u.Scheme = "ws"
	case "wss", "https":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("%q: want a ws://, wss://, http:// or https:// URL", clip(s))
	}
	if u.Host == "" {
		return "", fmt.Errorf("%q: no host", clip(s))
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), nil
}

// parseMessage reads one of _webSocketMessages; its errors start with the
// field's name.
func parseMessage(hm *harMessage) (Message, error) {
	var m Message
	switch hm.Type {
	case "send":
		m.Send = true
	case "receive":
	default:
		return m, fmt.Errorf("type: want send or receive, got %q", clip(hm.Type))
	}
	if hm.Opcode < 0 || hm.Opcode > 15 {
		return m, fmt.Errorf("opcode: want 0-15, got %d", hm.Opcode)
	}
	m.Opcode = hm.Opcode
	if hm.Opcode == 0 {
		m.Opcode = OpText // a tool that leaves it out recorded text
	}
	t, err := messageTime(hm.Time)
	if err != nil {
		return m, fmt.Errorf("time: %w", err)
	}
	m.Time = t
	if len(hm.Data) > MaxMessageSize*4/3+4 {
		return m, fmt.Errorf("data: %d bytes, more than the %d KiB a message may have", len(hm.Data), MaxMessageSize>>10)
	}
	m.Data = []byte(hm.Data)
	if m.Opcode == OpBinary {
		d, err := base64.StdEncoding.DecodeString(hm.Data)
		if err != nil {
			return m, fmt.Errorf("data: a binary message is base64: %w", err)
		}
		m.Data = d
	} else if !utf8.Valid(m.Data) {
		return m, fmt.Errorf("data: a text message is not UTF-8")
	}
	if len(m.Data) > MaxMessageSize {
		return m, fmt.Errorf("data: %d bytes, more than the %d KiB a message may have", len(m.Data), MaxMessageSize>>10)
	}
	return m, nil
}

// messageTime reads a message's time: seconds since the epoch, as Chrome
// writes it (a number past 1e11 is taken as milliseconds, as some tools
// write it).
func messageTime(n json.Number) (time.Time, error) {
	if n == "" {
		return time.Time{}, nil
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return time.Time{}, fmt.Errorf("want seconds since the epoch, got %s", clip(n.String()))
	}
	us := f * 1e6 // to the microsecond: the clock's precision in Chrome's files
	if f > 1e11 {
		us = f * 1e3
	}
	if us > 1e17 {
		return time.Time{}, fmt.Errorf("want seconds since the epoch, got %s", clip(n.String()))
	}
	return time.UnixMicro(int64(math.Round(us))).UTC(), nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// HeaderValue returns the value of the first header named name
// (case-insensitively) in hs, and whether there is one.
func HeaderValue(hs []Header, name string) (string, bool) {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) {
			return h.Value, true
		}
	}
	return "", false
}

// isJSON reports whether data is one JSON object or array (what Generate
// reads ids and values from).
func isJSON(data []byte) bool {
	d := bytes.TrimSpace(data)
	return len(d) > 0 && (d[0] == '{' || d[0] == '[') && json.Valid(d)
}
