package proto

import (
	"bytes"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// MaxWords caps the server's words in a reason, in bytes.
const MaxWords = 200

// Words is text a server sent (a close frame's reason, an error's
// message) as a reason shows it: verbatim, but on one line — each run of
// spaces and control characters (newlines, tabs, …) folded into one
// space, the ends trimmed, invalid UTF-8 replaced — and at most MaxWords
// bytes, cut at a character's start and marked with "…".
func Words(b []byte) string {
	out := make([]byte, 0, min(len(b), MaxWords))
	space, cut := false, false
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		i += n
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = len(out) > 0
			continue
		}
		size := utf8.RuneLen(r) // 3 for utf8.RuneError, an invalid byte's replacement
		if space {
			size++
		}
		if len(out)+size > MaxWords {
			cut = true
			break
		}
		if space {
			out, space = append(out, ' '), false
		}
		out = utf8.AppendRune(out, r)
	}
	if cut {
		out = append(out, "…"...)
	}
	return string(out)
}

// JSONWords is the words of a JSON value a server sent as its reason:
// a string's text (unquoted, unescaped), the message of an object (or of
// an array's first object: GraphQL's errors), else the value as sent;
// through Words.
func JSONWords(v []byte) string {
	j := gjson.ParseBytes(bytes.TrimSpace(v))
	if j.IsArray() {
		if first := j.Get("0"); first.IsObject() {
			j = first
		}
	}
	switch {
	case j.Type == gjson.String:
		return Words([]byte(j.String()))
	case j.IsObject():
		if m := j.Get("message"); m.Type == gjson.String {
			return Words([]byte(m.String()))
		}
	}
	return Words(v)
}

// ClipText is at most n bytes of b, cut at a character's start.
func ClipText(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

// Clip is at most 40 bytes of b, for a reason: on one line, as Words
// shows it (a server's bytes could hold a line break).
func Clip(b []byte) string {
	if len(b) > 40 {
		return Words(ClipText(b, 40)) + "…"
	}
	return Words(b)
}

// maxReasons bounds the reasons Intern keeps: past it, each is a string
// of its own (a server that varies its error text per request costs an
// allocation per error answer, nothing else).
const maxReasons = 1024

var (
	reasonsMu sync.RWMutex
	reasons   = map[string]Reason{}
)

// Intern returns b as a Reason, the same string each time the same bytes
// come: an error answer's code costs no allocation after the first.
func Intern(b []byte) Reason {
	reasonsMu.RLock()
	r, ok := reasons[string(b)]
	reasonsMu.RUnlock()
	if ok {
		return r
	}
	r = Reason(b)
	reasonsMu.Lock()
	if len(reasons) < maxReasons {
		reasons[string(r)] = r
	}
	reasonsMu.Unlock()
	return r
}
