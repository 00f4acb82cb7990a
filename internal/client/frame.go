package client

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// WebSocket opcodes (RFC 6455 §5.2).
const (
	opContinuation = 0x0
	OpText         = 0x1
	OpBinary       = 0x2
	OpClose        = 0x8
	OpPing         = 0x9
	opPong         = 0xA
)

const (
	// MaxHeader is the longest frame header: 2 + 8 (length) + 4 (mask key).
	MaxHeader = 14
	// maxControl is the longest control frame payload (RFC 6455 §5.5).
	maxControl = 125
	// maxStash is the most unparsed input a connection ever keeps between
	// reads: an incomplete header, or an incomplete control frame.
	maxStash = MaxHeader + maxControl
	// Rsv1 marks the first frame of a compressed message
	// (pmdeflate.RSV1).
	Rsv1 = 0x40
)

// Protocol errors found in server frames. Their texts become Errors keys
// prefixed with "protocol: ".
var (
	errLength            = errors.New("frame length has the top bit set")
	errRSV               = errors.New("reserved bits set")
	errMasked            = errors.New("masked server frame")
	errOpcode            = errors.New("unknown opcode")
	errFragmentedControl = errors.New("fragmented control frame")
	errControlLength     = errors.New("control frame longer than 125 bytes")
	errContinuation      = errors.New("continuation without a message")
	errInterleaved       = errors.New("new message inside a fragmented message")
)

// frameHeader is a parsed frame header.
type frameHeader struct {
	fin    bool
	rsv    byte // RSV1-3 bits, as in the first byte (0x70 mask)
	op     byte
	masked bool
	key    [4]byte
	length int64
}

// parseFrameHeader parses the frame header at the start of b. It returns the
// header and its length in bytes, or n == 0 when b holds only part of a
// header. It checks only what the header alone can tell (the length's top
// bit); the decoder checks the rest.
func parseFrameHeader(b []byte) (h frameHeader, n int, err error) {
	if len(b) < 2 {
		return h, 0, nil
	}
	h.fin = b[0]&0x80 != 0
	h.rsv = b[0] & 0x70
	h.op = b[0] & 0x0f
	h.masked = b[1]&0x80 != 0
	n = 2
	switch l := b[1] & 0x7f; l {
	case 126:
		if len(b) < 4 {
			return h, 0, nil
		}
		h.length = int64(binary.BigEndian.Uint16(b[2:]))
		n = 4
	case 127:
		if len(b) < 10 {
			return h, 0, nil
		}
		v := binary.BigEndian.Uint64(b[2:])
		if v>>63 != 0 {
			return h, 0, errLength
		}
		h.length = int64(v)
		n = 10
	default:
		h.length = int64(l)
	}
	if h.masked {
		if len(b) < n+4 {
			return h, 0, nil
		}
		copy(h.key[:], b[n:n+4])
		n += 4
	}
	return h, n, nil
}

// Decoder event kinds.
const (
	EventData = iota + 1 // a chunk of the current data message
	evControl            // a complete control frame
)

// Event is one step of a decoded server byte stream.
type Event struct {
	Kind  uint8
	Op    byte   // message opcode (text/binary) for evData, frame opcode for evControl
	End   bool   // evData: this chunk completes the message
	Data  []byte // evData: payload chunk (may be empty); evControl: the payload
	Total int64  // evData: message bytes received so far, this chunk included
	comp  bool   // evData: the message is compressed (permessage-deflate); data and total are as on the wire
}

// decoder turns a server's byte stream into message chunks and control
// frames without buffering payloads: data payloads are handed out in the
// pieces they arrive in, so a connection needs no read buffer of its own.
// Only an incomplete header or control frame must be kept by the caller
// (at most maxStash bytes) and presented again with the next bytes.
//
// The zero value is ready; it is embedded in every connection.
type decoder struct {
	remain int64 // payload bytes left in the current data frame
	total  int64 // payload bytes of the current message so far
	msgOp  byte  // opcode of the message in progress; 0 = none
	fin    bool  // the current data frame ends its message
	// deflate allows RSV1 on a message's first frame: permessage-deflate
	// was negotiated.
	deflate bool
	comp    bool // the message in progress is compressed
}

