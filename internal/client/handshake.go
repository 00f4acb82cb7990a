package client

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/wsplan/wsplan/internal/pmdeflate"
)

// wsGUID is the RFC 6455 §1.3 constant appended to the key.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

const (
	// keyLen is the length of a base64 Sec-WebSocket-Key (16 random bytes).
	keyLen = 24
	// maxResponse bounds the upgrade response, headers included.
	maxResponse = 8 << 10
)

// badStatus starts the failure reason of an upgrade answered with another
// status than 101: "bad status 503".
const badStatus = "bad status "

// Handshake failure reasons (Errors keys).
var (
	errNoStatus       = errors.New("bad status line")
	errNoUpgrade      = errors.New("missing upgrade: websocket")
	errNoConnection   = errors.New("missing connection: upgrade")
	errBadAccept      = errors.New("bad accept")
	errExtension      = errors.New("unrequested extension")
	errResponseTooBig = errors.New("response too large")
	errSubprotocol    = errors.New(string(ReasonBadSubprotocol))
)

// negotiated is what a server's upgrade response agreed to.
type negotiated struct {
	subprotocol int              // index into the offered subprotocols; -1 = none
	deflate     bool             // permessage-deflate is on
	params      pmdeflate.Params // its parameters, when deflate
}

// offer is what the request offered that the response must match.
type offer struct {
	subprotocols []string
	compression  *pmdeflate.Params // nil = no extension offered
}

// UpgradeRequest is a pre-built HTTP/1.1 upgrade request for one target;
// each attempt copies it and writes its own key at keyOff.
type UpgradeRequest struct {
	buf    []byte
	keyOff int
}

// requestSpec is what an upgrade request says besides its key.
type requestSpec struct {
	host         string      // Host header
	uri          string      // request target: path and query
	origin       string      // "" = no Origin header
	subprotocols []string    // offered, in order
	extensions   string      // Sec-WebSocket-Extensions value; "" = none
	headers      [][2]string // extra headers, verbatim
}

// newUpgradeRequest builds the request a spec describes. The key comes
// last, so that a request without options reads as it always did.
func newUpgradeRequest(s requestSpec) UpgradeRequest {
	head := "GET " + s.uri + " HTTP/1.1\r\nHost: " + s.host +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
	if s.origin != "" {
		head += "Origin: " + s.origin + "\r\n"
	}
	if len(s.subprotocols) > 0 {
		head += "Sec-WebSocket-Protocol: " + strings.Join(s.subprotocols, ", ") + "\r\n"
	}
	if s.extensions != "" {
		head += "Sec-WebSocket-Extensions: " + s.extensions + "\r\n"
	}
	for _, h := range s.headers {
		head += h[0] + ": " + h[1] + "\r\n"
	}
	head += "Sec-WebSocket-Key: "
	buf := make([]byte, 0, len(head)+keyLen+4)
	buf = append(buf, head...)
	off := len(buf)
	buf = append(buf, bytes.Repeat([]byte{'A'}, keyLen)...)
	buf = append(buf, "\r\n\r\n"...)
	return UpgradeRequest{buf: buf, keyOff: off}
}

// encodeKey writes the base64 form of 16 random bytes into dst.
func encodeKey(dst *[keyLen]byte, raw [16]byte) {
	base64.StdEncoding.Encode(dst[:], raw[:])
}

// acceptFor returns the Sec-WebSocket-Accept value expected for key.
func acceptFor(key []byte) [28]byte {
	h := sha1.New()
	h.Write(key)
	h.Write([]byte(wsGUID))
	var sum [sha1.Size]byte
	var out [28]byte
	base64.StdEncoding.Encode(out[:], h.Sum(sum[:0]))
	return out
}

// responseEnd returns the length of the HTTP response head at the start of
// b (through the blank line), or 0 if b does not hold all of it yet.
func responseEnd(b []byte) int {
	i := bytes.Index(b, []byte("\r\n\r\n"))
	if i < 0 {
		return 0
	}
	return i + 4
}

