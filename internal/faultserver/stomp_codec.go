package faultserver

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// STOMP frames as the server reads and writes them: COMMAND, header
// lines, a blank line, the body (content-length bytes when given, else up
// to the NUL), NUL. End-of-lines may be CRLF; lone EOLs between frames
// are heart-beats.

// stompFrame is a frame as read; headers keep the first of repeated
// names (STOMP 1.2), unescaped.
type stompFrame struct {
	cmd     string
	headers map[string]string
	body    []byte
}

var errSTOMPMalformed = errors.New("stomp: malformed frame")

// stompMaxFrame bounds a frame the server reads.
const stompMaxFrame = 1 << 20

// stompParse reads the frame at the start of b after any heart-beats: n
// is how many bytes it took (heart-beats included); f is nil when b
// holds no whole frame (n then counts the heart-beats only).
func stompParse(b []byte) (f *stompFrame, n int, err error) {
	for n < len(b) && (b[n] == '\n' || b[n] == '\r') {
		n++
	}
	rest := b[n:]
	if len(rest) == 0 {
		return nil, n, nil
	}
	end := bytes.Index(rest, []byte("\n\n"))
	endCR := bytes.Index(rest, []byte("\r\n\r\n"))
	hdrLen, sep := end, 2
	if endCR >= 0 && (end < 0 || endCR < end) {
		hdrLen, sep = endCR, 4
	}
	if hdrLen < 0 {
		if len(rest) > stompMaxFrame {
			return nil, n, errSTOMPMalformed
		}
		return nil, n, nil
	}
	lines := strings.Split(strings.ReplaceAll(string(rest[:hdrLen]), "\r\n", "\n"), "\n")
	f = &stompFrame{cmd: lines[0], headers: map[string]string{}}
	if f.cmd == "" {
		return nil, n, errSTOMPMalformed
	}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return nil, n, errSTOMPMalformed
		}
		if k = stompUnescape(k); f.headers[k] == "" {
			f.headers[k] = stompUnescape(v)
		}
	}
	body := rest[hdrLen+sep:]
	size := bytes.IndexByte(body, 0)
	if cl, ok := f.headers["content-length"]; ok {
		c, err := strconv.Atoi(cl)
		if err != nil || c < 0 || c > stompMaxFrame {
			return nil, n, errSTOMPMalformed
		}
		if len(body) < c+1 {
			return nil, n, nil
		}
		if body[c] != 0 {
			return nil, n, errSTOMPMalformed
		}
		size = c
	}
	if size < 0 {
		if len(rest) > stompMaxFrame {
			return nil, n, errSTOMPMalformed
		}
		return nil, n, nil
	}
	f.body = body[:size]
	return f, n + hdrLen + sep + size + 1, nil
}

// stompUnescape undoes STOMP 1.2's header escapes (\\, \n, \r, \c); an
// undefined one stays as it is.
func stompUnescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\r`, "\r", `\c`, ":").Replace(s)
}

// stompEscape escapes a header value.
func stompEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`, ":", `\c`).Replace(s)
}

// stompAppend appends a frame: command, headers (name, value pairs),
// body with its content-length when body is not nil.
func stompAppend(dst []byte, cmd string, body []byte, headers ...string) []byte {
	dst = append(append(dst, cmd...), '\n')
	for i := 0; i+1 < len(headers); i += 2 {
		dst = append(append(append(append(dst, headers[i]...), ':'), stompEscape(headers[i+1])...), '\n')
	}
	if body != nil {
		dst = append(append(append(dst, "content-length:"...), strconv.Itoa(len(body))...), '\n')
	}
	dst = append(append(dst, '\n'), body...)
	return append(dst, 0)
}
