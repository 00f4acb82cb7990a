package pmdeflate

import (
	"bytes"

	"github.com/klauspost/compress/flate"
)

// Level is the deflate level of every compressor: 1 (BestSpeed), the level
// gorilla, gws and nbio compress at by default.
const Level = flate.BestSpeed

// MaxCompressHistory bounds what a Compressor with context takeover keeps
// of the bytes it sent: the last 4 KiB (or the negotiated client window,
// if smaller). Priming the shared writer with that history costs about as
// much as compressing it again, on every message, so a longer history
// would make each 1 KiB message several times dearer; referring back
// less far than the window is always allowed (RFC 7692 §7.1.2.2 bounds
// the distance, nothing requires using all of it).
const MaxCompressHistory = 4 << 10

// syncTail is what a sync flush ends with; RFC 7692 §7.2.1 strips it from
// every compressed message and §7.2.2 appends it again before inflating.
var syncTail = []byte{0x00, 0x00, 0xff, 0xff}

// Deflater is the compression state that one event loop shares among all
// its connections: a flate writer (about 0.8 MiB, see the package doc) per
// client window size in use. Every Compress starts it afresh, from nothing
// or from the connection's own history, so no connection needs a writer of
// its own. A Deflater is not safe for concurrent use. The zero value is
// ready.
type Deflater struct {
	w   [MaxWindowBits + 1]*flate.Writer // by client window bits; made on first use
	out appender
}

// appender is an io.Writer that appends to b.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// writer returns the writer for a 2^bits window, making it on first use.
func (d *Deflater) writer(bits int) *flate.Writer {
	if w := d.w[bits]; w != nil {
		return w
	}
	var w *flate.Writer
	var err error
	if bits == MaxWindowBits {
		w, err = flate.NewWriter(nil, Level)
	} else {
		// klauspost's windowed writer keeps every match distance within
		// the window, which client_max_window_bits requires.
		w, err = flate.NewWriterWindow(nil, 1<<bits)
	}
	if err != nil {
		// Level 1 and windows of 2^8..2^15 bytes are valid arguments.
		panic("pmdeflate: " + err.Error())
	}
	d.w[bits] = w
	return w
}

// deflate appends msg compressed as one message, with the sync flush tail
// removed, to dst. dict is the history the peer's inflater holds (nil for
// none); matches may reach into it.
func (d *Deflater) deflate(dst, msg, dict []byte, bits int) []byte {
	w := d.writer(bits)
	d.out.b = dst
	// ResetDict(nil) also drops a dictionary a previous message set, which
	// Reset would prime the writer with again.
	w.ResetDict(&d.out, dict)
	// Writes to an appender never fail, so neither does the writer.
	_, _ = w.Write(msg)
	_ = w.Flush()
	out := d.out.b
	d.out.b = nil
	w.ResetDict(nil, nil) // keep no reference to dst or dict
	if !bytes.HasSuffix(out, syncTail) {
		panic("pmdeflate: flush did not end with a sync marker")
	}
	return out[:len(out)-len(syncTail)]
}

// Compressor is one connection's sending half of permessage-deflate. With
// client context takeover it keeps the last bytes it sent (at most
// MaxCompressHistory, never more than the client window), so consecutive
// messages may refer to each other; without, it keeps nothing. The zero
// value is not ready: call Init.
type Compressor struct {
	d        *Deflater
	bits     int
	takeover bool
	hist     []byte
}

// Init prepares c to compress with negotiated parameters p, using the
// loop's shared Deflater d.
func (c *Compressor) Init(d *Deflater, p Params) {
	*c = Compressor{d: d, bits: windowBits(p.ClientMaxWindowBits), takeover: !p.ClientNoContextTakeover}
}

// Compress appends msg, compressed as one message's payload (RFC 7692
// §7.2.1: the sync flush tail removed), to dst and returns it. It
// allocates nothing once dst and the history have room. An empty msg
// compresses to the single byte 0x00.
func (c *Compressor) Compress(dst, msg []byte) []byte {
	if !c.takeover {
		return c.d.deflate(dst, msg, nil, c.bits)
	}
	dst = c.d.deflate(dst, msg, c.hist, c.bits)
	c.hist = slide(c.hist, msg, min(1<<c.bits, MaxCompressHistory))
	return dst
}

// HistoryLen is the number of history bytes c holds (its state beyond the
// struct itself).
func (c *Compressor) HistoryLen() int { return cap(c.hist) }

// slide appends b to hist, keeping only the last max bytes; hist's array
// is reused once it has reached max bytes of capacity.
func slide(hist, b []byte, max int) []byte {
	if len(b) >= max {
		if cap(hist) < max {
			hist = make([]byte, 0, max)
		}
		return append(hist[:0], b[len(b)-max:]...)
	}
	if drop := len(hist) + len(b) - max; drop > 0 {
		n := copy(hist, hist[drop:])
		hist = hist[:n]
	}
	if cap(hist) < max && len(hist)+len(b) > cap(hist) {
		grown := make([]byte, len(hist), min(max, 2*(len(hist)+len(b))))
		copy(grown, hist)
		hist = grown
	}
	return append(hist, b...)
}

// Precompute returns msg compressed as a stand-alone message payload (sync
// flush tail removed), for a client that sends the same message again and
// again from one pre-encoded frame: the caller sets RSV1 in the frame
// header and masks these bytes per send like any payload. The bytes refer
// to nothing before the message, so they are valid whatever the context
// takeover parameters, and they keep within a 2^p.ClientMaxWindowBits
// window. p are the negotiated parameters. It allocates a writer: call it
// once per phase, not per message.
func Precompute(p Params, msg []byte) []byte {
	var d Deflater
	return d.deflate(nil, msg, nil, windowBits(p.ClientMaxWindowBits))
}
