package har

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// What Generate infers from a recorded conversation, message by message:
//
//   - an id: a field of a sent JSON message whose key names an id (id,
//     seq, ref, request_id, …, idKeys) and whose value the next reply
//     carries at the same path. The reply's expect gets `correlate:` that
//     path; a whole-number id is written {{.seq}} (the user's sends so
//     far: 1, 2, … as a page numbers its requests), a string ending in
//     digits keeps its prefix ("req-{{.seq}}"), any other string stays;
//   - a captured value: a string (at least minCapture bytes) a reply
//     brought that a later send carries back, which the browser had not
//     sent before: the reply's expect captures it, the send writes
//     {{json .name}};
//   - a secret: a sent string whose key names a credential (token,
//     password, session, api_key, …, secretKey) or whose value is a JWT or
//     "Bearer …": written ${env:WSPLAN_HAR_KEY}, as are the upgrade's
//     Cookie and Authorization headers and its secret query parameters;
//   - what a reply is: its top-level type, op, event, … fields
//     (kindKeys), which its expect must match;
//   - a pause: the gap between a send and the message before it.

// Bounds of the inference.
const (
	// maxDepth and maxLeaves bound how much of a JSON message is read.
	maxDepth  = 16
	maxLeaves = 1000
	// minCapture is the shortest value taken as one the server gave.
	minCapture = 6
	// thinkStep rounds pauses; shorter ones are left out. MaxThink caps
	// them.
	thinkStep = 10 * time.Millisecond
	// MaxThink is the longest pause Generate writes: a longer recorded
	// gap (the person at the browser away) is cut to it, and says so.
	MaxThink = 10 * time.Second
)

// leaf is a scalar of a JSON message.
type leaf struct {
	path string // $.a.b[0]; "" when a key on the way cannot be written as a path
	key  string // its object key ("" in an array)
	raw  string // as written
	typ  gjson.Type
	str  string // a string's text
	at   int    // byte offset of raw in the message
}

// leaves returns the scalars of a JSON document, in document order.
func leaves(doc string) []leaf {
	var out []leaf
	walk(gjson.Result{Type: gjson.JSON, Raw: doc}, "$", "", 0, &out)
	return out
}

func walk(r gjson.Result, path, key string, depth int, out *[]leaf) {
	if len(*out) >= maxLeaves {
		return
	}
	if r.Type != gjson.JSON {
		*out = append(*out, leaf{path: path, key: key, raw: r.Raw, typ: r.Type, str: r.Str, at: r.Index})
		return
	}
	if depth >= maxDepth {
		return
	}
	r.ForEach(func(k, v gjson.Result) bool {
		p, name := "", ""
		switch {
		case k.Type == gjson.String:
			name = k.Str
			if kp := keyPath(k.Str); path != "" && kp != "" {
				p = path + kp
			}
		case path != "":
			p = path + "[" + strconv.Itoa(int(k.Num)) + "]"
		}
		walk(v, p, name, depth+1, out)
		return len(*out) < maxLeaves
	})
}

// keyPath writes one key of a path: .key, ["a.b"] for a key with a dot,
// "" (unwritable) for one the path syntax cannot hold.
func keyPath(k string) string {
	if k == "" || strings.ContainsAny(k, `[]'"\`) || strings.TrimSpace(k) != k {
		return ""
	}
	if strings.Contains(k, ".") {
		return `["` + k + `"]`
	}
	return "." + k
}

// idKeys are the keys whose values are request ids, normalised (lower
// case, - as _).
var idKeys = map[string]bool{
	"id": true, "_id": true, "seq": true, "sequence": true, "ref": true, "cid": true, "rid": true, "mid": true,
	"reqid": true, "req_id": true, "requestid": true, "request_id": true, "correlationid": true, "correlation_id": true,
	"msgid": true, "msg_id": true, "messageid": true, "message_id": true, "callid": true, "call_id": true,
	"nonce": true, "tag": true, "txid": true, "transactionid": true, "transaction_id": true,
}

func isIDKey(k string) bool {
	return idKeys[strings.ReplaceAll(strings.ToLower(k), "-", "_")]
}

// kindKeys are the top-level keys that say what a message is, in order of
// preference.
var kindKeys = []string{"type", "op", "event", "action", "method", "kind", "cmd", "command",
	"msg_type", "msgType", "messageType", "message_type", "t", "e", "status", "channel", "topic"}

// secretKey matches keys whose values are credentials.
var secretKey = regexp.MustCompile(`(?i)(token|secret|passw|pwd|auth|api[-_]?key|apikey|session|cookie|credential|signature|jwt|bearer|access[-_]?key|private[-_]?key|^sid$|^sig$)`)

// secretValue matches values that are credentials whatever their key: a
// JWT, or an Authorization scheme and its credentials.
var secretValue = regexp.MustCompile(`^(eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*|(?i:bearer|basic|token) [!-~]{8,})$`)

// isSecret reports whether a string value under key is a credential.
func isSecret(key, value string) bool {
	return value != "" && (secretKey.MatchString(key) || secretValue.MatchString(value))
}

// seqTemplate returns how a sent id is written so that each request has
// its own: {{.seq}} for a whole number, a string's prefix and {{.seq}} for
// a string ending in digits; ok is false when it stays as recorded.
func seqTemplate(l *leaf) (string, bool) {
	switch l.typ {
	case gjson.Number:
		if _, err := strconv.ParseInt(l.raw, 10, 64); err == nil {
			return "{{.seq}}", true
		}
	case gjson.String:
		s := l.str
		i := len(s)
		for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
			i--
		}
		if i < len(s) && l.raw == `"`+s+`"` && !strings.Contains(s, "{{") && !strings.Contains(s, "${") {
			return `"` + s[:i] + `{{.seq}}"`, true
		}
	}
	return "", false
}

// captureName turns a key into a capture's name: lower-case letters,
// digits and _, not a template field.
func captureName(key string) string {
	n := ident(key)
	if n == "" {
		n = "value"
	}
	return n
}

// ident turns s into a lower-case name of letters, digits and _, starting
// with a letter or _ ("" when nothing is left).
func ident(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "_"):
			b.WriteByte('_')
		}
	}
	n := strings.TrimSuffix(b.String(), "_")
	if n != "" && n[0] >= '0' && n[0] <= '9' {
		n = "_" + n
	}
	if len(n) > 40 {
		n = strings.TrimSuffix(n[:40], "_")
	}
	return n
}

// roundThink rounds a recorded gap to a pause: 0 when under thinkStep,
// at most MaxThink (capped is true then).
func roundThink(gap time.Duration) (d time.Duration, capped bool) {
	if gap > MaxThink {
		return MaxThink, true
	}
	return gap.Round(thinkStep), false
}
