package servers

import (
	"bytes"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/frameworks"
	"github.com/wsplan/wsplan/internal/testenv"
)

// Checks of the nbio, greatws, hertz and nettyws adapters beyond the shared
// conformance suite: option validation, and what the suite cannot reach
// because of a library limitation (nbio drops empty messages, go-netty-ws
// serves one message type).

func startOpts(t *testing.T, name string, opts map[string]string) (frameworks.Server, []string, error) {
	t.Helper()
	mustBeApart(t, name)
	a, vals, errs := frameworks.Resolve(name, "", opts)
	if len(errs) > 0 {
		t.Fatalf("resolve %s %v: %v", name, opts, errors.Join(errs...))
	}
	addrs := freeAddrs(t, 2)
	srv, err := a.Start(frameworks.Config{Addrs: addrs, Path: testPath, Payload: testPayload, Values: vals})
	return srv, addrs, err
}

// Option values the libraries would replace by their own defaults, or
// cannot start with, are refused by Resolve (that is, at plan load and by
// `wsplan serve --opt`), before anything listens.
func TestBatchBResolveRejects(t *testing.T) {
	tests := []struct {
		name    string
		opts    map[string]string
		wantErr string
	}{
		{"nbio_mixed", map[string]string{"max_blocking_online": "0"}, "option max_blocking_online: must be >= 1, got 0"},
		{"greatws", map[string]string{"pool_init": "0"}, "option pool_init: must be >= 1, got 0"},
		{"greatws", map[string]string{"pool_min": "0"}, "option pool_min: must be >= 1, got 0"},
		{"greatws_event", map[string]string{"pool_max": "0"}, "option pool_max: must be >= 1, got 0"},
		{"greatws", map[string]string{"max_events": "0"}, "option max_events: must be >= 1, got 0"},
		{"greatws", map[string]string{"pool_min": "241"}, "options pool_init (240) and pool_min (241) must be <= pool_max (240)"},
		{"greatws", map[string]string{"pool_init": "500", "pool_max": "300"}, "options pool_init (500) and pool_min (240) must be <= pool_max (300)"},
		{"nettyws", map[string]string{"compression": "true"}, "option compression: nettyws has no permessage-deflate: go-netty-ws v1.0.7 compresses without regard to negotiation"},
		{"nettyws", map[string]string{"compression": "1"}, "option compression: nettyws has no permessage-deflate"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+optString(tt.opts), func(t *testing.T) {
			_, _, errs := frameworks.Resolve(tt.name, "", tt.opts)
			if err := errors.Join(errs...); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Resolve error %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	// The bounds hold together: a pool of 80 is fine when all three say so.
	if _, _, errs := frameworks.Resolve("greatws", "", map[string]string{"pool_init": "80", "pool_min": "80", "pool_max": "80"}); len(errs) > 0 {
		t.Errorf("greatws pool of 80: %v", errs)
	}
}

// echoNonEmpty runs messages of both opcodes (or only op when it is not
// 0), large and small, whole and fragmented, with a ping in between, on one
// connection.
func echoNonEmpty(t *testing.T, addr string, only ws.OpCode) {
	t.Helper()
	c := dialT(t, addr)
	defer c.conn.Close()
	big := bytes.Repeat([]byte("0123456789abcdef"), 70000/16)
	for i, m := range [][]byte{big, []byte("a"), big[:1000], []byte("xyz"), big[:5]} {
		op := ws.OpBinary
		if i%2 == 1 {
			op = ws.OpText
		}
		if only != 0 {
			op = only
		}
		c.mustSend(t, op, m)
		c.mustEcho(t, op, m)
	}
	op := ws.OpText
	if only != 0 {
		op = only
	}
	c.mustWrite(t, ws.NewFrame(op, false, []byte("part one, ")))
	c.mustWrite(t, ws.NewPingFrame([]byte("p")))
	c.mustPong(t, []byte("p"))
	c.mustWrite(t, ws.NewFrame(ws.OpContinuation, true, []byte("part two")))
	c.mustEcho(t, op, []byte("part one, part two"))
	c.closeHandshake(t)
}

// nbio v1.6.8 never calls OnMessage for a message without payload bytes
// (websocket.Conn.Parse hands a message on only once it has buffered some),
// so the shared suite's empty-message echoes fail for every nbio preset.
// This checks everything else the suite's sequence test would have covered
// after that point, with nbio's default and with tiny read buffers.
func TestBatchBNbioNonEmpty(t *testing.T) {
	testenv.Slow(t, "1 s: nbio's option sets")
	for _, name := range []string{"nbio_blocking", "nbio_mixed", "nbio_nonblocking", "nbio_std"} {
		for _, opts := range []map[string]string{nil, {"read_buffer": "16"}} {
			t.Run(name+"/"+optString(opts), func(t *testing.T) {
				if runApart(t, name) {
					return
				}
				srv, addrs, err := startOpts(t, name, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer srv.Close()
				echoNonEmpty(t, addrs[0], 0)
				echoNonEmpty(t, addrs[1], 0)
				if err := srv.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
		}
	}
}

// go-netty-ws writes every message with the server's one opcode and answers
// the other with close 1003, so each message_type is checked with its own
// opcode (echoed unchanged) and the other (refused, not mangled).
func TestBatchBNettywsOneMessageType(t *testing.T) {
	for _, mt := range []struct {
		value         string
		served, other ws.OpCode
	}{
		{frameworks.NettywsBinary, ws.OpBinary, ws.OpText},
		{frameworks.NettywsText, ws.OpText, ws.OpBinary},
	} {
		t.Run(mt.value, func(t *testing.T) {
			srv, addrs, err := startOpts(t, "nettyws", map[string]string{"message_type": mt.value})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			echoNonEmpty(t, addrs[0], mt.served)

			c := dialT(t, addrs[1])
			defer c.conn.Close()
			c.mustSend(t, mt.served, []byte{})
			c.mustEcho(t, mt.served, []byte{})
			c.mustSend(t, mt.other, []byte("the other type"))
			f, err := c.readFrame()
			if err != nil {
				t.Fatalf("answer to a %s message: %v", opName(mt.other), err)
			}
			if code, _ := ws.ParseCloseFrameData(f.Payload); f.Header.OpCode != ws.OpClose || code != ws.StatusUnsupportedData {
				t.Fatalf("answer to a %s message: %s frame %q, want close 1003", opName(mt.other), opName(f.Header.OpCode), truncate(f.Payload))
			}
		})
	}
}

// greatws event loops cannot be stopped, so servers with the same loop
// configuration share one. Closing one server must leave the other's
// connections and listeners working.
func TestBatchBGreatwsSharedLoop(t *testing.T) {
	if runApart(t, "greatws") {
		return
	}
	small := map[string]string{"event_loops": "1", "pool_init": "2", "pool_min": "2", "pool_max": "4"}
	a, addrsA, err := startOpts(t, "greatws", small)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	evOpts := map[string]string{"callback": frameworks.GreatwsEventLoop}
	for k, v := range small {
		evOpts[k] = v
	}
	b, addrsB, err := startOpts(t, "greatws", evOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	cb := dialT(t, addrsB[0])
	defer cb.conn.Close()
	cb.mustSend(t, ws.OpText, []byte("before"))
	cb.mustEcho(t, ws.OpText, []byte("before"))
	echoNonEmpty(t, addrsA[0], 0)

	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	cb.mustSend(t, ws.OpBinary, []byte("after the other server closed"))
	cb.mustEcho(t, ws.OpBinary, []byte("after the other server closed"))
	echoNonEmpty(t, addrsB[1], 0)
	cb.closeHandshake(t)
}

// TestBatchBNoDelay checks TCP_NODELAY on the server's side of an upgraded
// connection, which runs in this process: every fd whose socket has the
// server's address as local end and the client's as remote end.
func TestBatchBNoDelay(t *testing.T) {
	testenv.Slow(t, "2 s: nodelay per preset")
	for _, name := range []string{"nbio_blocking", "nbio_mixed", "nbio_nonblocking", "nbio_std", "greatws", "greatws_event", "hertz", "hertz_std", "nettyws"} {
		for _, nodelay := range []bool{true, false} {
			opts := map[string]string{"nodelay": strconv.FormatBool(nodelay)}
			t.Run(name+"/"+optString(opts), func(t *testing.T) {
				if runApart(t, name) {
					return
				}
				srv, addrs, err := startOpts(t, name, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer srv.Close()
				c := dialT(t, addrs[0])
				defer c.conn.Close()
				c.mustSend(t, ws.OpBinary, []byte("x"))
				c.mustEcho(t, ws.OpBinary, []byte("x"))
				got, n := serverNoDelay(t, c.conn.RemoteAddr(), c.conn.LocalAddr())
				if n == 0 {
					t.Fatalf("found no socket %v <- %v in this process", c.conn.RemoteAddr(), c.conn.LocalAddr())
				}
				for _, on := range got {
					if on != nodelay {
						t.Errorf("server socket TCP_NODELAY = %v, want %v", on, nodelay)
					}
				}
			})
		}
	}
}

// serverNoDelay returns TCP_NODELAY of every socket of this process bound to
// local and connected to remote.
func serverNoDelay(t *testing.T, local, remote net.Addr) ([]bool, int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("list fds: %v", err)
	}
	lp, rp := local.(*net.TCPAddr).Port, remote.(*net.TCPAddr).Port
	var out []bool
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// Other fds may be closed or not sockets at all: skip them.
		sa, err := unix.Getsockname(fd)
		if err != nil {
			continue
		}
		pa, err := unix.Getpeername(fd)
		if err != nil {
			continue
		}
		s4, ok1 := sa.(*unix.SockaddrInet4)
		p4, ok2 := pa.(*unix.SockaddrInet4)
		if !ok1 || !ok2 || s4.Port != lp || p4.Port != rp {
			continue
		}
		v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
		if err != nil {
			continue
		}
		out = append(out, v != 0)
	}
	return out, len(out)
}

// TestBatchBCloseRightAfterStart closes servers before their accept loops
// may have started: Close must still stop them and return. Three rounds
// each; twenty with WSPLAN_SLOW=1 (an nbio server takes 200 ms to close:
// the twenty took 13 s).
func TestBatchBCloseRightAfterStart(t *testing.T) {
	testenv.Slow(t, "2 s: a close right after start, per preset option")
	rounds := 3
	if testenv.SlowEnabled() {
		rounds = 20
	}
	for _, name := range []string{"nbio_blocking", "nbio_mixed", "nbio_nonblocking", "nbio_std", "greatws", "hertz", "hertz_std", "nettyws"} {
		t.Run(name, func(t *testing.T) {
			if runApart(t, name) {
				return
			}
			for range rounds {
				srv, addrs, err := startOpts(t, name, nil)
				if err != nil {
					t.Fatal(err)
				}
				closeT(t, srv, addrs, nil)
			}
		})
	}
}

// TestBatchBStartBusyPort starts each server on a free address and one held
// by a listener without SO_REUSEPORT: Start must fail and leave the free
// address closed too.
func TestBatchBStartBusyPort(t *testing.T) {
	for _, name := range []string{"nbio_blocking", "nbio_mixed", "nbio_nonblocking", "nbio_std", "greatws", "hertz", "hertz_std", "nettyws"} {
		t.Run(name, func(t *testing.T) {
			if runApart(t, name) {
				return
			}
			busy, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer busy.Close()
			free := freeAddrs(t, 1)[0]
			mustBeApart(t, name)
			a, vals, errs := frameworks.Resolve(name, "", nil)
			if len(errs) > 0 {
				t.Fatal(errors.Join(errs...))
			}
			srv, err := a.Start(frameworks.Config{Addrs: []string{free, busy.Addr().String()}, Path: testPath, Payload: testPayload, Values: vals})
			if err == nil {
				srv.Close()
				t.Fatalf("Start with %s in use succeeded", busy.Addr())
			}
			if !strings.Contains(err.Error(), busy.Addr().String()) {
				t.Errorf("error %q does not name the busy address %s", err, busy.Addr())
			}
			if c, err := net.DialTimeout("tcp", free, time.Second); err == nil {
				c.Close()
				t.Errorf("%s still accepts connections after the failed Start", free)
			}
		})
	}
}
