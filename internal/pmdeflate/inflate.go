package pmdeflate

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/flate"
)

// inflateTail is appended to every payload before inflating: the sync
// flush tail RFC 7692 §7.2.2 asks for, then an empty final stored block,
// so that the reader ends with io.EOF instead of asking for more input.
var inflateTail = []byte{0x00, 0x00, 0xff, 0xff, 0x01, 0x00, 0x00, 0xff, 0xff}

// ErrTooLarge is returned by Decompress when a message inflates to more
// than the Decompressor's limit.
var ErrTooLarge = errors.New("inflated message exceeds the limit")

// Inflater is the decompression state that one event loop shares among
// all its connections: a flate reader (about 40 KiB with its 32 KiB
// window) and the buffer a payload is copied into to get its tail. Every
// Decompress starts it afresh, from nothing or from the connection's own
// history. An Inflater is not safe for concurrent use. The zero value is
// ready.
type Inflater struct {
	fr   io.ReadCloser // also a flate.Resetter; made on first use
	src  bytes.Reader  // a concrete *bytes.Reader takes klauspost's fast path
	in   []byte
	free [][]byte // buffers lent to Decompressors for messages in pieces
}

// Decompressor is one connection's receiving half of permessage-deflate.
// With server context takeover it keeps the last 2^server_max_window_bits
// bytes it inflated (32 KiB unless negotiated lower: the server may refer
// that far back); without, it keeps nothing. The zero value is not ready:
// call Init.
type Decompressor struct {
	f        *Inflater
	window   int
	takeover bool
	limit    int
	hist     []byte
	pending  []byte // Feed: the pieces so far, in a buffer lent by f
}

// Init prepares d to inflate messages under negotiated parameters p,
// using the loop's shared Inflater f. A message that inflates to more
// than limit bytes fails with ErrTooLarge; limit must be > 0.
func (d *Decompressor) Init(f *Inflater, p Params, limit int) {
	d.Discard()
	*d = Decompressor{f: f, window: 1 << windowBits(p.ServerMaxWindowBits), takeover: !p.ServerNoContextTakeover, limit: limit}
}

// HistoryLen is the number of history bytes d holds (its state beyond the
// struct itself).
func (d *Decompressor) HistoryLen() int { return cap(d.hist) }

// Decompress appends the inflated form of one compressed message payload
// (all its frames' payloads joined, RSV1 set on the first) to dst and
// returns it. It allocates nothing once dst, the history and the shared
// buffers have room. Corrupt input is an error; so is output beyond the
// limit (ErrTooLarge), found after at most limit+1 bytes were written.
// After an error the connection must be failed: the history no longer
// matches the server's.
func (d *Decompressor) Decompress(dst, payload []byte) ([]byte, error) {
	f := d.f
	f.in = append(append(f.in[:0], payload...), inflateTail...)
	f.src.Reset(f.in)
	var dict []byte
	if d.takeover {
		dict = d.hist
	}
	if f.fr == nil {
		f.fr = flate.NewReader(&f.src)
	}
	// Reset never fails: it only records the reader and copies dict.
	_ = f.fr.(flate.Resetter).Reset(&f.src, dict)
	start := len(dst)
	for {
		if len(dst) == cap(dst) {
			if len(dst)-start > d.limit {
				return dst[:start], fmt.Errorf("%w (%d bytes)", ErrTooLarge, d.limit)
			}
			dst = append(dst, 0)[:len(dst)]
		}
		room := dst[len(dst):cap(dst)]
		if over := start + d.limit + 1 - len(dst); len(room) > over {
			room = room[:over]
		}
		n, err := f.fr.Read(room)
		dst = dst[:len(dst)+n]
		if len(dst)-start > d.limit {
			return dst[:start], fmt.Errorf("%w (%d bytes)", ErrTooLarge, d.limit)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return dst[:start], fmt.Errorf("inflate: %w", err)
		}
	}
	if d.takeover {
		d.hist = slide(d.hist, dst[start:], d.window)
	}
	return dst, nil
}

// Feed takes a compressed message in the pieces it arrives in, as the
// client's frame decoder hands payload bytes out: chunk is the next piece
// (frame boundaries do not matter), end says it completes the message.
// Until the end it returns dst unchanged and keeps a copy of the pieces,
// in a buffer borrowed from the loop's Inflater (so a connection with no
// message in pieces holds none); at the end it inflates the whole message
// into dst like Decompress. A message that arrives in one piece is not
// copied first. Compressed input beyond twice the limit is ErrTooLarge.
func (d *Decompressor) Feed(dst, chunk []byte, end bool) ([]byte, error) {
	if end && d.pending == nil {
		return d.Decompress(dst, chunk)
	}
	if d.pending == nil {
		d.pending = d.f.borrow()
	}
	if len(d.pending)+len(chunk) > 2*d.limit+64 {
		d.Discard()
		return dst, fmt.Errorf("%w (%d bytes), compressed message already longer than twice that", ErrTooLarge, d.limit)
	}
	d.pending = append(d.pending, chunk...)
	if !end {
		return dst, nil
	}
	out, err := d.Decompress(dst, d.pending)
	d.Discard()
	return out, err
}

// Discard drops a message fed in part (the connection is closing) and
// gives its buffer back to the Inflater. Init calls it.
func (d *Decompressor) Discard() {
	if d.pending != nil {
		d.f.free = append(d.f.free, d.pending[:0])
		d.pending = nil
	}
}

// borrow lends out a buffer for a message in pieces.
func (f *Inflater) borrow() []byte {
	if n := len(f.free); n > 0 {
		b := f.free[n-1]
		f.free[n-1] = nil
		f.free = f.free[:n-1]
		return b
	}
	return make([]byte, 0, 4<<10)
}
