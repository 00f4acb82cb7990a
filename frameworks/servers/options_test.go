package servers

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/httphead"
	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsflate"
	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/frameworks"
	"github.com/wsplan/wsplan/internal/testenv"
)

// TestOptionsReachBoth starts every preset's echo server (Adapter.Start)
// and its broadcast server (Adapter.StartBroadcast) with the same option
// values and observes each value on both, the same way:
//
//   - compression=true: a client offering permessage-deflate gets it, and
//     a 4 KiB text message comes back compressed (RSV1 set, inflating to
//     the message); compression=false: the offer is declined and the reply
//     is plain;
//   - nodelay=false and nodelay=true: the server's end of the connection
//     has TCP_NODELAY off and on (getsockopt on the server's socket, found
//     among this process's fds);
//   - Config.TLS: both serve wss:// with a run CA's certificate;
//   - the adapter options whose effect shows on the wire: gws check_utf8
//     (invalid UTF-8 text is closed with 1007) and server (another path
//     gets 400 from gws's own listener, 404 from net/http), nhooyr
//     read_limit (a larger message is closed with 1009), nettyws
//     message_type (text is echoed as text).
//
// What does not show on the wire (read_buffer sizes, nbio io_mode, greatws
// callback placement and pool, quickws parse_mode, hertz transport) is not
// observed here; each adapter passes its Config to one setup function for
// both servers, so those travel the same road.
func TestOptionsReachBoth(t *testing.T) {
	testenv.Slow(t, "6 s: every preset option, on both ends")
	srvTLS, cliTLS := testTLS(t)
	for _, p := range frameworks.Presets() {
		for _, oc := range optionCases {
			if oc.only != "" && oc.only != p.Framework {
				continue
			}
			t.Run(p.Name+"/"+oc.name, func(t *testing.T) {
				if runApart(t, p.Name) {
					return
				}
				mustBeApart(t, p.Name)
				a, vals, errs := frameworks.Resolve(p.Name, "", oc.opts)
				if len(errs) > 0 {
					if on, _ := strconv.ParseBool(oc.opts["compression"]); on && a.Limits.NoCompression != "" {
						t.Skipf("no permessage-deflate: %s", a.Limits.NoCompression)
					}
					t.Fatal(errors.Join(errs...))
				}
				if a.Broadcast == nil {
					t.Skipf("no broadcast server: %s", a.NoBroadcastWhy())
				}
				var sc, cc *tls.Config
				if oc.tls {
					if why := a.TLSRefusal(vals); why != "" {
						t.Skipf("no TLS: %s", why)
					}
					sc, cc = srvTLS, cliTLS
				}
				for _, e := range []struct {
					name, path, query string
					start             func(frameworks.Config) (frameworks.Server, error)
				}{
					{"echo", testPath, "", a.Start},
					{"broadcast", frameworks.BroadcastPath, "?room=1", a.StartBroadcast},
				} {
					addr := freeAddrs(t, 1)[0]
					srv, err := e.start(frameworks.Config{Addrs: []string{addr}, Path: e.path, Payload: testPayload, Values: vals, TLS: sc})
					if err != nil {
						t.Fatalf("%s server: start: %v", e.name, err)
					}
					s := &optSession{t: t, name: e.name, addr: addr, path: e.path, query: e.query, tls: cc, op: dataOp(a, vals), vals: vals}
					oc.check(s)
					if err := srv.Close(); err != nil {
						t.Errorf("%s server: close: %v", e.name, err)
					}
				}
			})
		}
	}
}

