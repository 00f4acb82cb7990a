package pmdeflate

import (
	"errors"
	"testing"
)

// FuzzDecompress feeds arbitrary payloads to a Decompressor with context
// takeover (the history carries over from one input to the next within a
// run): it must never panic, and never return more than its limit.
func FuzzDecompress(f *testing.F) {
	for _, seed := range [][]byte{
		Precompute(Params{}, []byte("hello hello hello")),
		Precompute(Params{}, make([]byte, 5000)),
		{0x00}, {}, {0xff}, {0x01, 0x00, 0x00, 0xff, 0xff}, {0x03, 0x00},
	} {
		f.Add(seed)
	}
	const limit = 4096
	var in Inflater
	var d Decompressor
	d.Init(&in, Params{ServerMaxWindowBits: 10}, limit)
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := d.Decompress([]byte("pre"), payload)
		if string(out[:3]) != "pre" {
			t.Fatalf("dst prefix overwritten: %q", out[:3])
		}
		if len(out)-3 > limit {
			t.Fatalf("%d bytes out, limit %d", len(out)-3, limit)
		}
		if err != nil && len(out) != 3 {
			t.Fatalf("error %v with %d bytes appended", err, len(out)-3)
		}
		if errors.Is(err, ErrTooLarge) {
			d.Init(&in, Params{ServerMaxWindowBits: 10}, limit) // as a client would fail the connection
		}
		if d.HistoryLen() > 1<<10 {
			t.Fatalf("history %d bytes, window 1024", d.HistoryLen())
		}
	})
}
