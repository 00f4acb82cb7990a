package pmdeflate

import (
	"bytes"
	stdflate "compress/flate"
	"io"
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	kflate "github.com/klauspost/compress/flate"

	"github.com/wsplan/wsplan/internal/payload"
)

// benchModes are the parameter sets the figures are measured for.
var benchModes = []struct {
	name string
	p    Params
}{
	{"no_context_takeover", Params{ClientNoContextTakeover: true, ServerNoContextTakeover: true}},
	{"context_takeover", Params{}},
	{"context_takeover_10bit", Params{ClientMaxWindowBits: 10, ServerMaxWindowBits: 10}},
}

// cpuClock measures the process's CPU time (user + system), a steadier
// figure than wall time on a machine shared with other work.
type cpuClock struct{ start int64 }

func cpuNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func startCPU() cpuClock { return cpuClock{cpuNow()} }

// report adds the CPU nanoseconds per operation to b's results.
func (c cpuClock) report(b *testing.B, ops int) {
	b.ReportMetric(float64(cpuNow()-c.start)/float64(ops), "cpu-ns/op")
}

// BenchmarkMessage is one echo's deflate work on the client: compress a
// 1 KiB text message and inflate the server's compressed echo of it.
// Messages vary (a sliding cut of chat text), as in a chat.
func BenchmarkMessage(b *testing.B) {
	msgs := messages(b, 64, 1024)
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			wire := serverStream(b, msgs, windowBits(m.p.ServerMaxWindowBits), !m.p.ServerNoContextTakeover)
			var d Deflater
			var f Inflater
			var c Compressor
			var dc Decompressor
			c.Init(&d, m.p)
			dc.Init(&f, m.p, 1<<20)
			cbuf := make([]byte, 0, 2048)
			dbuf := make([]byte, 0, 2048)
			sent := 0
			i := 0
			step := func() {
				cbuf = c.Compress(cbuf[:0], msgs[i%len(msgs)])
				sent += len(cbuf)
				var err error
				if dbuf, err = dc.Decompress(dbuf[:0], wire[i%len(wire)]); err != nil {
					b.Fatal(err)
				}
				i++
				if i%len(wire) == 0 {
					dc.hist = dc.hist[:0] // the server stream starts over
				}
			}
			for range 2 * len(wire) {
				step() // warm up: the shared writer, histories, buffers
			}
			i, sent = 0, 0
			b.SetBytes(1024)
			b.ReportAllocs()
			clock := startCPU()
			for b.Loop() {
				step()
			}
			clock.report(b, i)
			b.ReportMetric(float64(sent)/float64(i)/1024, "wire/payload")
		})
	}
}

// BenchmarkPrecomputed is the receive side alone, for a client sending a
// pre-computed frame: inflate one 1 KiB echo without context.
func BenchmarkPrecomputed(b *testing.B) {
	msg := messages(b, 1, 1024)[0]
	wire := Precompute(Params{}, msg)
	var f Inflater
	var dc Decompressor
	dc.Init(&f, Params{ServerNoContextTakeover: true}, 1<<20)
	dbuf, _ := dc.Decompress(make([]byte, 0, 2048), wire)
	b.SetBytes(1024)
	b.ReportAllocs()
	clock := startCPU()
	for b.Loop() {
		var err error
		if dbuf, err = dc.Decompress(dbuf[:0], wire); err != nil {
			b.Fatal(err)
		}
	}
	clock.report(b, b.N)
}

// byteReader is the reader both libraries get in BenchmarkLibrary: a
// *bytes.Reader, which each inflater reads without a bufio wrapper.
func byteReader(p []byte) *bytes.Reader {
	return bytes.NewReader(append(append([]byte(nil), p...), inflateTail...))
}