// optionCases are the option values TestOptionsReachBoth observes.
var optionCases = []struct {
	name  string
	only  string // adapter name; "" = every adapter
	opts  map[string]string
	tls   bool
	check func(s *optSession)
}{
	{name: "compression=true", opts: map[string]string{"compression": "true"}, check: func(s *optSession) { s.checkDeflate(true) }},
	{name: "compression=false", opts: map[string]string{"compression": "false"}, check: func(s *optSession) { s.checkDeflate(false) }},
	{name: "nodelay=false", opts: map[string]string{"nodelay": "false"}, check: func(s *optSession) { s.checkNoDelay(0) }},
	{name: "nodelay=true", opts: map[string]string{"nodelay": "true"}, check: func(s *optSession) { s.checkNoDelay(1) }},
	{name: "tls", tls: true, check: func(s *optSession) {
		c := s.dial(nil)
		defer c.conn.Close()
		s.echo(c, s.op, []byte("over TLS"))
		if tc, ok := c.conn.(*tls.Conn); !ok || !tc.ConnectionState().HandshakeComplete {
			s.t.Errorf("%s server: connection is %T, want a completed TLS handshake", s.name, c.conn)
		}
	}},
	{name: "check_utf8=true", only: "gws", opts: map[string]string{"check_utf8": "true"}, check: func(s *optSession) {
		s.checkClosed(ws.OpText, invalidUTF8, ws.StatusInvalidFramePayloadData)
	}},
	{name: "check_utf8=false", only: "gws", opts: map[string]string{"check_utf8": "false"}, check: func(s *optSession) {
		c := s.dial(nil)
		defer c.conn.Close()
		s.echo(c, ws.OpText, invalidUTF8)
	}},
	{name: "server", only: "gws", check: func(s *optSession) {
		want := map[string]int{"gws": 400, "std": 404}[s.vals["server"]]
		if got := s.refusal("/elsewhere"); got != want {
			s.t.Errorf("%s server (server=%s): another path answered %d, want %d", s.name, s.vals["server"], got, want)
		}
	}},
	{name: "read_limit=100", only: "nhooyr", opts: map[string]string{"read_limit": "100"}, check: func(s *optSession) {
		s.checkClosed(ws.OpBinary, bytes.Repeat([]byte{7}, 200), ws.StatusMessageTooBig)
	}},
	{name: "read_limit=0", only: "nhooyr", opts: map[string]string{"read_limit": "0"}, check: func(s *optSession) {
		c := s.dial(nil)
		defer c.conn.Close()
		s.echo(c, ws.OpBinary, bytes.Repeat([]byte{7}, 200))
	}},
	{name: "message_type=text", only: "nettyws", opts: map[string]string{"message_type": "text"}, check: func(s *optSession) {
		c := s.dial(nil)
		defer c.conn.Close()
		s.echo(c, ws.OpText, []byte("text, as message_type says"))
	}},
}

// invalidUTF8 is a text message that is not valid UTF-8.
var invalidUTF8 = []byte{'o', 'k', 0xff}

// dataOp is the message type a check sends: text, unless the server echoes
// binary messages only.
func dataOp(a frameworks.Adapter, vals map[string]string) ws.OpCode {
	if a.Limits.OneMessageType != nil && a.Limits.OneMessageType(vals) == "binary" {
		return ws.OpBinary
	}
	return ws.OpText
}

// optSession is one server of TestOptionsReachBoth under test.
type optSession struct {
	t                 *testing.T
	name              string // "echo" or "broadcast"
	addr, path, query string
	tls               *tls.Config // client side; nil = ws://
	op                ws.OpCode   // the data message type the server echoes
	vals              map[string]string
}

// optConn is a client connection of an optSession.
type optConn struct {
	conn net.Conn
	r    io.Reader
	hs   ws.Handshake
}

// dial upgrades on the session's path (joining room 1 on the broadcast
// server, whose sender gets its own message back), offering exts.
func (s *optSession) dial(exts []httphead.Option) *optConn {
	s.t.Helper()
	scheme := "ws://"
	if s.tls != nil {
		scheme = "wss://"
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	d := ws.Dialer{Extensions: exts, TLSConfig: s.tls}
	conn, br, hs, err := d.Dial(ctx, scheme+s.addr+s.path+s.query)
	if err != nil {
		s.t.Fatalf("%s server: dial: %v", s.name, err)
	}
	c := &optConn{conn: conn, r: conn, hs: hs}
	if br != nil {
		c.r = br
	}
	if err := conn.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		s.t.Fatal(err)
	}
	return c
}

// refusal is the HTTP status of an upgrade request for path.
func (s *optSession) refusal(path string) int {
	s.t.Helper()
	status := 0
	d := ws.Dialer{OnStatusError: func(code int, _ []byte, _ io.Reader) { status = code }}
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	conn, _, _, err := d.Dial(ctx, "ws://"+s.addr+path+s.query)
	if err == nil {
		conn.Close()
		s.t.Fatalf("%s server: upgrade on %s succeeded, want it refused", s.name, path)
	}
	return status
}

// send writes msg as one masked frame.
func (s *optSession) send(c *optConn, op ws.OpCode, msg []byte) {
	s.t.Helper()
	if err := ws.WriteFrame(c.conn, ws.MaskFrame(ws.NewFrame(op, true, msg))); err != nil {
		s.t.Fatalf("%s server: write: %v", s.name, err)
	}
}

// reply reads one message: its first frame's header (RSV1 says
// compressed) and its payload, fragments joined.
func (s *optSession) reply(c *optConn) (ws.Header, []byte) {
	s.t.Helper()
	var first ws.Header
	var data []byte
	for i := 0; ; i++ {
		h, err := ws.ReadHeader(c.r)
		if err != nil {
			s.t.Fatalf("%s server: read reply: %v", s.name, err)
		}
		p := make([]byte, h.Length)
		if _, err := io.ReadFull(c.r, p); err != nil {
			s.t.Fatalf("%s server: read %d-byte payload: %v", s.name, h.Length, err)
		}
		if i == 0 {
			first = h
		}
		data = append(data, p...)
		if h.Fin && !h.OpCode.IsControl() {
			return first, data
		}
	}
}

