package faultserver

import (
	"bytes"
	"testing"
)

// FuzzMQTT: the broker's reading of a client's bytes never panics, a
// split packet lies within its input, and what it reads of a packet lies
// within the packet.
func FuzzMQTT(f *testing.F) {
	f.Add(connectPacket(5))
	f.Add(connectPacket(4))
	f.Add(mqttPublishQ(2))
	f.Add([]byte{mqttSubscribe<<4 | 2, 7, 0, 9, 0, 0, 1, 't', 2})
	f.Add([]byte{0xa2, 5, 0, 3, 0, 1, 't'})
	f.Add([]byte{0x30, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		first, body, n, err := mqttSplit(b)
		if err != nil || n == 0 {
			return
		}
		if n > len(b) || len(body) > n || !bytes.Equal(body, b[n-len(body):n]) {
			t.Fatalf("split %d of %d bytes, body %d", n, len(b), len(body))
		}
		for _, v5 := range []bool{false, true} {
			if p, err := mqttPublishOf(first, body, v5); err == nil && len(p.topic)+len(p.payload) > len(body) {
				t.Fatalf("publish of %d bytes: topic %d, payload %d", len(body), len(p.topic), len(p.payload))
			}
			for _, unsub := range []bool{false, true} {
				if s, err := mqttSubscribeOf(body, v5, unsub); err == nil && (len(s.filters) != len(s.qos) || s.pid == 0) {
					t.Fatalf("subscribe: %d filters, %d qos, pid %d", len(s.filters), len(s.qos), s.pid)
				}
			}
		}
		if v, err := mqttConnectVersion(body); err == nil && v != 4 && v != 5 {
			t.Fatalf("version %d", v)
		}
		// Ack ids need two bytes; fewer is an error, never a panic.
		_, _ = mqttAckID(body)
	})
}

// FuzzSTOMP: the server's reading of a client's frames never panics,
// takes no more than its input, and a frame's body lies within it; a
// frame written and read back is the same frame.
func FuzzSTOMP(f *testing.F) {
	f.Add([]byte("CONNECT\naccept-version:1.2\nhost:/\n\n\x00"))
	f.Add([]byte("\n\r\nSEND\ndestination:/a\ncontent-length:3\n\na\x00b\x00"))
	f.Add([]byte("SUBSCRIBE\r\nid:1\r\n\r\n\x00"))
	f.Add([]byte("SEND\ncontent-length:99999999\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for off := 0; off < len(b); {
			fr, n, err := stompParse(b[off:])
			if err != nil {
				return
			}
			if n < 0 || off+n > len(b) {
				t.Fatalf("took %d of %d bytes", n, len(b)-off)
			}
			if fr == nil {
				return
			}
			if len(fr.body) > n {
				t.Fatalf("body %d of a %d-byte frame", len(fr.body), n)
			}
			if n == 0 {
				t.Fatal("a frame of 0 bytes")
			}
			off += n
		}
		// Round trip: a frame of these bytes as its body and a header.
		out := stompAppend(nil, "SEND", b, "destination", string(b))
		fr, n, err := stompParse(out)
		if err != nil || fr == nil || n != len(out) || !bytes.Equal(fr.body, b) || fr.headers["destination"] != stompUnescape(stompEscape(string(b))) {
			t.Fatalf("round trip of %q: %+v, %d of %d, %v", b, fr, n, len(out), err)
		}
	})
}