// next decodes the start of b. n is the number of bytes consumed; n == 0
// (with a nil error) means b holds an incomplete header or control frame:
// keep b and call again with more bytes appended. b must not be empty.
func (d *decoder) next(b []byte) (ev Event, n int, err error) {
	if d.remain == 0 {
		h, hn, err := parseFrameHeader(b)
		if err != nil || hn == 0 {
			return ev, 0, err
		}
		rsv, comp := h.rsv, false
		if rsv == Rsv1 && d.deflate && (h.op == OpText || h.op == OpBinary) {
			rsv, comp = 0, true
		}
		switch {
		case rsv != 0:
			return ev, 0, errRSV
		case h.masked:
			return ev, 0, errMasked
		case h.op >= OpClose:
			if h.op > opPong {
				return ev, 0, errOpcode
			}
			if !h.fin {
				return ev, 0, errFragmentedControl
			}
			if h.length > maxControl {
				return ev, 0, errControlLength
			}
			end := hn + int(h.length)
			if len(b) < end {
				return ev, 0, nil
			}
			return Event{Kind: evControl, Op: h.op, Data: b[hn:end]}, end, nil
		case h.op == opContinuation:
			if d.msgOp == 0 {
				return ev, 0, errContinuation
			}
		case h.op == OpText || h.op == OpBinary:
			if d.msgOp != 0 {
				return ev, 0, errInterleaved
			}
			d.msgOp = h.op
			d.total = 0
			d.comp = comp
		default:
			return ev, 0, errOpcode
		}
		d.fin = h.fin
		d.remain = h.length
		n = hn
		b = b[hn:]
	}
	k := d.remain
	if int64(len(b)) < k {
		k = int64(len(b))
	}
	d.remain -= k
	d.total += k
	ev = Event{Kind: EventData, Op: d.msgOp, Data: b[:k], Total: d.total, comp: d.comp}
	if d.remain == 0 && d.fin {
		ev.End = true
		d.msgOp = 0
	}
	return ev, n + int(k), nil
}

// frameHeaderLen is the length of a masked client frame header for a
// payload of n bytes.
func frameHeaderLen(n int) int {
	switch {
	case n < 126:
		return 2 + 4
	case n < 1<<16:
		return 4 + 4
	default:
		return 10 + 4
	}
}

// AppendClientHeader appends a final, masked frame header for opcode op
// and an n-byte payload, with mask key key.
func AppendClientHeader(dst []byte, op byte, n int, key uint32) []byte {
	dst = append(dst, 0x80|op)
	switch {
	case n < 126:
		dst = append(dst, 0x80|byte(n))
	case n < 1<<16:
		dst = append(dst, 0x80|126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	default:
		dst = append(dst, 0x80|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	return binary.LittleEndian.AppendUint32(dst, key)
}

// MaskCopy writes src masked with key into dst (len(dst) >= len(src)),
// where src starts at byte pos of the payload. The key's byte i, the i-th
// key byte on the wire, is byte(key >> (8*i)): the key is stored in the
// header little-endian.
func MaskCopy(dst, src []byte, key uint32, pos int) {
	k := bits.RotateLeft32(key, -8*(pos&3))
	k64 := uint64(k) | uint64(k)<<32
	n := len(src)
	dst = dst[:n]
	i := 0
	for ; i+32 <= n; i += 32 {
		s := src[i : i+32 : i+32]
		d := dst[i : i+32 : i+32]
		binary.LittleEndian.PutUint64(d[0:], binary.LittleEndian.Uint64(s[0:])^k64)
		binary.LittleEndian.PutUint64(d[8:], binary.LittleEndian.Uint64(s[8:])^k64)
		binary.LittleEndian.PutUint64(d[16:], binary.LittleEndian.Uint64(s[16:])^k64)
		binary.LittleEndian.PutUint64(d[24:], binary.LittleEndian.Uint64(s[24:])^k64)
	}
	for ; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(src[i:])^k64)
	}
	for ; i < n; i++ {
		dst[i] = src[i] ^ byte(k64>>(8*(i&3)))
	}
}
