package secret

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// hard holds every character an encoder treats specially: quotes, a
// backslash, a percent sign, a space, |, <, &, + and non-ASCII.
const hard = `x.Q7"y.W3'z.L9\k.R5%j.H2 é✓m.F4|<&+`

// encoders are the ways output spells a value, each around some text.
var encoders = []struct {
	name string
	enc  func(string) string
}{
	{"raw", func(s string) string { return "token=" + s + "; next" }},
	{"%q", func(s string) string { return fmt.Sprintf("got %q", "{"+s+"}") }},
	{"%+q", func(s string) string { return fmt.Sprintf("got %+q", s) }},
	{"json", func(s string) string { b, _ := json.Marshal(map[string]string{"error": "bad " + s}); return string(b) }},
	{"json of %q", func(s string) string {
		b, _ := json.Marshal(map[string]string{"error": fmt.Sprintf("got %q", s)})
		return string(b)
	}},
	{"yaml", func(s string) string { b, _ := yaml.Marshal(map[string]string{"init": "it's " + s}); return string(b) }},
	{"yaml double", func(s string) string {
		b, _ := yaml.Marshal(&yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Value: "a\t" + s})
		return string(b)
	}},
	{"query", func(s string) string { return "/ws?" + url.Values{"token": {s}, "a": {"b"}}.Encode() }},
	{"path", func(s string) string { return (&url.URL{Scheme: "ws", Host: "h", Path: "/p/" + s + "/q"}).String() }},
	{"user info", func(s string) string {
		return (&url.URL{Scheme: "ws", Host: "h", User: url.UserPassword("bob", s)}).String()
	}},
	{"html", func(s string) string {
		var b strings.Builder
		template.Must(template.New("").Parse(`<td title="{{.}}">{{.}}</td>`)).Execute(&b, "e: "+s)
		return b.String()
	}},
	{"html of %q", func(s string) string { return template.HTMLEscapeString(strconv.Quote(s)) }},
	{"xml", func(s string) string {
		b, _ := xml.Marshal(struct {
			XMLName xml.Name `xml:"failure"`
			Msg     string   `xml:"message,attr"`
			Body    string   `xml:",chardata"`
		}{Msg: s, Body: "x " + s})
		return string(b)
	}},
	{"markdown cell", func(s string) string { return "| a | " + strings.ReplaceAll(s, "|", `\|`) + " |" }},
	{"base64", func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }},
	{"base64 url raw", func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }},
	{"basic auth 1", func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte("bob:"+s)) }},
	{"basic auth 2", func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+s)) }},
	{"basic auth 3", func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte("al:"+s)) }},
}

// fragments are the runs of s between the characters encoders change: an
// encoding that escapes those characters still shows these.
func fragments(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(`"'\% |<&+`, r) || r > 127 })
}

// TestRedactEveryEncoding: every encoder's output of a hard secret is
// free of it once redacted, in every form and every fragment; the same
// output is not, unredacted (the check can fail).
func TestRedactEveryEncoding(t *testing.T) {
	var set Set
	set.Add(hard)
	for _, e := range encoders {
		t.Run(e.name, func(t *testing.T) {
			out := e.enc(hard)
			if !leaks(out, hard) {
				t.Fatalf("the check cannot fail: %q shows no trace of the secret", out)
			}
			got := set.Redact(out)
			if leaks(got, hard) {
				t.Errorf("%q\nredacted: %q", out, got)
			}
			if !strings.Contains(got, Redacted) {
				t.Errorf("redacted %q: no %s", got, Redacted)
			}
		})
	}
}

// leaks reports whether text shows s in any form or a fragment of it.
func leaks(text, s string) bool {
	for _, f := range append(Forms(s), fragments(s)...) {
		if strings.Contains(text, f) {
			return true
		}
	}
	return false
}

