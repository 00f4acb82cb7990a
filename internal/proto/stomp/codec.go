package stomp

import (
	"bytes"
	"strconv"
)

// STOMP 1.2 frames on byte slices, for the protocol (stomp.go):
//
//	COMMAND EOL
//	name:value EOL …   (values escaped: \r \n \c \\, but in CONNECT/CONNECTED)
//	EOL
//	body NUL           (content-length bytes when the header is there)
//	EOL …              (optional; a lone EOL between frames is a heart-beat)
//
// EOL is \n or \r\n. The parser points into the message it was given and
// allocates nothing; values that hold escapes are unescaped into a buffer
// the caller owns. Written by hand: go-stomp's frame package reads
// through a blocking bufio.Reader and allocates a Frame and its headers
// per frame, which the event loop cannot use.

// stompFrame is one parsed frame. Its slices point into the message; the
// headers wsplan reads are kept as written (escaped), the first of each
// name winning (STOMP 1.2: repeated headers are ignored).
type stompFrame struct {
	cmd  []byte
	body []byte
	// Headers read, raw.
	destination, receipt, receiptID, message, heartBeat, version []byte
	escaped                                                      bool // a header value holds a backslash
}

// stompParseErr says why bytes are not a frame.
type stompParseErr uint8

const (
	stompOK         stompParseErr = iota
	stompIncomplete               // the message ends inside a frame
	stompBadHeader                // a header line without a colon
	stompBadLength                // content-length is not a number
	stompNoNUL                    // the byte after content-length bytes is not NUL
)

// String is the error as a reason's text.
func (e stompParseErr) String() string {
	return [...]string{"", "an incomplete frame", "a header line without a colon",
		"a content-length that is not a number", "no NUL after content-length bytes"}[e]
}

// stompParse parses the frame at b[off:], after any EOLs before it
// (heart-beats). It returns the offset after the frame and the EOLs
// following it, and found false when nothing but EOLs was left.
func stompParse(b []byte, off int, f *stompFrame) (next int, found bool, e stompParseErr) {
	off = stompSkipEOLs(b, off)
	if off == len(b) {
		return off, false, stompOK
	}
	*f = stompFrame{}
	line, off, ok := stompLine(b, off)
	if !ok {
		return len(b), false, stompIncomplete
	}
	f.cmd = line
	length := -1
	for {
		if line, off, ok = stompLine(b, off); !ok {
			return len(b), false, stompIncomplete
		}
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return len(b), false, stompBadHeader
		}
		v := line[colon+1:]
		switch string(line[:colon]) {
		case "content-length":
			if length >= 0 {
				continue
			}
			n, err := strconv.Atoi(string(v)) // no allocation: the conversion does not escape
			if err != nil || n < 0 {
				return len(b), false, stompBadLength
			}
			length = n
			continue
		case "destination":
			stompFirst(&f.destination, v)
		case "receipt":
			stompFirst(&f.receipt, v)
		case "receipt-id":
			stompFirst(&f.receiptID, v)
		case "message":
			stompFirst(&f.message, v)
		case "heart-beat":
			stompFirst(&f.heartBeat, v)
		case "version":
			stompFirst(&f.version, v)
		default:
			continue
		}
		if bytes.IndexByte(v, '\\') >= 0 {
			f.escaped = true
		}
	}
	if length >= 0 {
		if len(b)-off <= length {
			return len(b), false, stompIncomplete
		}
		if b[off+length] != 0 {
			return len(b), false, stompNoNUL
		}
		f.body = b[off : off+length]
		off += length + 1
	} else {
		nul := bytes.IndexByte(b[off:], 0)
		if nul < 0 {
			return len(b), false, stompIncomplete
		}
		f.body = b[off : off+nul]
		off += nul + 1
	}
	return stompSkipEOLs(b, off), true, stompOK
}

// stompFirst keeps v in *dst unless a header of that name came earlier.
func stompFirst(dst *[]byte, v []byte) {
	if *dst == nil {
		*dst = v[:len(v):len(v)]
	}
}

// stompSkipEOLs returns the offset of the first byte at or after off that
// is not part of an EOL.
func stompSkipEOLs(b []byte, off int) int {
	for off < len(b) {
		switch {
		case b[off] == '\n':
			off++
		case b[off] == '\r' && off+1 < len(b) && b[off+1] == '\n':
			off += 2
		default:
			return off
		}
	}
	return off
}

// stompLine returns the line at b[off:] without its EOL, and the offset
// after the EOL; ok false when b ends first.
func stompLine(b []byte, off int) (line []byte, next int, ok bool) {
	i := bytes.IndexByte(b[off:], '\n')
	if i < 0 {
		return nil, len(b), false
	}
	line = b[off : off+i]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line[:len(line):len(line)], off + i + 1, true
}

// stompUnescape appends v with its escapes decoded to dst; ok false for an
// escape STOMP 1.2 does not define (a protocol error).
func stompUnescape(dst, v []byte) ([]byte, bool) {
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if ch != '\\' {
			dst = append(dst, ch)
			continue
		}
		if i++; i == len(v) {
			return dst, false
		}
		switch v[i] {
		case 'r':
			dst = append(dst, '\r')
		case 'n':
			dst = append(dst, '\n')
		case 'c':
			dst = append(dst, ':')
		case '\\':
			dst = append(dst, '\\')
		default:
			return dst, false
		}
	}
	return dst, true
}

// stompAppendEscaped appends a header value escaped as STOMP 1.2 says.
func stompAppendEscaped(dst []byte, v []byte) []byte {
	for _, ch := range v {
		switch ch {
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\n':
			dst = append(dst, '\\', 'n')
		case ':':
			dst = append(dst, '\\', 'c')
		case '\\':
			dst = append(dst, '\\', '\\')
		default:
			dst = append(dst, ch)
		}
	}
	return dst
}

// stompAppendHeader appends "name:value\n", the value escaped.
func stompAppendHeader(dst []byte, name string, v []byte) []byte {
	dst = append(dst, name...)
	dst = append(dst, ':')
	dst = stompAppendEscaped(dst, v)
	return append(dst, '\n')
}

// stompAppendBody ends the headers and appends body and the NUL: after a
// content-length header, so that the body may hold NUL bytes.
func stompAppendBody(dst, body []byte) []byte {
	dst = append(dst, "content-length:"...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, '\n', '\n')
	dst = append(dst, body...)
	return append(dst, 0)
}

// stompHeartBeat parses a heart-beat header's "x,y" (milliseconds); zeros
// when absent or malformed (no heart-beats).
func stompHeartBeat(v []byte) (x, y int64) {
	i := bytes.IndexByte(v, ',')
	if i < 0 {
		return 0, 0
	}
	a, err1 := strconv.ParseInt(string(bytes.TrimSpace(v[:i])), 10, 64)
	b, err2 := strconv.ParseInt(string(bytes.TrimSpace(v[i+1:])), 10, 64)
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return 0, 0
	}
	return a, b
}
