package graphqlws

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wsplan/wsplan/internal/proto"
)

// TestGQLErrorWhy: an error answer's reason is its first error's message,
// unescaped, on one line, clipped at a character.
func TestGQLErrorWhy(t *testing.T) {
	for _, tc := range []struct {
		payload string
		want    proto.Reason
	}{
		{`[{"message":"Forbidden","extensions":{"code":"FORBIDDEN"}},{"message":"second"}]`, "graphql error: Forbidden"},
		{`[{"message":"Cannot query field \"bad\" on \"Query\"."}]`, `graphql error: Cannot query field "bad" on "Query".`},
		{`[{"message":"line one\nline two\u0007"}]`, "graphql error: line one line two "},
		{`[{"message":"caf\u00e9 \ud83d"}]`, "graphql error: café \ufffd"},
		{`{"message":"an object (older servers)"}`, "graphql error: an object (older servers)"},
		{`[{"message":"` + strings.Repeat("ü", 30) + `"}]`, proto.Reason("graphql error: " + strings.Repeat("ü", 20))},
		{`[{"locations":[]}]`, reasonGQLError},
		{`[]`, reasonGQLError},
		{`null`, reasonGQLError},
	} {
		if got := gqlErrorWhy([]byte(tc.payload)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.payload, got, tc.want)
		}
	}
}

// TestGQLErrorWhyAllocs: an error answer's reason, counted, allocates
// nothing once its message was seen.
func TestGQLErrorWhyAllocs(t *testing.T) {
	payload := []byte(`[{"message":"Forbidden"}]`)
	m := map[proto.Reason]int{}
	round := func() { m[gqlErrorWhy(payload)]++ }
	round()
	if n := testing.AllocsPerRun(1000, round); n > 0 {
		t.Fatalf("%.1f allocations per round, want 0", n)
	}
	if m["graphql error: Forbidden"] != 1002 {
		t.Fatalf("counted %v", m)
	}
}

// FuzzGQLErrorWhy: any error payload gives a reason of one line, at most
// 40 bytes of message, valid UTF-8 when the payload is; a message that
// appendJSONString wrote reads back as it was.
func FuzzGQLErrorWhy(f *testing.F) {
	f.Add([]byte(`[{"message":"Forbidden"}]`), "Forbidden")
	f.Add([]byte(`{"message":"x\u00e9\ud800"}`), "a \"quoted\" \\ word")
	f.Add([]byte(`[{"message":"\u0000\n"}]`), "é")
	f.Fuzz(func(t *testing.T, payload []byte, text string) {
		why := gqlErrorWhy(payload)
		const prefix = "graphql error"
		if !strings.HasPrefix(string(why), prefix) || len(why) > len(prefix)+2+40 || strings.ContainsAny(string(why), "\r\n\x00") {
			t.Fatalf("%q: reason %q", payload, why)
		}
		if utf8.Valid(payload) && !utf8.ValidString(string(why)) {
			t.Fatalf("%q: reason %q is not UTF-8", payload, why)
		}
		if !utf8.ValidString(text) || strings.ContainsFunc(text, func(r rune) bool { return r < 0x20 || r == 0x7f }) || len(text) > 40 || text == "" {
			return
		}
		obj, _ := json.Marshal([]map[string]string{{"message": text}})
		if got := gqlErrorWhy(obj); got != proto.Reason(prefix+": "+text) {
			t.Fatalf("message %q (%s) reads %q", text, obj, got)
		}
		if got := proto.AppendJSONText(nil, proto.AppendJSONString(nil, []byte(text))[1:len(proto.AppendJSONString(nil, []byte(text)))-1]); string(got) != text {
			t.Fatalf("%q escaped and read back: %q", text, got)
		}
	})
}
