package client

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Refusals. A server that refuses a connection on purpose will refuse it
// again: an HTTP 401 or 403 answer to the upgrade, an MQTT CONNACK "not
// authorized" or "bad user name or password", a STOMP ERROR frame
// answering CONNECT, a graphql-ws close 4401 or 4403 (or mercurius'
// connection_error), a Socket.IO CONNECT_ERROR. Such an attempt is not
// retried, whatever the phase's retries: a retry would only double the
// server's work and the failures counted. Transient failures (refused,
// reset, timed out, 5xx) are retried as before. A refusal's reason keeps
// the server's own words (serverWords); the live metrics' reason label
// stays one of its fixed classes (connectReasonOf).

// maxWords caps the server's words in a reason, in bytes.
const maxWords = 200

// refuse marks the attempt of c, in its handshake or greeting, as refused
// by the server: it is not retried. It returns r, the reason the attempt
// fails with, so that a greeting reads `return false, refuse(c, r)`.
func refuse(c *conn, r Reason) Reason {
	if c.state < stOpen && c.ext != nil {
		c.ext.refused = true
	}
	return r
}

// refusedStatus reports whether an upgrade answered with HTTP status code
// is a refusal: 401 Unauthorized, 403 Forbidden.
func refusedStatus(code int) bool { return code == 401 || code == 403 }

// serverWords is text a server sent (a close frame's reason, an error's
// message) as a reason shows it: verbatim, but on one line — each run of
// spaces and control characters (newlines, tabs, …) folded into one
// space, the ends trimmed, invalid UTF-8 replaced — and at most maxWords
// bytes, cut at a character's start and marked with "…".
func serverWords(b []byte) string {
	out := make([]byte, 0, min(len(b), maxWords))
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
		if len(out)+size > maxWords {
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

// jsonWords is the words of a JSON value a server sent as its reason:
// a string's text (unquoted, unescaped), the message of an object (or of
// an array's first object: GraphQL's errors), else the value as sent;
// through serverWords.
func jsonWords(v []byte) string {
	j := gjson.ParseBytes(bytes.TrimSpace(v))
	if j.IsArray() {
		if first := j.Get("0"); first.IsObject() {
			j = first
		}
	}
	switch {
	case j.Type == gjson.String:
		return serverWords([]byte(j.String()))
	case j.IsObject():
		if m := j.Get("message"); m.Type == gjson.String {
			return serverWords([]byte(m.String()))
		}
	}
	return serverWords(v)
}
