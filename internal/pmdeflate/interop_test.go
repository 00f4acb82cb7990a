//lint:file-ignore SA1019 nhooyr.io/websocket is marked deprecated (moved to github.com/coder/websocket); wsplan's nhooyr preset serves it, so the client must interoperate with it.

package pmdeflate

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lesismal/nbio/logging"
	"github.com/lesismal/nbio/nbhttp"
	nbws "github.com/lesismal/nbio/nbhttp/websocket"
	"github.com/lxzan/gws"
	nhooyr "nhooyr.io/websocket"

	"github.com/wsplan/wsplan/internal/payload"
	"github.com/wsplan/wsplan/internal/testserver"
)

// An echoServer is a real library's WebSocket echo server on loopback;
// takeover tells whether it may use context takeover when compressing.
type echoServer struct {
	name  string
	start func(t *testing.T, compress, takeover bool) (addr string)
	// takeover is whether the library can compress with context takeover.
	takeover bool
}

var echoServers = []echoServer{
	{"gorilla", startGorilla, false},
	{"gws", startGws, true},
	{"nhooyr", startNhooyr, true},
	{"nbio", startNbio, false},
}

// httpEcho serves h on a loopback httptest server closed at cleanup. The
// handlers own hijacked connections, which Close does not wait for: the
// test's client closes its end, and the handler returns on the read error.
func httpEcho(t *testing.T, h http.HandlerFunc) string {
	var wg sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wg.Add(1)
		defer wg.Done()
		h(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		wg.Wait()
	})
	return srv.Listener.Addr().String()
}

func startGorilla(t *testing.T, compress, _ bool) string {
	return testserver.Start(t, testserver.Options{Compression: compress}).Addr()
}

type gwsEcho struct{ gws.BuiltinEventHandler }

func (gwsEcho) OnMessage(c *gws.Conn, m *gws.Message) {
	defer m.Close()
	_ = c.WriteMessage(m.Opcode, m.Bytes()) // a failed write closes c
}

func startGws(t *testing.T, compress, takeover bool) string {
	up := gws.NewUpgrader(gwsEcho{}, &gws.ServerOption{PermessageDeflate: gws.PermessageDeflate{
		Enabled: compress, ServerContextTakeover: takeover, ClientContextTakeover: takeover,
		Threshold: 1, // compress every message, as the client does
	}})
	return httpEcho(t, func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r)
		if err != nil {
			return
		}
		c.ReadLoop()
	})
}

func startNhooyr(t *testing.T, compress, takeover bool) string {
	opts := &nhooyr.AcceptOptions{CompressionMode: nhooyr.CompressionDisabled, CompressionThreshold: 1}
	if compress {
		opts.CompressionMode = nhooyr.CompressionNoContextTakeover
		if takeover {
			opts.CompressionMode = nhooyr.CompressionContextTakeover
		}
	}
	return httpEcho(t, func(w http.ResponseWriter, r *http.Request) {
		c, err := nhooyr.Accept(w, r, opts)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := context.Background()
		for {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.Write(ctx, typ, msg); err != nil {
				return
			}
		}
	})
}

// startNbio serves nbio's websocket from an nbhttp.Engine in non-blocking
// (epoll) mode, as the nbio_nonblocking preset does.
func startNbio(t *testing.T, compress, _ bool) string {
	logging.SetLevel(logging.LevelError) // nbio logs every start and stop to stdout
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := nbws.NewUpgrader()
	up.EnableCompression(compress)
	up.OnMessage(func(c *nbws.Conn, mt nbws.MessageType, data []byte) {
		_ = c.WriteMessage(mt, data) // a failed write closes c
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = up.Upgrade(w, r, nil) // on error Upgrade has answered
	})
	addr := ln.Addr().String()
	e := nbhttp.NewEngine(nbhttp.Config{
		Network: "tcp",
		Addrs:   []string{addr},
		Listen:  func(string, string) (net.Listener, error) { return ln, nil },
		IOMod:   nbhttp.IOModNonBlocking,
		Handler: mux,
		// Without these, NewEngine starts two task pools whose goroutines
		// no Stop or Shutdown ends (nbio v1.6.8); handlers run on the
		// poller instead.
		ServerExecutor:    func(f func()) { f() },
		SupportServerOnly: true,
	})
	up.Engine = e
	if err := e.Start(); err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return addr
}

// wsConn is a hand-built WebSocket client on a net.Conn: masked frames
// with RSV1 for compressed messages, as the event-loop client sends them.
type wsConn struct {
	t    *testing.T
	c    net.Conn
	r    *bufio.Reader
	p    Params
	comp Compressor
	dec  Decompressor
	// wireSent and wireRecv count message payload bytes on the wire.
	wireSent, wireRecv int
}

// dial connects to addr, offering offer (nil: no extension), and returns
// the connection and Accept's result.
func dial(t *testing.T, addr string, offer *Params) (*wsConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	key := base64.StdEncoding.EncodeToString(raw[:])
	req := "GET / HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + "\r\n"
	if offer != nil {
		req += "Sec-WebSocket-Extensions: " + Offer(*offer) + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %s", resp.Status)
	}
	w := &wsConn{t: t, c: c, r: br}
	if offer == nil {
		return w, nil
	}
	p, err := Accept(strings.Join(resp.Header.Values("Sec-WebSocket-Extensions"), ", "), *offer)
	if err != nil {
		return w, err
	}
	w.p = p
	return w, nil
}

