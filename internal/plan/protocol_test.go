package plan

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/units"
)

// TestProtocolString: every setting of every protocol the plan gives is
// printed by its key, a secret never; the defaults are filled in.
func TestProtocolString(t *testing.T) {
	for _, d := range proto.Defs() {
		s := reflect.New(d.Settings)
		for _, f := range decl.Fields(s) {
			switch f.Value.Interface().(type) {
			case string:
				f.Value.SetString("v-" + f.Key)
			case units.Duration:
				f.Value.Set(reflect.ValueOf(units.Duration(30 * time.Second)))
			default:
				t.Fatalf("%s: setting %s: set it in this test", d.Name, f.Key)
			}
		}
		got := (&Protocol{Name: d.Name, Settings: s.Interface()}).String()
		for _, f := range decl.Fields(s) {
			if !strings.Contains(got, f.Key+": ") {
				t.Errorf("%q does not show %s", got, f.Key)
			}
			if f.Struct.Tag.Get("secret") == "true" && (strings.Contains(got, "v-"+f.Key) || !strings.Contains(got, f.Key+": '"+Redacted+"'")) {
				t.Errorf("%q shows %s", got, f.Key)
			}
		}
	}
	for _, tc := range []struct {
		yaml string
		want string
	}{
		// the protocol's defaults filled in, as the client will use them
		{"socketio", "socketio {namespace: /}"},
		{"mqtt", `mqtt {version: 3.1.1, keepalive: 1m0s}`},
		{"{name: stomp, host: /vh}", `stomp {keepalive: 10s, host: /vh}`},
		{"jsonrpc", "jsonrpc"},
		{`{name: mqtt, version: "5", keepalive: 30s}`, `mqtt {version: "5", keepalive: 30s}`},
		{`{name: graphql-ws, init: '{"token":"x"}'}`, `graphql-ws {init: '{"token":"x"}'}`},
	} {
		var p Protocol
		if err := yaml.Unmarshal([]byte(tc.yaml), &p); err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		if got := p.String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.yaml, got, tc.want)
		}
	}
	if got := (*Protocol)(nil).String(); got != "" {
		t.Errorf("nil: %q", got)
	}
}

// TestProtocolDecode: the settings a protocol declares, with their
// bounds and forms; a key of another protocol names the protocols that
// have it.
func TestProtocolDecode(t *testing.T) {
	for _, tc := range []struct{ yaml, err string }{
		{"mqtt", ""},
		{"{name: socketio, namespace: /chat}", ""},
		{"{name: stomp, keepalive: 1s, username: u, password: p, host: /}", ""},
		{"amqp", `unknown protocol "amqp": want one of graphql-ws, jsonrpc, mqtt, socketio, stomp (or leave protocol out for raw messages)`},
		{"{version: 5}", "name: is required: want one of graphql-ws, jsonrpc, mqtt, socketio, stomp"},
		{"{name: socketio, namespace: chat}", `socketio: namespace "chat": want a path with a leading / (write /chat)`},
		{"{name: socketio, namespace: '/a,b'}", `socketio: namespace "/a,b": want a path such as /chat, with no comma or space`},
		{`{name: stomp, version: "1.1", namespace: /chat}`, "version is a mqtt setting, not stomp's; namespace is a socketio setting, not stomp's"},
		{"{name: jsonrpc, keepalive: 1s}", "keepalive is a graphql-ws and mqtt and stomp setting, not jsonrpc's"},
		{"{name: mqtt, colour: red}", `unknown key "colour": want name, version, keepalive, username, password`},
		{"{name: mqtt, keepalive: -1s}", "mqtt: keepalive: must be >= 1s, got -1s"},
		{"{name: mqtt, keepalive: 20h}", "mqtt: keepalive: must be <= 18h12m15s, got 20h0m0s"},
		{"{name: graphql-ws, keepalive: -1s}", "graphql-ws: keepalive: must be >= 0, got -1s"},
		{"{name: mqtt, version: 4}", `mqtt: version "4": want 3.1.1 or 5`},
		{"{name: graphql-ws, init: '{\"token\":'}", "graphql-ws: init: must be a JSON object (connection_init's payload): its JSON ends early, at byte 9"},
		{"[mqtt]", "want a protocol's name (graphql-ws, jsonrpc, mqtt, socketio, stomp) or a mapping with name"},
	} {
		var p Protocol
		err := yaml.Unmarshal([]byte(tc.yaml), &p)
		if got := errText(err); got != tc.err {
			t.Errorf("%s:\n got %s\nwant %s", tc.yaml, got, tc.err)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
