// Package secret keeps secrets out of everything wsplan prints or writes.
//
// A secret is a value wsplan uses but never shows: what ${env:NAME} gives,
// a password, a token, an Authorization header (package plan decides which
// values of a plan are secrets; IsSecretKey says which names hold one).
// Forms is the one place that lists how output may spell a secret — raw,
// Go-quoted, JSON-escaped, YAML-quoted, URL-encoded, HTML- and
// XML-escaped, base64 — and a Set replaces every form of each of its
// secrets with Redacted: in a string (Redact), in every string a value
// holds (RedactValue), and in a stream cut anywhere (Writer).
//
// Data flow: plan.Load fills the plan's Set → cmd/wsplan's redacting
// writers (stdout, stderr, every file), the engine (results, server logs,
// file names), the shard group (the shards' replies and logs) and the live
// metrics' labels all read that Set.
package secret

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"html/template"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// Redacted replaces a secret in everything wsplan prints or writes.
const Redacted = "***"

// MinLen is the shortest secret a Set masks: a shorter one would mask
// ordinary words and numbers all over the output. plan.Load refuses a
// shorter ${env:NAME}; a shorter literal password is masked only where
// it is printed by its key.
const MinLen = 4

// minPartial is the shortest base64 run that stands for a secret encoded
// inside a longer text (see partialBase64): shorter runs would match by
// chance in base64 data such as histograms.
const minPartial = 8

// secretWords are what a key, header, query parameter or JSON member name
// holds when its value is a credential (compared lower-case, ignoring -
// and _).
var secretWords = []string{"authorization", "password", "passwd", "passcode", "secret", "token", "apikey", "cookie", "credential"}

