package plan

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/units"
)

// TestProtocolString: every setting the plan gives is printed by its key,
// the password never.
func TestProtocolString(t *testing.T) {
	var p Protocol
	v := reflect.ValueOf(&p).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Interface().(type) {
		case string:
			f.SetString("v-" + v.Type().Field(i).Tag.Get("yaml"))
		case units.Duration:
			f.Set(reflect.ValueOf(units.Duration(30 * time.Second)))
		default:
			t.Fatalf("field %s: set it in this test", v.Type().Field(i).Name)
		}
	}
	got := p.String()
	for _, k := range protocolKeys {
		if k == "name" {
			continue
		}
		if !strings.Contains(got, k+": ") {
			t.Errorf("%q does not show %s", got, k)
		}
	}
	if strings.Contains(got, "v-password") || !strings.Contains(got, "password: '"+Redacted+"'") {
		t.Errorf("%q shows the password", got)
	}
	for _, tc := range []struct {
		p    *Protocol
		want string
	}{
		{nil, ""},
		// the protocol's defaults filled in, as the client will use them
		{&Protocol{Name: "socketio"}, "socketio {namespace: /}"},
		{&Protocol{Name: "mqtt"}, `mqtt {version: 3.1.1, keepalive: 1m0s}`},
		{&Protocol{Name: "stomp", Host: "/vh"}, `stomp {keepalive: 10s, host: /vh}`},
		{&Protocol{Name: "jsonrpc"}, "jsonrpc"},
		{&Protocol{Name: "mqtt", Version: "5", Keepalive: units.Duration(30 * time.Second)}, `mqtt {version: "5", keepalive: 30s}`},
		{&Protocol{Name: "graphql-ws", Init: `{"token":"x"}`}, `graphql-ws {init: '{"token":"x"}'}`},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}
