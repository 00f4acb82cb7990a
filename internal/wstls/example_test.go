package wstls_test

import (
	"net"

	"github.com/wsplan/wsplan/internal/wstls"
)

// A client loop's use of a Session, shown over a blocking net.Conn: the
// loop would do the same with its non-blocking socket and epoll events.
func Example() {
	cfg, err := wstls.ClientConfig(wstls.ClientOptions{CAFile: "out/tls/ca.pem", ServerName: "localhost", SessionResumption: true}) // once per target
	if err != nil {
		return
	}
	c, err := net.Dial("tcp", "127.0.0.1:8443")
	if err != nil {
		return
	}
	defer c.Close()
	s := wstls.NewClient(cfg)
	defer s.Abort()

	// Handshake: write what it returns, hand in what the socket gives.
	buf := make([]byte, 64<<10)
	out, done, err := s.Handshake(nil, nil)
	for err == nil {
		if _, err = c.Write(out); err != nil || done {
			break
		}
		var n int
		if n, err = c.Read(buf); err == nil {
			out, done, err = s.Handshake(out[:0], buf[:n])
		}
	}
	if err != nil {
		return
	}
	_ = s.HandshakeTime() // the connect phase's TLS time

	// Steady state: seal what to send, open what arrives.
	wire, _ := s.Seal(make([]byte, 0, 1024+wstls.Overhead), []byte("GET /ws HTTP/1.1\r\n..."))
	if _, err := c.Write(wire); err != nil {
		return
	}
	n, err := c.Read(buf)
	if err != nil {
		return
	}
	s.Feed(buf[:n])
	for {
		p, err := s.Next()
		if err != nil || p == nil {
			break // p == nil: buf may be reused for the next read
		}
		_ = p // plaintext: the frame decoder's input
	}
}