// BenchmarkLibrary compares compress/flate and klauspost/compress/flate at
// level 1 on one 1 KiB chat message without context (the choice of
// library in this package).
func BenchmarkLibrary(b *testing.B) {
	msg := messages(b, 1, 1024)[0]
	wire := Precompute(Params{}, msg)
	out := make([]byte, 2048)
	b.Run("compress/std", func(b *testing.B) {
		var a appender
		w, _ := stdflate.NewWriter(&a, Level)
		b.ReportAllocs()
		clock := startCPU()
		for b.Loop() {
			a.b = a.b[:0]
			w.Reset(&a)
			_, _ = w.Write(msg)
			_ = w.Flush()
		}
		clock.report(b, b.N)
		b.ReportMetric(float64(len(a.b)-len(syncTail)), "wire-bytes")
	})
	b.Run("compress/klauspost", func(b *testing.B) {
		var a appender
		w, _ := kflate.NewWriter(&a, Level)
		b.ReportAllocs()
		clock := startCPU()
		for b.Loop() {
			a.b = a.b[:0]
			w.Reset(&a)
			_, _ = w.Write(msg)
			_ = w.Flush()
		}
		clock.report(b, b.N)
		b.ReportMetric(float64(len(a.b)-len(syncTail)), "wire-bytes")
	})
	b.Run("inflate/std", func(b *testing.B) {
		r := byteReader(wire)
		fr := stdflate.NewReader(r)
		b.ReportAllocs()
		clock := startCPU()
		for b.Loop() {
			_, _ = r.Seek(0, io.SeekStart)
			_ = fr.(stdflate.Resetter).Reset(r, nil)
			if n, _ := io.ReadFull(fr, out[:len(msg)]); n != len(msg) {
				b.Fatal(n)
			}
		}
		clock.report(b, b.N)
	})
	b.Run("inflate/klauspost", func(b *testing.B) {
		r := byteReader(wire)
		fr := kflate.NewReader(r)
		b.ReportAllocs()
		clock := startCPU()
		for b.Loop() {
			_, _ = r.Seek(0, io.SeekStart)
			_ = fr.(kflate.Resetter).Reset(r, nil)
			if n, _ := io.ReadFull(fr, out[:len(msg)]); n != len(msg) {
				b.Fatal(n)
			}
		}
		clock.report(b, b.N)
	})
}

// heapOf returns the heap bytes that make() holds on to, averaged over 20.
func heapOf(make func() any) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	keep := make_n(make, 20)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return (after.HeapAlloc - before.HeapAlloc) / 20
}

func make_n(f func() any, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = f()
	}
	return out
}

// TestFigures logs the memory figures of the package doc (go test -run
// Figures -v): the shared per-loop state, and the per-connection state in
// steady state after 64 different 1 KiB messages each way.
func TestFigures(t *testing.T) {
	msgs := messages(t, 64, 1024)
	t.Logf("shared per loop: Deflater %d B (window 15), %d B (window 10); Inflater %d B",
		heapOf(func() any { var d Deflater; d.deflate(nil, msgs[0], nil, 15); return &d }),
		heapOf(func() any { var d Deflater; d.deflate(nil, msgs[0], nil, 10); return &d }),
		heapOf(func() any {
			var f Inflater
			var dc Decompressor
			dc.Init(&f, Params{ServerNoContextTakeover: true}, 1<<20)
			_, _ = dc.Decompress(nil, Precompute(Params{}, msgs[0]))
			return &f
		}))
	for _, m := range benchModes {
		wire := serverStream(t, msgs, windowBits(m.p.ServerMaxWindowBits), !m.p.ServerNoContextTakeover)
		var d Deflater
		var f Inflater
		var c Compressor
		var dc Decompressor
		c.Init(&d, m.p)
		dc.Init(&f, m.p, 1<<20)
		for i := range msgs {
			c.Compress(nil, msgs[i])
			if _, err := dc.Decompress(nil, wire[i]); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("per connection, %s: Compressor %d B + %d B history, Decompressor %d B + %d B history",
			m.name, unsafe.Sizeof(c), c.HistoryLen(), unsafe.Sizeof(dc), dc.HistoryLen())
	}
}

// TestRatios measures the compression ratio (wire bytes / payload bytes)
// of each payload kind at 1 KiB, each message compressed on its own, and
// checks the bounds the README and issue 15 rely on: text < 0.5, random
// bytes incompressible.
func TestRatios(t *testing.T) {
	src, err := os.ReadFile("deflate.go")
	if err != nil {
		t.Fatal(err)
	}
	ratio := func(b []byte) float64 { return float64(len(Precompute(Params{}, b))) / float64(len(b)) }
	for _, tc := range []struct {
		name     string
		text     bool
		kind     string
		min, max float64
	}{
		{"random binary", false, payload.Random, 1, 1.01},
		{"random text", true, payload.Random, 0.5, 1.01},
		{"text", true, payload.Text, 0.2, 0.5},
		{"file (deflate.go)", true, payload.File, 0, 1},
	} {
		make := payload.Payload
		if tc.text {
			make = payload.TextPayload
		}
		b, err := make(tc.kind, 1024, src)
		if err != nil {
			t.Fatal(err)
		}
		r := ratio(b)
		t.Logf("%-18s %.3f", tc.name, r)
		if r < tc.min || r > tc.max {
			t.Errorf("%s: ratio %.3f, want in [%.2f, %.2f]", tc.name, r, tc.min, tc.max)
		}
	}
}
