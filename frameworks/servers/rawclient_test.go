package servers

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
)

// A raw-frame WebSocket client for the frameworks' tests, built on
// gobwas/ws: it writes masked frames and reads server frames one by one,
// so the tests see every opcode, fragment and RSV bit.

// freeAddrs returns n loopback addresses whose ports were free a moment ago.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("allocate a free port: %v", err)
		}
		lns = append(lns, ln)
	}
	addrs := make([]string, n)
	for i, ln := range lns {
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func opName(op ws.OpCode) string {
	switch op {
	case ws.OpText:
		return "text"
	case ws.OpBinary:
		return "binary"
	case ws.OpContinuation:
		return "continuation"
	case ws.OpClose:
		return "close"
	case ws.OpPing:
		return "ping"
	case ws.OpPong:
		return "pong"
	}
	return fmt.Sprintf("opcode(%d)", op)
}

// client is a raw-frame WebSocket client: it writes masked frames and reads
// server frames one by one, so tests see every opcode and fragment.
type client struct {
	conn net.Conn
	r    io.Reader // buffered handshake reader when gobwas kept one, else conn
}

func dial(addr, path string) (net.Conn, *bufio.Reader, ws.Handshake, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	return ws.Dial(ctx, "ws://"+addr+path)
}

func dialClient(addr string) (*client, error) {
	conn, br, _, err := dial(addr, testPath)
	if err != nil {
		return nil, fmt.Errorf("dial ws://%s%s: %w", addr, testPath, err)
	}
	c := &client{conn: conn, r: conn}
	if br != nil {
		c.r = br
	}
	return c, nil
}

func dialT(t *testing.T, addr string) *client {
	t.Helper()
	c, err := dialClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *client) write(f ws.Frame) error {
	if err := c.conn.SetWriteDeadline(time.Now().Add(ioTimeout)); err != nil {
		return err
	}
	if err := ws.WriteFrame(c.conn, ws.MaskFrame(f)); err != nil {
		return fmt.Errorf("write %s frame: %w", opName(f.Header.OpCode), err)
	}
	return nil
}

// readFrame reads one server frame and checks what RFC 6455 requires of
// every server frame: unmasked, no RSV bits (no extension is negotiated),
// control frames final and at most 125 bytes.
func (c *client) readFrame() (ws.Frame, error) {
	if err := c.conn.SetReadDeadline(time.Now().Add(ioTimeout)); err != nil {
		return ws.Frame{}, err
	}
	h, err := ws.ReadHeader(c.r)
	if err != nil {
		return ws.Frame{}, fmt.Errorf("read frame header: %w", err)
	}
	if h.Length > maxFrame {
		return ws.Frame{}, fmt.Errorf("server sent a %d-byte %s frame, the largest message the tests send is %d bytes", h.Length, opName(h.OpCode), maxFrame)
	}
	f := ws.Frame{Header: h, Payload: make([]byte, h.Length)}
	if _, err := io.ReadFull(c.r, f.Payload); err != nil {
		return f, fmt.Errorf("read %d-byte %s payload: %w", h.Length, opName(h.OpCode), err)
	}
	switch {
	case h.Masked:
		return f, fmt.Errorf("server sent a masked %s frame", opName(h.OpCode))
	case h.Rsv != 0:
		return f, fmt.Errorf("server sent a %s frame with RSV bits %03b, no extension was negotiated", opName(h.OpCode), h.Rsv)
	case h.OpCode.IsControl() && (!h.Fin || h.Length > 125):
		return f, fmt.Errorf("server sent an invalid %s control frame (fin=%v, %d bytes)", opName(h.OpCode), h.Fin, h.Length)
	}
	return f, nil
}

// readMessage reads one data message, joining its fragments. Any control
// frame in between is an error: the tests send no ping while waiting for a
// message.
func (c *client) readMessage() (ws.OpCode, []byte, error) {
	op, data, pongs, err := c.readMessageAndPongs()
	if err == nil && len(pongs) > 0 {
		err = fmt.Errorf("got an unsolicited pong (payload %q), want a data frame", truncate(pongs[0]))
	}
	return op, data, err
}

// readMessageAndPongs reads one data message, joining its fragments, and
// returns the payloads of the pongs that arrived before or between them.
// Other control frames are an error.
func (c *client) readMessageAndPongs() (op ws.OpCode, data []byte, pongs [][]byte, err error) {
	started := false
	for {
		f, err := c.readFrame()
		if err != nil {
			return 0, nil, pongs, err
		}
		switch fop := f.Header.OpCode; {
		case fop == ws.OpPong:
			pongs = append(pongs, f.Payload)
			continue
		case fop.IsControl():
			return 0, nil, pongs, fmt.Errorf("got a %s frame (payload %q), want a data frame", opName(fop), truncate(f.Payload))
		case !started && fop == ws.OpContinuation:
			return 0, nil, pongs, errors.New("got a continuation frame that starts no message")
		case started && fop != ws.OpContinuation:
			return 0, nil, pongs, fmt.Errorf("got a %s frame inside a fragmented message, want continuation", opName(fop))
		case !started:
			op, started = fop, true
		}
		data = append(data, f.Payload...)
		if f.Header.Fin {
			if data == nil {
				data = []byte{}
			}
			return op, data, pongs, nil
		}
	}
}

func (c *client) mustWrite(t *testing.T, f ws.Frame) {
	t.Helper()
	if err := c.write(f); err != nil {
		t.Fatal(err)
	}
}

func (c *client) mustSend(t *testing.T, op ws.OpCode, payload []byte) {
	t.Helper()
	c.mustWrite(t, ws.NewFrame(op, true, payload))
}

func (c *client) mustEcho(t *testing.T, wantOp ws.OpCode, want []byte) {
	t.Helper()
	op, got, err := c.readMessage()
	if err != nil {
		t.Fatalf("waiting for the echo of a %d-byte %s message: %v", len(want), opName(wantOp), err)
	}
	if op != wantOp {
		t.Errorf("echo opcode = %s, want %s", opName(op), opName(wantOp))
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("echo of a %d-byte %s message: %s", len(want), opName(wantOp), firstDiff(got, want))
	}
}

func (c *client) mustPong(t *testing.T, want []byte) {
	t.Helper()
	f, err := c.readFrame()
	if err != nil {
		t.Fatalf("waiting for pong: %v", err)
	}
	if f.Header.OpCode != ws.OpPong {
		t.Fatalf("answer to ping: got a %s frame (payload %q), want pong", opName(f.Header.OpCode), truncate(f.Payload))
	}
	if !bytes.Equal(f.Payload, want) {
		t.Fatalf("pong payload = %q, want the ping's %q", truncate(f.Payload), truncate(want))
	}
}

// closeHandshake sends close 1000, expects a close frame back (with code
// 1000 if it carries one) and then the end of the TCP connection.
func (c *client) closeHandshake(t *testing.T) {
	t.Helper()
	c.mustWrite(t, ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusNormalClosure, "bye")))
	f, err := c.readFrame()
	if err != nil {
		t.Fatalf("waiting for the answer to close 1000: %v", err)
	}
	if f.Header.OpCode != ws.OpClose {
		t.Fatalf("answer to close 1000: got a %s frame (payload %q), want close", opName(f.Header.OpCode), truncate(f.Payload))
	}
	switch len(f.Payload) {
	case 0:
	case 1:
		t.Errorf("close frame with a 1-byte payload %x, want 0 or >= 2 bytes", f.Payload)
	default:
		if code, _ := ws.ParseCloseFrameData(f.Payload); code != ws.StatusNormalClosure {
			t.Errorf("answer to close 1000 carries code %d, want 1000", code)
		}
	}
	if err := c.expectEOF(); err != nil {
		t.Errorf("after the close handshake: %v", err)
	}
}

// expectEOF waits for the server to end the TCP connection. A reset counts
// as ended; a frame or a timeout does not.
func (c *client) expectEOF() error {
	if err := c.conn.SetReadDeadline(time.Now().Add(ioTimeout)); err != nil {
		return err
	}
	var b [1]byte
	n, err := c.r.Read(b[:])
	switch {
	case n > 0:
		return fmt.Errorf("got more bytes (%#x...), want the server to end the TCP connection", b[0])
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return nil
	case err == nil:
		return errors.New("read returned 0 bytes and no error, want EOF")
	}
	return fmt.Errorf("want the server to end the TCP connection within %v: %w", ioTimeout, err)
}

// drainUntilEOF reads frames until the connection ends; a close frame on the
// way is fine, data frames are not.
func (c *client) drainUntilEOF() error {
	for {
		f, err := c.readFrame()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return nil
		}
		if err != nil {
			return err
		}
		if f.Header.OpCode != ws.OpClose {
			return fmt.Errorf("got a %s frame, want close or EOF", opName(f.Header.OpCode))
		}
	}
}

func truncate(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

func firstDiff(got, want []byte) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at byte %d: got %#x, want %#x", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("got %d bytes, want %d (common prefix equal)", len(got), len(want))
}