// echo sends msg and wants it back, plain, with its type.
func (s *optSession) echo(c *optConn, op ws.OpCode, msg []byte) {
	s.t.Helper()
	s.send(c, op, msg)
	h, got := s.reply(c)
	if h.OpCode != op || h.Rsv != 0 || !bytes.Equal(got, msg) {
		s.t.Fatalf("%s server: reply %s rsv %03b %q, want %s %q", s.name, opName(h.OpCode), h.Rsv, truncate(got), opName(op), truncate(msg))
	}
}

// checkDeflate offers permessage-deflate and wants it negotiated and a
// compressible message compressed when on, declined and plain when off.
func (s *optSession) checkDeflate(on bool) {
	s.t.Helper()
	c := s.dial([]httphead.Option{wsflate.DefaultParameters.Option()})
	defer c.conn.Close()
	accepted := false
	for _, e := range c.hs.Extensions {
		accepted = accepted || string(e.Name) == wsflate.ExtensionName
	}
	if accepted != on {
		s.t.Fatalf("%s server: permessage-deflate offered, accepted %v (%v), want %v", s.name, accepted, c.hs.Extensions, on)
	}
	msg := bytes.Repeat([]byte("compressible wsplan text "), 4096/25)
	if !on {
		s.echo(c, s.op, msg)
		return
	}
	s.send(c, s.op, msg)
	h, got := s.reply(c)
	if !h.Rsv1() {
		s.t.Fatalf("%s server: %d-byte reply to a compressible %d-byte message has no RSV1: not compressed", s.name, len(got), len(msg))
	}
	plain, err := wsflate.DefaultHelper.Decompress(got)
	if err != nil || h.OpCode != s.op || !bytes.Equal(plain, msg) {
		s.t.Fatalf("%s server: compressed reply %s inflates to %q, %v; want %s %q", s.name, opName(h.OpCode), truncate(plain), err, opName(s.op), truncate(msg))
	}
}

// checkNoDelay echoes a message, then reads TCP_NODELAY on the server's
// end of the connection.
func (s *optSession) checkNoDelay(want int) {
	s.t.Helper()
	c := s.dial(nil)
	defer c.conn.Close()
	s.echo(c, s.op, []byte("nodelay"))
	got, err := serverSockopt(c.conn, unix.IPPROTO_TCP, unix.TCP_NODELAY)
	if err != nil {
		s.t.Fatalf("%s server: %v", s.name, err)
	}
	if (got != 0) != (want != 0) {
		s.t.Errorf("%s server: TCP_NODELAY on the server's socket is %d, want %d", s.name, got, want)
	}
}

// checkClosed sends msg and wants the connection ended instead of a
// whole echo: a close frame with code, or the end of the TCP connection
// (some libraries close the socket before their close frame is out). The
// first fragments of an echo streamed while reading (nhooyr) may come
// first.
func (s *optSession) checkClosed(op ws.OpCode, msg []byte, code ws.StatusCode) {
	s.t.Helper()
	c := s.dial(nil)
	defer c.conn.Close()
	s.send(c, op, msg)
	for {
		h, err := ws.ReadHeader(c.r)
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
			return
		case err != nil:
			s.t.Fatalf("%s server: %v, want close %d or the connection's end", s.name, err, code)
		}
		p := make([]byte, h.Length)
		if _, err := io.ReadFull(c.r, p); err != nil {
			s.t.Fatalf("%s server: read %d-byte payload: %v", s.name, h.Length, err)
		}
		switch {
		case h.OpCode == ws.OpClose:
			if got, _ := ws.ParseCloseFrameData(p); got != code {
				s.t.Errorf("%s server: close code %d, want %d", s.name, got, code)
			}
			return
		case h.Fin:
			s.t.Fatalf("%s server: got a whole %s message %q, want close %d", s.name, opName(h.OpCode), truncate(p), code)
		}
	}
}

// serverSockopt reads an int socket option of the server's end of conn, a
// connection from this process to a server running in it: the socket
// among this process's fds whose local address is conn's remote one and
// whose peer is conn's local one.
func serverSockopt(conn net.Conn, level, opt int) (int, error) {
	local, remote := conn.LocalAddr().(*net.TCPAddr), conn.RemoteAddr().(*net.TCPAddr)
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if sa, err := unix.Getsockname(fd); err != nil || !sameAddr(sa, remote) {
			continue
		}
		if pa, err := unix.Getpeername(fd); err != nil || !sameAddr(pa, local) {
			continue
		}
		return unix.GetsockoptInt(fd, level, opt)
	}
	return 0, fmt.Errorf("no socket of this process is the server's end of %v -> %v", local, remote)
}

// sameAddr reports whether sa is the IPv4 address a.
func sameAddr(sa unix.Sockaddr, a *net.TCPAddr) bool {
	in, ok := sa.(*unix.SockaddrInet4)
	return ok && in.Port == a.Port && net.IP(in.Addr[:]).Equal(a.IP)
}
