package script

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Path is a compiled JSON path: $.a.b[0] (or a.b[0]; $["a.b"] for a key
// with dots), read with tidwall/gjson in place, without decoding the
// message or allocating.
type Path struct {
	src string // as written
	g   string // gjson's syntax
}

// String returns the path as written.
func (p Path) String() string { return p.src }

// ParsePath compiles a JSON path.
func ParsePath(s string) (Path, error) {
	src := s
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "$")
	var parts []string
	for len(s) > 0 {
		switch {
		case s[0] == '.':
			s = s[1:]
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			if end == 0 {
				return Path{}, fmt.Errorf("json path %q: empty key", src)
			}
			parts = append(parts, escapeKey(s[:end]))
			s = s[end:]
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return Path{}, fmt.Errorf("json path %q: unclosed [", src)
			}
			in := s[1:end]
			if n, err := strconv.Atoi(in); err == nil && n >= 0 {
				parts = append(parts, strconv.Itoa(n))
			} else if k, err := strconv.Unquote(strings.ReplaceAll(in, "'", `"`)); err == nil && k != "" {
				parts = append(parts, escapeKey(k))
			} else {
				return Path{}, fmt.Errorf("json path %q: [%s]: want an index or a quoted key", src, in)
			}
			s = s[end+1:]
		default:
			if len(parts) > 0 {
				return Path{}, fmt.Errorf("json path %q: want . or [ at %q", src, s)
			}
			s = "." + s // a.b: the leading $. left out
		}
	}
	if len(parts) == 0 {
		return Path{}, fmt.Errorf("json path %q: names no field (want e.g. $.id)", src)
	}
	return Path{src: src, g: strings.Join(parts, ".")}, nil
}

// escapeKey escapes gjson's special characters in a key.
func escapeKey(k string) string {
	var b strings.Builder
	for _, r := range k {
		if strings.ContainsRune(`.*?#@|!\=<>%`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Get returns the raw JSON at p in msg (a slice of msg) and whether it is
// there.
func (p Path) Get(msg []byte) (gjson.Result, bool) {
	r := gjson.Get(unsafe.String(unsafe.SliceData(msg), len(msg)), p.g)
	return r, r.Exists()
}

// Text returns the value at p as text, for comparing and capturing: a
// JSON string unquoted (unescaped), anything else as written. It returns
// a slice of msg, except for a string with escapes (rare), which is
// decoded into scratch.
func (p Path) Text(msg []byte, scratch []byte) ([]byte, bool) {
	r, ok := p.Get(msg)
	if !ok {
		return nil, false
	}
	return resultText(r, scratch), true
}

// resultText is Text's conversion.
func resultText(r gjson.Result, scratch []byte) []byte {
	raw := unsafe.Slice(unsafe.StringData(r.Raw), len(r.Raw))
	if r.Type != gjson.String {
		return raw
	}
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	return append(scratch[:0], r.Str...)
}

// Writes reports whether the JSON document doc has a value at p.
func (p Path) Writes(doc []byte) bool {
	_, ok := p.Get(doc)
	return ok
}