// responseStatus returns a response head's status code ("HTTP/1.1 101
// Switching Protocols") and the header lines after it; errNoStatus when
// the head starts with no status line.
func responseStatus(head []byte) (int, []byte, error) {
	line, rest, ok := bytes.Cut(head, []byte("\r\n"))
	if !ok {
		return 0, nil, errNoStatus
	}
	_, after, ok := bytes.Cut(line, []byte(" "))
	if !ok || !bytes.HasPrefix(line, []byte("HTTP/")) || len(after) < 3 {
		return 0, nil, errNoStatus
	}
	code, err := strconv.Atoi(string(after[:3]))
	if err != nil {
		return 0, nil, errNoStatus
	}
	return code, rest, nil
}

// checkResponse validates an upgrade response head (as delimited by
// responseEnd) for a request that sent key and offered o, and returns what
// was negotiated. The error text is the failure reason: "bad status 404",
// "bad accept", "subprotocol not offered", "compression asked, server
// declined", ... It never contains what the request sent.
func checkResponse(head, key []byte, o *offer) (negotiated, error) {
	neg := negotiated{subprotocol: -1}
	code, rest, err := responseStatus(head)
	if err != nil {
		return neg, err
	}
	if code != 101 {
		return neg, fmt.Errorf(badStatus+"%d", code)
	}
	var line []byte
	var upgrade, connection, accept, protocol bool
	var ext []byte
	want := acceptFor(key)
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		name = bytes.TrimSpace(name)
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Upgrade")):
			upgrade = bytes.EqualFold(value, []byte("websocket"))
		case bytes.EqualFold(name, []byte("Connection")):
			for tok := range bytes.SplitSeq(value, []byte(",")) {
				if bytes.EqualFold(bytes.TrimSpace(tok), []byte("upgrade")) {
					connection = true
				}
			}
		case bytes.EqualFold(name, []byte("Sec-WebSocket-Accept")):
			accept = bytes.Equal(value, want[:])
		case bytes.EqualFold(name, []byte("Sec-WebSocket-Extensions")):
			if len(value) > 0 {
				if len(ext) > 0 {
					ext = append(ext, ", "...)
				}
				ext = append(ext, value...)
			}
		case bytes.EqualFold(name, []byte("Sec-WebSocket-Protocol")):
			if protocol || len(value) == 0 {
				return neg, errSubprotocol // a second answer, or an empty one
			}
			protocol = true
			for i, sp := range o.subprotocols {
				if string(value) == sp {
					neg.subprotocol = i
				}
			}
			if neg.subprotocol < 0 {
				return neg, errSubprotocol
			}
		}
	}
	switch {
	case !upgrade:
		return neg, errNoUpgrade
	case !connection:
		return neg, errNoConnection
	case !accept:
		return neg, errBadAccept
	}
	if o.compression == nil {
		if len(ext) > 0 {
			return neg, errExtension
		}
		return neg, nil
	}
	p, err := pmdeflate.Accept(string(ext), *o.compression)
	if err != nil {
		return neg, err
	}
	neg.deflate, neg.params = true, p
	return neg, nil
}

// With returns a copy of r with query appended to its request target's
// query (after "?" or "&") and header lines ("Name: value\r\n" each)
// added before its key; r itself is unchanged.
func (r UpgradeRequest) With(query string, headers []byte) UpgradeRequest {
	sp := bytes.IndexByte(r.buf[4:], ' ') + 4 // "GET <target> HTTP/1.1"
	if query != "" {
		sep := "?"
		if bytes.IndexByte(r.buf[4:sp], '?') >= 0 {
			sep = "&"
		}
		query = sep + query
	}
	kl := r.keyOff - len("Sec-WebSocket-Key: ")
	buf := make([]byte, 0, len(r.buf)+len(query)+len(headers))
	buf = append(buf, r.buf[:sp]...)
	buf = append(buf, query...)
	buf = append(buf, r.buf[sp:kl]...)
	buf = append(buf, headers...)
	buf = append(buf, r.buf[kl:]...)
	return UpgradeRequest{buf: buf, keyOff: r.keyOff + len(query) + len(headers)}
}
