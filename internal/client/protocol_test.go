package client

import (
	"encoding/json"
	"testing"
)

// TestOptionsProtocolJSON: a client's options travel to shards as JSON;
// the protocol's settings come back as its own settings struct.
func TestOptionsProtocolJSON(t *testing.T) {
	b, err := json.Marshal(Options{Protocol: ProtocolOptions{Name: "line", Settings: &lineSettings{Sep: "|"}}})
	if err != nil {
		t.Fatal(err)
	}
	var o Options
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	if s, ok := o.Protocol.Settings.(*lineSettings); !ok || s.Sep != "|" || o.Protocol.Name != "line" {
		t.Fatalf("%s read back as %+v", b, o.Protocol)
	}
}
