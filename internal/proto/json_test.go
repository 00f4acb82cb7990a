package proto

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `a "quoted" \ back`, "new\nline\ttab\r", "ctl \x00\x01\x1f", "ünï ✓"} {
		b := AppendJSONString(nil, []byte(s))
		var got string
		if err := json.Unmarshal(b, &got); err != nil || got != s {
			t.Errorf("%q: %s decodes to %q (%v)", s, b, got, err)
		}
	}
}

func TestJSONMembers(t *testing.T) {
	var keys, vals []string
	f := func(k, v []byte) bool {
		keys, vals = append(keys, string(k)), append(vals, string(v))
		return true
	}
	if !JSONMembers([]byte(` {"a":1, "b\"c" : {"x":[1,2]}, "d":"s"}`), f) {
		t.Fatal("an object: false")
	}
	if got := strings.Join(keys, "|") + " " + strings.Join(vals, "|"); got != `a|b\"c|d 1|{"x":[1,2]}|"s"` {
		t.Errorf("object: %s", got)
	}
	keys, vals = nil, nil
	if !JSONMembers([]byte(`[{"id":1},2]`), f) || strings.Join(vals, "|") != `{"id":1}|2` || keys[0] != "" {
		t.Errorf("array: %q %q", keys, vals)
	}
	if JSONMembers([]byte(`"str"`), f) || JSONMembers(nil, f) {
		t.Error("not an object or array: true")
	}
}

// TestOptionsJSON: options travel to shards as JSON and come back with
// the named protocol's settings struct; an unknown name is an error.
func TestOptionsJSON(t *testing.T) {
	type settings struct {
		Host string `yaml:"host" default:"/"`
	}
	Register("test-json", "a test's", func(*settings) (Protocol, error) { return nil, nil })
	b, err := json.Marshal(Options{Name: "test-json", Settings: &settings{Host: "vh"}})
	if err != nil {
		t.Fatal(err)
	}
	var o Options
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	if s, ok := o.Settings.(*settings); !ok || s.Host != "vh" || o.Name != "test-json" {
		t.Fatalf("%s read back as %+v", b, o)
	}
	if s := Effective(Options{Name: "test-json"}).(*settings); s.Host != "/" {
		t.Errorf("effective settings %+v: want the default host", s)
	}
	if err := json.Unmarshal([]byte(`{"name":"nosuch","settings":{}}`), &o); err == nil || !strings.Contains(err.Error(), `unknown protocol "nosuch"`) {
		t.Errorf("unknown protocol: %v", err)
	}
	if _, err := Make(Options{Name: "test-json", Settings: &struct{}{}}); err == nil {
		t.Error("settings of another type: no error")
	}
}