// IsSecretKey reports whether a value named name is a credential:
// Authorization and Proxy-Authorization headers, Cookie, X-Auth-Token,
// X-Api-Key, a password, passcode, token or secret parameter.
func IsSecretKey(name string) bool {
	n := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(name))
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Forms returns every spelling of s that output may carry, s first: the
// forms of the encoders wsplan writes with (Go %q and %+q, JSON with and
// without HTML escaping, YAML single- and double-quoted, URL query, path
// and user info, HTML as html/template writes it, XML, a Markdown cell, a
// STOMP header),
// each of those once more inside JSON, Go quotes, HTML and XML (an error
// quoted with %q, then written in a JSON or HTML report), and base64
// (standard and URL alphabets, padded or not, and the run that stands for
// s inside a longer encoded text such as a Basic "user:pass").
func Forms(s string) []string {
	if s == "" {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	first := []string{s, goQuoted(s, false), goQuoted(s, true), jsonEscaped(s, true), jsonEscaped(s, false),
		yamlQuoted(s, yaml.SingleQuotedStyle), yamlQuoted(s, yaml.DoubleQuotedStyle),
		url.QueryEscape(s), url.PathEscape(s), (&url.URL{Path: s}).EscapedPath(), userInfo(s),
		strings.ReplaceAll(s, "|", `\|`), stompEscaped.Replace(s)}
	for _, f := range first {
		add(f)
		add(jsonEscaped(f, true))
		add(goQuoted(f, false))
		add(htmlEscaped(f))
		add(xmlEscaped(f))
	}
	for _, f := range base64Forms(s) {
		add(f)
	}
	return out
}

// stompEscaped is a STOMP 1.2 header value's escaping (a broker's ERROR
// may quote a login in it).
var stompEscaped = strings.NewReplacer(`\`, `\\`, ":", `\c`, "\n", `\n`, "\r", `\r`)

// goQuoted is s as %q (ascii: %+q) writes it, without the quotes.
func goQuoted(s string, ascii bool) string {
	q := strconv.Quote(s)
	if ascii {
		q = strconv.QuoteToASCII(s)
	}
	return q[1 : len(q)-1]
}

// jsonEscaped is s as a JSON string, without the quotes; html: as
// encoding/json writes by default (<, > and & escaped).
func jsonEscaped(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		return s // a string always encodes
	}
	q := strings.TrimSuffix(b.String(), "\n")
	return q[1 : len(q)-1]
}

// yamlQuoted is s as yaml.v3 writes it in style, without the quotes.
func yamlQuoted(s string, style yaml.Style) string {
	b, err := yaml.Marshal(&yaml.Node{Kind: yaml.ScalarNode, Value: s, Style: style})
	if err != nil {
		return s
	}
	q := strings.TrimSuffix(string(b), "\n")
	if len(q) >= 2 && (q[0] == '\'' || q[0] == '"') && q[len(q)-1] == q[0] {
		return q[1 : len(q)-1]
	}
	return q
}

// userInfo is s as a URL's password.
func userInfo(s string) string {
	u := url.URL{User: url.UserPassword("u", s)}
	return strings.TrimSuffix(strings.TrimPrefix(u.String(), "//u:"), "@")
}

// htmlTemplate renders its data as text in HTML, as report's templates do.
var htmlTemplate = template.Must(template.New("").Parse("{{.}}"))

func htmlEscaped(s string) string {
	var b strings.Builder
	if err := htmlTemplate.Execute(&b, s); err != nil {
		return template.HTMLEscapeString(s)
	}
	return b.String()
}

func xmlEscaped(s string) string {
	var b bytes.Buffer
	if err := xml.EscapeText(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}

// base64Forms are s in base64, whole, and the runs of characters that
// encode s alone when it follows k = 0, 1 or 2 other bytes in an encoded
// text (character i of an encoding holds bits 6i to 6i+5 of its input).
func base64Forms(s string) []string {
	var out []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, enc.EncodeToString([]byte(s)))
		raw := enc.WithPadding(base64.NoPadding)
		out = append(out, raw.EncodeToString([]byte(s)))
		for k := range 3 {
			in := append(make([]byte, k), s...)
			e := raw.EncodeToString(in)
			from, to := (8*k+5)/6, 8*len(in)/6
			if to-from >= minPartial {
				out = append(out, e[from:to])
			}
		}
	}
	return out
}

// A Set is a growing set of secrets, safe for concurrent use; the zero
// value is empty and ready, and a nil *Set redacts nothing.
type Set struct {
	mu      sync.RWMutex
	values  []string
	forms   []string // of every value, longest first
	rep     *strings.Replacer
	byFirst map[byte][]string // forms by their first byte, longest first
}

// Add adds secrets; values shorter than MinLen are left out.
func (s *Set) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for _, v := range values {
		if len(v) < MinLen || contains(s.values, v) {
			continue
		}
		s.values = append(s.values, v)
		for _, f := range Forms(v) {
			if !contains(s.forms, f) {
				s.forms = append(s.forms, f)
			}
		}
		changed = true
	}
	if !changed {
		return
	}
	// Longest first: at a position where forms overlap (a secret that
	// contains another), the longest is replaced whole.
	sort.SliceStable(s.forms, func(i, j int) bool { return len(s.forms[i]) > len(s.forms[j]) })
	pairs := make([]string, 0, 2*len(s.forms))
	for _, f := range s.forms {
		pairs = append(pairs, f, Redacted)
	}
	s.rep = strings.NewReplacer(pairs...)
	s.byFirst = map[byte][]string{}
	for _, f := range s.forms {
		s.byFirst[f[0]] = append(s.byFirst[f[0]], f)
	}
}

// AddSet adds the secrets of o.
func (s *Set) AddSet(o *Set) {
	if o != nil {
		s.Add(o.Values()...)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Values are the secrets, in the order they were added.
func (s *Set) Values() []string {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.values...)
}

// Empty reports whether there is nothing to redact.
func (s *Set) Empty() bool {
	if s == nil {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rep == nil
}

// Redact returns text with every form of every secret replaced by
// Redacted.
func (s *Set) Redact(text string) string {
	if s == nil {
		return text
	}
	s.mu.RLock()
	rep := s.rep
	s.mu.RUnlock()
	if rep == nil {
		return text
	}
	return rep.Replace(text)
}

// Holds reports whether text holds a form of a secret.
func (s *Set) Holds(text string) bool { return s.Redact(text) != text }

// scan redacts text as Redact does, from the start, up to the first place
// where a form of a secret may begin but text ends before it could be told
// (unless final): it returns the redacted text and the rest, undecided.
// At each place the longest form that matches wins, as in Redact.
func (s *Set) scan(text []byte, final bool) (out, rest []byte) {
	if s == nil {
		return text, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	i := 0
	for i < len(text) {
		t := text[i:]
		n, pending := 0, false
		for _, f := range s.byFirst[t[0]] { // longest first
			switch {
			case len(f) > len(t):
				pending = pending || (!final && bytes.HasPrefix([]byte(f), t))
			case n == 0 && bytes.HasPrefix(t, []byte(f)):
				n = len(f)
			}
		}
		if pending {
			break
		}
		if n > 0 {
			out = append(out, Redacted...)
			i += n
			continue
		}
		out = append(out, text[i])
		i++
	}
	return out, text[i:]
}
