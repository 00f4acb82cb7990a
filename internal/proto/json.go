package proto

import (
	"encoding/base64"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// JSON in place, for the protocols whose messages are JSON (GraphQL over
// WebSocket, JSON-RPC): members read with gjson over the loop's buffer,
// never decoded into values, so a message costs no allocation.

// JSONMembers calls f with each member of the JSON object (or element of
// the array) msg: its key as written, without quotes (escapes kept; nil
// in an array) and its value as a slice of msg. It stops when f returns
// false, and reports whether msg is an object or an array.
func JSONMembers(msg []byte, f func(key, val []byte) bool) bool {
	i := 0
	for i < len(msg) && msg[i] <= ' ' {
		i++
	}
	if i == len(msg) || (msg[i] != '{' && msg[i] != '[') {
		return false
	}
	js := unsafe.String(unsafe.SliceData(msg), len(msg))
	gjson.Parse(js).ForEach(func(k, v gjson.Result) bool {
		var key []byte
		if k.Type == gjson.String && len(k.Raw) >= 2 {
			key = msg[k.Index+1 : k.Index+len(k.Raw)-1]
		}
		return f(key, msg[v.Index:v.Index+len(v.Raw)])
	})
	return true
}

// JSONText is the text of a JSON string value as written (escapes kept;
// quotes dropped), and whether v is a string.
func JSONText(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

// AppendJSONText appends the text of a JSON string's contents t (as
// JSONText returns them) unescaped, on one line: a control character
// becomes a space, a \u escape its character (a lone surrogate U+FFFD).
func AppendJSONText(dst, t []byte) []byte {
	for i := 0; i < len(t); i++ {
		b := t[i]
		switch {
		case b == '\\' && i+1 < len(t):
			i++
			switch t[i] {
			case 'n', 't', 'r', 'b', 'f':
				dst = append(dst, ' ')
			case 'u':
				r := rune(utf8.RuneError)
				if i+4 < len(t) {
					if v, ok := hex4(t[i+1 : i+5]); ok {
						r = v
						i += 4
					}
				}
				switch {
				case r < 0x20:
					r = ' '
				case r >= 0xd800 && r < 0xe000:
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
			default: // \" \\ \/ and what JSON does not define, as it is
				dst = appendTextByte(dst, t[i])
			}
		default:
			dst = appendTextByte(dst, b)
		}
	}
	return dst
}

// appendTextByte appends b, or a space for a control character.
func appendTextByte(dst []byte, b byte) []byte {
	if b < 0x20 || b == 0x7f {
		b = ' '
	}
	return append(dst, b)
}

// hex4 reads four hexadecimal digits.
func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// AppendJSONString appends s as a JSON string, quoted and escaped.
func AppendJSONString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, b := range s {
		switch {
		case b == '"' || b == '\\':
			dst = append(dst, '\\', b)
		case b == '\n':
			dst = append(dst, '\\', 'n')
		case b == '\t':
			dst = append(dst, '\\', 't')
		case b == '\r':
			dst = append(dst, '\\', 'r')
		case b < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&15])
		default:
			dst = append(dst, b)
		}
	}
	return append(dst, '"')
}

// B64 carries the broadcast phase's binary messages in JSON strings:
// standard base64 (its alphabet needs no escape).
var B64 = base64.StdEncoding

// B64Payload decodes a base64 JSON string value (v, with its quotes) into
// scratch; ok false when v is not one.
func B64Payload(v, scratch []byte) ([]byte, bool) {
	t, ok := JSONText(v)
	if !ok {
		return nil, false
	}
	out, err := B64.AppendDecode(scratch[:0], t)
	return out, err == nil
}
