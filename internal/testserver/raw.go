package testserver

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The raw side of the package: a server whose test writes the bytes
// itself (frames a library would refuse to send, a handshake gone wrong),
// and the few pieces of RFC 6455 such a test needs — the handshake's
// answer, a client frame read and unmasked, a server frame encoded.

// RawServer accepts TCP connections on 127.0.0.1 (or Addr), does the
// WebSocket handshake by hand unless Handshake is set, and runs Handle on
// each connection in its own goroutine. Everything stops at test cleanup.
type RawServer struct {
	Network   string
	Addr      string
	Handshake func(c net.Conn, r *bufio.Reader) // replaces the standard handshake
	Handle    func(c net.Conn, r *bufio.Reader)

	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// Start serves s until the test ends and returns its host:port.
func (s *RawServer) Start(t testing.TB) string {
	t.Helper()
	network, addr := s.Network, s.Addr
	if network == "" {
		network = "tcp4"
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	s.ln = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				if s.Handshake != nil {
					s.Handshake(c, r)
					return
				}
				if err := ServerHandshake(c, r, nil); err != nil {
					return
				}
				if s.Handle != nil {
					s.Handle(c, r)
				}
			}()
		}
	}()
	t.Cleanup(s.stop)
	return ln.Addr().String()
}

// Conns returns the connections accepted so far, oldest first (ended
// ones too: a test may still ask them their addresses).
func (s *RawServer) Conns() []net.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.conns)
}

func (s *RawServer) stop() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// ServerHandshake reads an upgrade request and answers 101, followed by
// extra bytes in the same write.
func ServerHandshake(c net.Conn, r *bufio.Reader, extra []byte) error {
	req, err := http.ReadRequest(r)
	if err != nil {
		return err
	}
	key := req.Header.Get("Sec-WebSocket-Key")
	if key == "" || !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
		return errors.New("not an upgrade")
	}
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + Accept(key) + "\r\n\r\n"
	_, err = c.Write(append([]byte(resp), extra...))
	return err
}

// Accept is the Sec-WebSocket-Accept of key.
func Accept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// ReadClientFrame reads one client frame, checking that it is masked.
func ReadClientFrame(r io.Reader) (fin bool, op byte, payload []byte, err error) {
	var h [14]byte
	if _, err := io.ReadFull(r, h[:2]); err != nil {
		return false, 0, nil, err
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	if h[1]&0x80 == 0 {
		return false, 0, nil, errors.New("unmasked client frame")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		if _, err := io.ReadFull(r, h[:2]); err != nil {
			return false, 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(h[:2]))
	case 127:
		if _, err := io.ReadFull(r, h[:8]); err != nil {
			return false, 0, nil, err
		}
		n = binary.BigEndian.Uint64(h[:8])
	}
	var key [4]byte
	if _, err := io.ReadFull(r, key[:]); err != nil {
		return false, 0, nil, err
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return false, 0, nil, err
	}
	for i := range payload {
		payload[i] ^= key[i%4]
	}
	return fin, op, payload, nil
}

// ServerFrame encodes an unmasked server frame.
func ServerFrame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	b := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		b = append(b, byte(n))
	case n < 1<<16:
		b = append(b, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}
