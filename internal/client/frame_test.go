package client

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/wsplan/wsplan/internal/testserver"
)

func TestMaskCopy(t *testing.T) {
	src := make([]byte, 300)
	for i := range src {
		src[i] = byte(i * 7)
	}
	key := uint32(0xa1b2c3d4)
	var kb [4]byte
	binary.LittleEndian.PutUint32(kb[:], key)
	for _, n := range []int{0, 1, 3, 4, 7, 8, 9, 31, 32, 33, 64, 100, 300} {
		for pos := 0; pos < 5; pos++ {
			want := make([]byte, n)
			for i := range want {
				want[i] = src[i] ^ kb[(pos+i)%4]
			}
			got := make([]byte, n)
			MaskCopy(got, src[:n], key, pos)
			if !bytes.Equal(got, want) {
				t.Fatalf("n=%d pos=%d: got %x, want %x", n, pos, got, want)
			}
			// In place, as appendControl does.
			inplace := append([]byte(nil), src[:n]...)
			MaskCopy(inplace, inplace, key, pos)
			if !bytes.Equal(inplace, want) {
				t.Fatalf("n=%d pos=%d in place: got %x, want %x", n, pos, inplace, want)
			}
		}
	}
}

func TestAppendClientHeader(t *testing.T) {
	tests := []struct {
		n    int
		want []byte
	}{
		{0, []byte{0x82, 0x80, 1, 2, 3, 4}},
		{125, []byte{0x82, 0x80 | 125, 1, 2, 3, 4}},
		{126, []byte{0x82, 0x80 | 126, 0, 126, 1, 2, 3, 4}},
		{65535, []byte{0x82, 0x80 | 126, 0xff, 0xff, 1, 2, 3, 4}},
		{65536, []byte{0x82, 0x80 | 127, 0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3, 4}},
	}
	for _, tt := range tests {
		got := AppendClientHeader(nil, OpBinary, tt.n, 0x04030201)
		if !bytes.Equal(got, tt.want) {
			t.Errorf("n=%d: got % x, want % x", tt.n, got, tt.want)
		}
		if len(got) != frameHeaderLen(tt.n) {
			t.Errorf("n=%d: frameHeaderLen = %d, header is %d bytes", tt.n, frameHeaderLen(tt.n), len(got))
		}
	}
}

// decoded is what a whole stream decodes to, for comparing split and
// unsplit decoding.
type decoded struct {
	msgs  []string // "op:payload" of complete data messages
	ctrls []string // "op:payload" of control frames
	err   error
}

// decodeAll feeds stream to a decoder in pieces of the given sizes (cycled),
// keeping unconsumed bytes as a connection does.
func decodeAll(stream []byte, pieces []int) decoded {
	var d decoder
	var out decoded
	var pend, msg []byte
	for i := 0; len(stream) > 0; i++ {
		k := len(stream)
		if len(pieces) > 0 {
			k = min(max(pieces[i%len(pieces)], 1), len(stream))
		}
		b := append(pend, stream[:k]...)
		stream = stream[k:]
		for len(b) > 0 {
			ev, n, err := d.next(b)
			if err != nil {
				out.err = err
				return out
			}
			if n == 0 {
				break
			}
			b = b[n:]
			switch ev.Kind {
			case EventData:
				msg = append(msg, ev.Data...)
				if int64(len(msg)) != ev.Total {
					out.err = fmt.Errorf("total %d, have %d bytes", ev.Total, len(msg))
					return out
				}
				if ev.End {
					out.msgs = append(out.msgs, fmt.Sprintf("%d:%s", ev.Op, msg))
					msg = msg[:0]
				}
			case evControl:
				out.ctrls = append(out.ctrls, fmt.Sprintf("%d:%s", ev.Op, ev.Data))
			}
		}
		pend = append([]byte(nil), b...)
		if len(pend) > maxStash {
			out.err = fmt.Errorf("stash of %d bytes", len(pend))
			return out
		}
	}
	return out
}

