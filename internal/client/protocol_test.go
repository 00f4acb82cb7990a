package client

import (
	"encoding/json"
	"testing"

	"github.com/wsplan/wsplan/internal/proto/mqtt"
)

// TestOptionsProtocolJSON: a client's options travel to shards as JSON;
// the protocol's settings come back as its own settings struct.
func TestOptionsProtocolJSON(t *testing.T) {
	b, err := json.Marshal(Options{Protocol: ProtocolOptions{Name: mqtt.Name, Settings: &mqtt.Settings{Version: mqtt.Version5, Username: "u1"}}})
	if err != nil {
		t.Fatal(err)
	}
	var o Options
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	if s, ok := o.Protocol.Settings.(*mqtt.Settings); !ok || s.Version != mqtt.Version5 || s.Username != "u1" || o.Protocol.Name != mqtt.Name {
		t.Fatalf("%s read back as %+v", b, o.Protocol)
	}
}