// TestRedactKeepsTheRest: text around a secret, and text without one, is
// left as it was; a secret holding another is replaced whole; short
// values are not secrets; a nil or empty set changes nothing.
func TestRedactKeepsTheRest(t *testing.T) {
	var set Set
	set.Add("s3cret-token", "s3cret-token-and-more", "abc", "")
	for _, c := range []struct{ in, want string }{
		{"Bearer s3cret-token.", "Bearer ***."},
		{"x s3cret-token-and-more y", "x *** y"},
		{"abc and nothing", "abc and nothing"},
		{`got "s3cret-token"`, `got "***"`},
		{"wsplan: 1 failure(s)", "wsplan: 1 failure(s)"},
	} {
		if got := set.Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := set.Values(); len(got) != 2 {
		t.Errorf("Values = %q, want the two long enough", got)
	}
	var none *Set
	if none.Redact("s3cret-token") != "s3cret-token" || !none.Empty() || !(&Set{}).Empty() {
		t.Error("a nil or empty set redacts")
	}
}

// TestWriterAnyCut: a stream cut at every place gives what redacting it
// whole gives.
func TestWriterAnyCut(t *testing.T) {
	var set Set
	set.Add(hard, "other-secret")
	text := "log: " + hard + "\nand " + strconv.Quote(hard) + " then other-secret, " + base64.StdEncoding.EncodeToString([]byte(hard)) + " end"
	want := set.Redact(text)
	for cut := range len(text) + 1 {
		for _, step := range []int{1, 3, len(text)} {
			var b bytes.Buffer
			w := set.Writer(&b)
			for i, chunk := 0, text[:cut]; i < len(chunk); i += step {
				w.Write([]byte(chunk[i:min(i+step, len(chunk))]))
			}
			w.Write([]byte(text[cut:]))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if b.String() != want {
				t.Fatalf("cut %d step %d:\n%q\nwant\n%q", cut, step, b.String(), want)
			}
		}
	}
}

// FuzzWriter: whatever the secret, text and cut, the stream writes what
// Redact gives for the whole.
func FuzzWriter(f *testing.F) {
	f.Add(hard, "a "+hard+" b", 5)
	f.Add("abcd", "abcabcdabcd", 3)
	f.Fuzz(func(t *testing.T, secret, text string, cut int) {
		var set Set
		set.Add(secret)
		cut = min(max(cut, 0), len(text))
		var b bytes.Buffer
		w := set.Writer(&b)
		w.Write([]byte(text[:cut]))
		w.Write([]byte(text[cut:]))
		w.Close()
		if want := set.Redact(text); b.String() != want {
			t.Fatalf("%q cut at %d: %q, want %q", text, cut, b.String(), want)
		}
	})
}

// TestRedactValue: every string a value reaches is redacted, map keys
// included; numbers and binary data are left alone.
func TestRedactValue(t *testing.T) {
	var set Set
	set.Add("s3cret-token")
	type inner struct {
		Why  string
		Info map[string]string
	}
	type doc struct {
		Name    string
		Errs    []string
		Any     map[string]any
		In      *inner
		List    []inner
		Detail  json.RawMessage
		Bin     []byte
		N       int
		private string
	}
	d := doc{Name: "x s3cret-token", Errs: []string{"a", strconv.Quote("s3cret-token")},
		Any:    map[string]any{"m": "s3cret-token", "n": 3.5, "s3cret-token": 1},
		In:     &inner{Why: "s3cret-token", Info: map[string]string{"k": "s3cret-token"}},
		List:   []inner{{Why: "ok s3cret-token"}},
		Detail: json.RawMessage(`{"e":"s3cret-token"}`), Bin: []byte("s3cret-token"), N: 7, private: "s3cret-token"}
	set.RedactValue(&d)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cret-token") || string(d.Bin) != "s3cret-token" {
		t.Errorf("%s: want the secret nowhere but in Bin (binary, left alone)", b)
	}
	if d.N != 7 || d.Any["n"] != 3.5 || d.Any["***"] != 1 || d.private != "s3cret-token" {
		t.Errorf("%+v: numbers and unexported fields must stay", d)
	}
}

// TestIsSecretKey: credential names, whatever their case and separators,
// and only those.
func TestIsSecretKey(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "proxy-authorization": true, "Cookie": true, "X-Auth-Token": true,
		"x-api-key": true, "X-ApiKey": true, "api_key": true, "password": true, "passcode": true,
		"access_token": true, "client_secret": true, "Origin": false, "X-Team": false, "user": false, "name": false,
	} {
		if got := IsSecretKey(name); got != want {
			t.Errorf("IsSecretKey(%q) = %v, want %v", name, got, want)
		}
	}
}