func TestDecoder(t *testing.T) {
	cat := func(fs ...[]byte) []byte { return bytes.Join(fs, nil) }
	big := bytes.Repeat([]byte("x"), 70000)
	tests := []struct {
		name   string
		stream []byte
		msgs   []string
		ctrls  []string
		err    error
	}{
		{"one binary", testserver.ServerFrame(true, OpBinary, []byte("hello")), []string{"2:hello"}, nil, nil},
		{"empty text", testserver.ServerFrame(true, OpText, nil), []string{"1:"}, nil, nil},
		{"three frames", cat(testserver.ServerFrame(true, OpText, []byte("a")), testserver.ServerFrame(true, OpBinary, []byte("bc")), testserver.ServerFrame(true, OpText, []byte("d"))), []string{"1:a", "2:bc", "1:d"}, nil, nil},
		{"fragmented with ping inside", cat(testserver.ServerFrame(false, OpText, []byte("he")), testserver.ServerFrame(true, OpPing, []byte("p")), testserver.ServerFrame(false, opContinuation, nil), testserver.ServerFrame(true, opContinuation, []byte("llo"))), []string{"1:hello"}, []string{"9:p"}, nil},
		{"16-bit length", testserver.ServerFrame(true, OpBinary, big[:300]), []string{"2:" + string(big[:300])}, nil, nil},
		{"64-bit length", testserver.ServerFrame(true, OpBinary, big), []string{"2:" + string(big)}, nil, nil},
		{"close", testserver.ServerFrame(true, OpClose, []byte{3, 232}), nil, []string{"8:\x03\xe8"}, nil},
		{"masked", []byte{0x82, 0x81, 1, 2, 3, 4, 5}, nil, nil, errMasked},
		{"rsv", []byte{0xc2, 0x01, 5}, nil, nil, errRSV},
		{"bad opcode", []byte{0x83, 0x00}, nil, nil, errOpcode},
		{"bad control opcode", []byte{0x8b, 0x00}, nil, nil, errOpcode},
		{"fragmented ping", []byte{0x09, 0x00}, nil, nil, errFragmentedControl},
		{"long ping", append([]byte{0x89, 126, 0, 126}, make([]byte, 126)...), nil, nil, errControlLength},
		{"stray continuation", testserver.ServerFrame(true, opContinuation, []byte("x")), nil, nil, errContinuation},
		{"interleaved", cat(testserver.ServerFrame(false, OpText, []byte("a")), testserver.ServerFrame(true, OpText, []byte("b"))), nil, nil, errInterleaved},
		{"length top bit", []byte{0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0}, nil, nil, errLength},
	}
	for _, tt := range tests {
		for _, pieces := range [][]int{nil, {1}, {2, 3}, {7}, {1000}} {
			t.Run(fmt.Sprintf("%s/%v", tt.name, pieces), func(t *testing.T) {
				got := decodeAll(tt.stream, pieces)
				if !errors.Is(got.err, tt.err) {
					t.Fatalf("err = %v, want %v", got.err, tt.err)
				}
				if tt.err != nil {
					return
				}
				if fmt.Sprint(got.msgs) != fmt.Sprint(tt.msgs) && !(len(got.msgs) == 0 && len(tt.msgs) == 0) {
					t.Errorf("messages = %.80q, want %.80q", got.msgs, tt.msgs)
				}
				if fmt.Sprint(got.ctrls) != fmt.Sprint(tt.ctrls) && !(len(got.ctrls) == 0 && len(tt.ctrls) == 0) {
					t.Errorf("control frames = %q, want %q", got.ctrls, tt.ctrls)
				}
			})
		}
	}
}