// writeFrame writes one final, masked frame.
func (w *wsConn) writeFrame(first byte, payload []byte) {
	hdr := []byte{first, 0x80}
	switch n := len(payload); {
	case n < 126:
		hdr[1] |= byte(n)
	case n < 1<<16:
		hdr[1] |= 126
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr[1] |= 127
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var key [4]byte
	_, _ = rand.Read(key[:])
	masked := append(append(hdr, key[:]...), payload...)
	body := masked[len(hdr)+4:]
	for i := range body {
		body[i] ^= key[i&3]
	}
	if _, err := w.c.Write(masked); err != nil {
		w.t.Fatal(err)
	}
}

// send sends msg as one text message, compressed as wire (RSV1 set).
func (w *wsConn) send(wire []byte) {
	w.wireSent += len(wire)
	w.writeFrame(0x80|RSV1|0x1, wire)
}

// recv reads one data message and returns it, inflated (frame by frame,
// through Feed) if its first frame had RSV1.
func (w *wsConn) recv() []byte {
	var msg []byte
	compressed := false
	for first := true; ; first = false {
		var h [2]byte
		if _, err := io.ReadFull(w.r, h[:]); err != nil {
			w.t.Fatal(err)
		}
		n := int(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			_, _ = io.ReadFull(w.r, b[:])
			n = int(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			_, _ = io.ReadFull(w.r, b[:])
			n = int(binary.BigEndian.Uint64(b[:]))
		}
		if h[1]&0x80 != 0 || h[0]&0x0f >= 0x8 {
			w.t.Fatalf("unexpected frame %x", h)
		}
		if first {
			compressed = h[0]&RSV1 != 0
		} else if h[0]&0x70 != 0 {
			w.t.Fatalf("continuation frame with RSV bits %x", h[0])
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(w.r, buf); err != nil {
			w.t.Fatal(err)
		}
		fin := h[0]&0x80 != 0
		if compressed {
			w.wireRecv += n
			var err error
			if msg, err = w.dec.Feed(msg, buf, fin); err != nil {
				w.t.Fatalf("inflate: %v", err)
			}
		} else {
			msg = append(msg, buf...)
		}
		if fin {
			return msg
		}
	}
}

// TestInterop negotiates permessage-deflate with each library's server,
// sends compressed chat text (a new message each time, then one
// pre-computed message over and over) and checks that every echo
// inflates back byte for byte, and that the wire carries less than half
// the payload bytes, both ways.
func TestInterop(t *testing.T) {
	const n, count = 1024, 40
	text, err := payload.Payload(payload.Text, n*count, nil)
	if err != nil {
		t.Fatal(err)
	}
	fixed := text[:n]
	for _, s := range echoServers {
		for _, tc := range []struct {
			name     string
			offer    Params
			takeover bool // the server may take over context
		}{
			{"no_context_takeover", Params{ClientNoContextTakeover: true, ServerNoContextTakeover: true}, false},
			{"context_takeover", Params{}, true},
		} {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				addr := s.start(t, true, tc.takeover)
				w, err := dial(t, addr, &tc.offer)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("negotiated %s", w.p)
				if got := !w.p.ServerNoContextTakeover; got != (tc.takeover && s.takeover) {
					t.Errorf("server context takeover %v, want %v", got, tc.takeover && s.takeover)
				}
				var d Deflater
				var f Inflater
				w.comp.Init(&d, w.p)
				w.dec.Init(&f, w.p, 1<<20)
				pre := Precompute(w.p, fixed)
				plain := 0
				for i := range 2 * count {
					msg, wire := fixed, pre
					if i < count {
						msg = text[i*n : (i+1)*n]
						wire = w.comp.Compress(nil, msg)
					}
					w.send(wire)
					if got := w.recv(); !bytes.Equal(got, msg) {
						t.Fatalf("message %d: echo of %d bytes differs (%d bytes)", i, len(msg), len(got))
					}
					plain += len(msg)
				}
				t.Logf("%d payload bytes: %d sent, %d received on the wire (%.3f, %.3f)",
					plain, w.wireSent, w.wireRecv, float64(w.wireSent)/float64(plain), float64(w.wireRecv)/float64(plain))
				if w.wireSent*2 >= plain || w.wireRecv*2 >= plain {
					t.Errorf("wire bytes sent %d, received %d: want both < 50%% of %d payload bytes", w.wireSent, w.wireRecv, plain)
				}
			})
		}
	}
}

// TestInteropDeclined: a server without compression answers the offer
// without the extension, and Accept says so.
func TestInteropDeclined(t *testing.T) {
	for _, s := range echoServers {
		t.Run(s.name, func(t *testing.T) {
			addr := s.start(t, false, false)
			_, err := dial(t, addr, &Params{})
			if !errors.Is(err, ErrDeclined) {
				t.Fatalf("got %v, want %v", err, ErrDeclined)
			}
			if err.Error() != "compression asked, server declined" {
				t.Errorf("error text %q", err)
			}
		})
	}
}

// TestInteropWindowBits asks gws, which honours window bits, for small
// windows both ways.
func TestInteropWindowBits(t *testing.T) {
	addr := startGws(t, true, true)
	offer := Params{ServerMaxWindowBits: 9, ClientMaxWindowBits: 9}
	w, err := dial(t, addr, &offer)
	if err != nil {
		// gws answers with its own configured window bits (12): more than
		// asked is an error, and that is the answer this test expects.
		if !strings.Contains(err.Error(), "above the 9 offered") {
			t.Fatal(err)
		}
		t.Logf("gws: %v", err)
		return
	}
	t.Fatalf("gws accepted 9-bit windows: %s", fmt.Sprint(w.p))
}
