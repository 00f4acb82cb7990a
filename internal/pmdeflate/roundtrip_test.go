package pmdeflate

import (
	"bytes"
	stdflate "compress/flate"
	"errors"
	"fmt"
	"io"
	"testing"

	kflate "github.com/klauspost/compress/flate"

	"github.com/wsplan/wsplan/internal/payload"
)

// messages returns count payloads of n bytes of chat text, each different
// (a sliding cut of a longer text), so that context takeover has history
// worth referring to but no message repeats the previous one exactly.
func messages(t testing.TB, count, n int) [][]byte {
	t.Helper()
	text, err := payload.Payload(payload.Text, n*count+n, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, count)
	for i := range out {
		out[i] = text[i*n/2 : i*n/2+n]
	}
	return out
}

// stdInflate inflates one message payload with the standard library,
// primed with dict: an implementation independent of the one under test.
// A match reaching before dict is an error there.
func stdInflate(payload, dict []byte) ([]byte, error) {
	in := append(append([]byte(nil), payload...), inflateTail...)
	return io.ReadAll(stdflate.NewReaderDict(bytes.NewReader(in), dict))
}

// TestCompressRoundTrip compresses messages as a client would and inflates
// them as a server would: with context takeover, every message is
// inflated with exactly the history the negotiated window allows, so a
// match reaching further back fails.
func TestCompressRoundTrip(t *testing.T) {
	msgs := messages(t, 40, 1500)
	msgs = append(msgs, nil, []byte("x"), bytes.Repeat([]byte("ab"), 40000))
	for _, p := range []Params{
		{ClientNoContextTakeover: true},
		{},
		{ClientMaxWindowBits: 9},
		{ClientMaxWindowBits: 12, ClientNoContextTakeover: true},
	} {
		t.Run(p.String(), func(t *testing.T) {
			var d Deflater
			var c Compressor
			c.Init(&d, p)
			var stream []byte // everything sent so far, uncompressed
			var wire, plain int
			for i, m := range msgs {
				out := c.Compress(nil, m)
				var dict []byte
				if !p.ClientNoContextTakeover {
					dict = stream[max(0, len(stream)-(1<<windowBits(p.ClientMaxWindowBits))):]
				}
				got, err := stdInflate(out, dict)
				if err != nil || !bytes.Equal(got, m) {
					t.Fatalf("message %d (%d bytes): inflated %d bytes, err %v", i, len(m), len(got), err)
				}
				stream = append(stream, m...)
				wire += len(out)
				plain += len(m)
			}
			if !p.ClientNoContextTakeover && c.HistoryLen() > MaxCompressHistory {
				t.Errorf("history %d bytes, want <= %d", c.HistoryLen(), MaxCompressHistory)
			}
			t.Logf("%d -> %d bytes", plain, wire)
		})
	}
}

func TestEmptyMessage(t *testing.T) {
	// RFC 7692 §7.2.3.6: an empty message compresses to a single 0x00.
	if got := Precompute(Params{}, nil); !bytes.Equal(got, []byte{0}) {
		t.Errorf("empty message compressed to %x, want 00", got)
	}
	var f Inflater
	var d Decompressor
	d.Init(&f, Params{}, 10)
	if got, err := d.Decompress(nil, []byte{0}); err != nil || len(got) != 0 {
		t.Errorf("inflating 00: %q, %v", got, err)
	}
}

// serverStream compresses msgs as a server with the given window would:
// one deflate stream, sync-flushed after each message (tail removed), or
// restarted per message without context takeover.
func serverStream(t testing.TB, msgs [][]byte, bits int, takeover bool) [][]byte {
	t.Helper()
	var a appender
	w, err := kflate.NewWriterWindow(&a, 1<<bits)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		a.b = nil
		if !takeover {
			w.Reset(&a)
		}
		if _, err := w.Write(m); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		out[i] = bytes.TrimSuffix(a.b, syncTail)
	}
	return out
}

func TestDecompressRoundTrip(t *testing.T) {
	msgs := messages(t, 60, 1024)
	for _, tc := range []struct {
		p    Params
		bits int
	}{
		{Params{ServerNoContextTakeover: true}, 15},
		{Params{}, 15},
		{Params{ServerMaxWindowBits: 10}, 10},
		{Params{ServerMaxWindowBits: 8}, 8},
	} {
		t.Run(tc.p.String(), func(t *testing.T) {
			wire := serverStream(t, msgs, tc.bits, !tc.p.ServerNoContextTakeover)
			var f Inflater
			var d Decompressor
			d.Init(&f, tc.p, 1<<20)
			buf := make([]byte, 0, 64)
			for i, w := range wire {
				var err error
				buf, err = d.Decompress(buf[:0], w)
				if err != nil || !bytes.Equal(buf, msgs[i]) {
					t.Fatalf("message %d: %d bytes, err %v", i, len(buf), err)
				}
			}
			if want := 0; tc.p.ServerNoContextTakeover && d.HistoryLen() != want {
				t.Errorf("history %d bytes without context takeover", d.HistoryLen())
			}
			if tc.p.ServerMaxWindowBits != 0 && d.HistoryLen() > 1<<tc.bits {
				t.Errorf("history %d bytes, window %d", d.HistoryLen(), 1<<tc.bits)
			}
		})
	}
}