// FuzzParseFrame checks that parseFrameHeader and the decoder never panic,
// never consume more than they are given, and decode a stream the same way
// (same messages, control frames and error) whether it arrives whole or in
// pieces.
func FuzzParseFrame(f *testing.F) {
	f.Add(testserver.ServerFrame(true, OpBinary, []byte("hello")), uint8(1))
	f.Add(append(testserver.ServerFrame(false, OpText, []byte("he")), testserver.ServerFrame(true, opContinuation, []byte("llo"))...), uint8(2))
	f.Add(testserver.ServerFrame(true, OpPing, []byte("ping")), uint8(3))
	f.Add([]byte{0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0}, uint8(4))
	f.Add([]byte{0x82, 0xfe, 0, 200, 1, 2, 3, 4}, uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, piece uint8) {
		h, n, err := parseFrameHeader(data)
		if n < 0 || n > len(data) || n > MaxHeader {
			t.Fatalf("header length %d for %d bytes", n, len(data))
		}
		if err == nil && n > 0 {
			if h.length < 0 {
				t.Fatalf("negative length %d", h.length)
			}
			want := 2
			switch data[1] & 0x7f {
			case 126:
				want = 4
			case 127:
				want = 10
			}
			if h.masked {
				want += 4
			}
			if n != want {
				t.Fatalf("header length %d, want %d", n, want)
			}
		}
		whole := decodeAll(data, nil)
		split := decodeAll(data, []int{int(piece%16) + 1})
		if whole.err != split.err || fmt.Sprint(whole.msgs) != fmt.Sprint(split.msgs) || fmt.Sprint(whole.ctrls) != fmt.Sprint(split.ctrls) {
			t.Fatalf("whole: %q %q %v; split: %q %q %v", whole.msgs, whole.ctrls, whole.err, split.msgs, split.ctrls, split.err)
		}
		var d decoder
		b := data
		for len(b) > 0 {
			_, n, err := d.next(b)
			if err != nil || n == 0 {
				break
			}
			if n > len(b) {
				t.Fatalf("consumed %d of %d bytes", n, len(b))
			}
			b = b[n:]
		}
	})
}

func TestCheckResponse(t *testing.T) {
	key := []byte("dGhlIHNhbXBsZSBub25jZQ==")
	accept := "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" // RFC 6455 §1.3 example
	if got := acceptFor(key); string(got[:]) != accept {
		t.Fatalf("acceptFor = %s, want %s", got, accept)
	}
	ok := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n\r\n"
	tests := []struct {
		resp string
		want string // "" = ok
	}{
		{ok, ""},
		{"HTTP/1.1 101 OK\r\nupgrade: WebSocket\r\nconnection: keep-alive, Upgrade\r\nsec-websocket-accept:" + accept + "\r\n\r\n", ""},
		{"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "bad status 404"},
		{"HTTP/1.1 200 OK\r\n\r\n", "bad status 200"},
		{"garbage\r\n\r\n", "bad status line"},
		{"HTTP/1.1 1x1 Switching\r\n\r\n", "bad status line"},
		{"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n\r\n", "missing upgrade: websocket"},
		{"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: " + accept + "\r\n\r\n", "missing connection: upgrade"},
		{"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: xxx\r\n\r\n", "bad accept"},
		{"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", "bad accept"},
		{"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n", "unrequested extension"},
	}
	for _, tt := range tests {
		head := []byte(tt.resp)
		if end := responseEnd(head); end != len(head) {
			t.Errorf("responseEnd = %d, want %d", end, len(head))
		}
		_, err := checkResponse(head, key, &offer{})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%.40q: got %q, want %q", tt.resp, got, tt.want)
		}
	}
	if responseEnd([]byte("HTTP/1.1 101 OK\r\nUpgrade: websocket\r\n")) != 0 {
		t.Error("responseEnd found the end of an incomplete head")
	}
}

func TestUpgradeRequest(t *testing.T) {
	r := newUpgradeRequest(requestSpec{host: "127.0.0.1:80", uri: "/ws"})
	var key [keyLen]byte
	encodeKey(&key, [16]byte{1, 2, 3})
	buf := append([]byte(nil), r.buf...)
	copy(buf[r.keyOff:], key[:])
	want := "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:80\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + string(key[:]) + "\r\n\r\n"
	if string(buf) != want {
		t.Fatalf("request\n%q\nwant\n%q", buf, want)
	}
}

func BenchmarkMaskCopy1K(b *testing.B) {
	src := make([]byte, 1024)
	dst := make([]byte, 1024)
	b.SetBytes(1024)
	b.ReportAllocs()
	for b.Loop() {
		MaskCopy(dst, src, rand.Uint32(), 0)
	}
}

func BenchmarkDecode1K(b *testing.B) {
	frame := testserver.ServerFrame(true, OpBinary, make([]byte, 1024))
	var d decoder
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		ev, _, err := d.next(frame)
		if err != nil || !ev.End {
			b.Fatal("bad decode")
		}
	}
}
