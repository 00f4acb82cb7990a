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

// FuzzAccept: any response header either fails or gives parameters in
// range that read back the same from their own String form.
func FuzzAccept(f *testing.F) {
	for _, h := range []string{
		"permessage-deflate",
		"permessage-deflate; server_no_context_takeover; client_no_context_takeover",
		"permessage-deflate; server_max_window_bits=12; client_max_window_bits=12",
		`permessage-deflate; server_max_window_bits="9"`,
		"permessage-deflate, x", "", ";;", "permessage-deflate; client_max_window_bits=",
	} {
		f.Add(h, false, 0, 0)
	}
	f.Fuzz(func(t *testing.T, header string, noCtx bool, sBits, cBits int) {
		offered := Params{ServerNoContextTakeover: noCtx, ServerMaxWindowBits: sBits, ClientMaxWindowBits: cBits}
		if len(offered.Validate()) != 0 {
			return
		}
		p, err := Accept(header, offered)
		if err != nil {
			return
		}
		for _, b := range []int{p.ServerMaxWindowBits, p.ClientMaxWindowBits} {
			if b < MinWindowBits || b > MaxWindowBits {
				t.Fatalf("%q: window bits %d", header, b)
			}
		}
		again, err := Accept(p.String(), offered)
		if err != nil || again != p {
			t.Fatalf("%q gave %+v; its String %q gave %+v, %v", header, p, p.String(), again, err)
		}
	})
}