func TestDecompressErrors(t *testing.T) {
	big := Precompute(Params{}, bytes.Repeat([]byte("a"), 1000))
	var f Inflater
	var d Decompressor
	d.Init(&f, Params{}, 999)
	out, err := d.Decompress([]byte("keep"), big)
	if !errors.Is(err, ErrTooLarge) || string(out) != "keep" {
		t.Errorf("1000 bytes with limit 999: %q, %v", out, err)
	}
	if err.Error() != "inflated message exceeds the limit (999 bytes)" {
		t.Errorf("error text %q", err)
	}
	d.Init(&f, Params{}, 1000)
	if out, err := d.Decompress(nil, big); err != nil || len(out) != 1000 {
		t.Errorf("1000 bytes with limit 1000: %d, %v", len(out), err)
	}
	for _, bad := range [][]byte{{}, {0xff, 0xff, 0xff}, {0x07}} {
		if _, err := d.Decompress(nil, bad); err == nil {
			t.Errorf("%x inflated without error", bad)
		}
	}
}

// TestAllocs proves the steady state allocates nothing per message, for
// each context takeover setting, once buffers and histories have grown.
func TestAllocs(t *testing.T) {
	msgs := messages(t, 8, 1024)
	for _, p := range []Params{
		{ClientNoContextTakeover: true, ServerNoContextTakeover: true},
		{},
		{ClientMaxWindowBits: 10, ServerMaxWindowBits: 10},
	} {
		t.Run(p.String(), func(t *testing.T) {
			var d Deflater
			var f Inflater
			var c Compressor
			var dc Decompressor
			c.Init(&d, p)
			dc.Init(&f, p, 1<<20)
			// The server side: a continuous stream when it takes over context.
			wire := serverStream(t, append(append([][]byte(nil), msgs...), msgs...), windowBits(p.ServerMaxWindowBits), !p.ServerNoContextTakeover)
			cbuf := make([]byte, 0, 2048)
			dbuf := make([]byte, 0, 2048)
			i := 0
			step := func() {
				cbuf = c.Compress(cbuf[:0], msgs[i%len(msgs)])
				var err error
				if dbuf, err = dc.Decompress(dbuf[:0], wire[i%len(wire)]); err != nil {
					t.Fatal(err)
				}
				i++
			}
			for range len(wire) {
				step() // warm up: writers, histories, buffers
			}
			if n := testing.AllocsPerRun(100, step); n != 0 {
				t.Errorf("%v allocations per message", n)
			}
		})
	}
}

func ExampleCompressor() {
	// One Deflater per event loop, one Compressor per connection.
	var loop Deflater
	p, err := Accept("permessage-deflate; client_no_context_takeover", Params{ClientNoContextTakeover: true})
	if err != nil {
		panic(err)
	}
	var c Compressor
	c.Init(&loop, p)
	msg := bytes.Repeat([]byte("hello, hello, hello. "), 20)
	out := c.Compress(nil, msg)
	fmt.Println(len(msg), "->", len(out), "bytes;", p)
	// Output: 420 -> 20 bytes; permessage-deflate; client_no_context_takeover; server_max_window_bits=15; client_max_window_bits=15
}

// TestFeed inflates messages handed over in pieces of every size, from
// two connections interleaved on one Inflater, and checks that the pieces'
// buffers go back to the Inflater and that the steady state allocates
// nothing.
func TestFeed(t *testing.T) {
	msgs := messages(t, 16, 3000)
	p := Params{}
	wire := serverStream(t, msgs, 15, true)
	var f Inflater
	var a, b Decompressor
	a.Init(&f, p, 1<<20)
	b.Init(&f, p, 1<<20)
	for _, piece := range []int{1, 7, 100, 1000, 1 << 20} {
		a.Init(&f, p, 1<<20)
		b.Init(&f, p, 1<<20)
		for i, w := range wire {
			var outA, outB []byte
			for off := 0; off < len(w); off += piece {
				chunk := w[off:min(off+piece, len(w))]
				end := off+piece >= len(w)
				var err error
				if outA, err = a.Feed(outA, chunk, end); err != nil {
					t.Fatal(err)
				}
				if outB, err = b.Feed(outB, chunk, end); err != nil {
					t.Fatal(err)
				}
				if !end && (len(outA) != 0 || len(outB) != 0) {
					t.Fatal("output before the end")
				}
			}
			if !bytes.Equal(outA, msgs[i]) || !bytes.Equal(outB, msgs[i]) {
				t.Fatalf("piece %d, message %d differs", piece, i)
			}
		}
		if a.pending != nil || b.pending != nil {
			t.Fatal("a buffer still held after the message ended")
		}
	}
	if len(f.free) != 2 {
		t.Errorf("%d buffers in the pool, want 2 (one per connection that was mid-message)", len(f.free))
	}
	// Steady state: same message, no context, in 3 pieces.
	var c Decompressor
	c.Init(&f, Params{ServerNoContextTakeover: true}, 1<<20)
	one := Precompute(Params{}, msgs[0])
	out := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() {
		out = out[:0]
		out, _ = c.Feed(out, one[:10], false)
		out, _ = c.Feed(out, one[10:20], false)
		out, _ = c.Feed(out, one[20:], true)
	}); n != 0 || !bytes.Equal(out, msgs[0]) {
		t.Errorf("%v allocations per message in pieces (output equal: %v)", n, bytes.Equal(out, msgs[0]))
	}
	var small Decompressor
	small.Init(&f, p, 10)
	if _, err := small.Feed(nil, make([]byte, 100), false); !errors.Is(err, ErrTooLarge) || small.pending != nil {
		t.Errorf("100 compressed bytes with limit 10: %v", err)
	}
}
