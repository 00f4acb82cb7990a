package servers

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	gorilla "github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/wsplan/wsplan/frameworks"
	"github.com/wsplan/wsplan/internal/autobahn"
	"github.com/wsplan/wsplan/internal/testenv"
)

// The conformance test runs every registered preset (so a new adapter's
// files are covered without touching this one) as an echo server on two
// loopback ports and checks its wiring:
//
//   - the Autobahn cases of the conformance phase (internal/autobahn, the
//     same code `conformance:` runs) for what they cover: text and binary
//     messages of 0 B to 64 KiB (1.1.x, 1.2.x) and of 64 KiB and 1 MiB
//     (9.1.1, 9.2.1, 9.2.3), pings of 0-125 bytes (2.1-2.4), fragmented
//     text with pings between the fragments (5.3-5.8), a message then close
//     1000 (7.1.1): every case is OK (strict), except exactly the cases the
//     adapter's declared Limits explain (empty messages, one message type),
//     which must fail: a limit is neither hidden nor stale;
//   - with a raw-frame client built on gobwas/ws, asserting exact opcodes
//     and bytes: messages of 1 MiB down to 0 B one after the other on one
//     connection (buffer reuse); a binary message sent as a first frame plus
//     3 continuation frames comes back as one message;
//   - connections on both listen addresses are served concurrently;
//   - a path other than cfg.Path is refused;
//   - Close returns nil, ends open connections, stops the listeners and
//     leaves no goroutine behind (goleak; library goroutines that outlive
//     Close by design are listed with lingeringGoroutines in the adapter's
//     file).
//
// TestConformanceOptions runs the same suite on option settings that change
// how an adapter reads or writes, and TestCompression checks negotiated
// permessage-deflate.
//
// Run one preset with: WSPLAN_SLOW=1 go test ./frameworks/servers -run 'TestConformance/^gws$'

const (
	testPath    = "/ws"
	testPayload = 1024
	ioTimeout   = 10 * time.Second
	maxFrame    = 1 << 20 // the largest message sent
)

func TestConformance(t *testing.T) {
	testenv.Slow(t, "12 s: the conformance suite against every preset")
	presets := frameworks.Presets()
	if len(presets) == 0 {
		t.Fatal("no presets registered")
	}
	for _, p := range presets {
		// Not parallel: each preset allocates loopback ports, and running
		// them one at a time keeps a failure's goroutine dump readable.
		t.Run(p.Name, func(t *testing.T) {
			a := resolveT(t, p.Name, nil)
			if a.Name != p.Framework {
				t.Fatalf("preset %s resolved to adapter %q, want %q", p.Name, a.Name, p.Framework)
			}
			testServer(t, p.Name, nil)
		})
	}
}

// optionVariants are option settings, other than the presets', that change
// how an adapter reads or writes; each runs the whole conformance suite.
// Every adapter also runs with nodelay=false and with compression=true
// (the test client offers no extension, so the server must send plain
// frames; TestCompression checks the negotiated case).
var optionVariants = []struct {
	name string // preset or adapter to start from
	opts map[string]string
}{
	{"gorilla", map[string]string{"read_buffer": "16"}}, // buffer grows for every larger message
	{"fasthttp", map[string]string{"read_buffer": "16"}},
	{"nhooyr", map[string]string{"read_buffer": "16", "read_limit": "2000000"}},
	{"gws", map[string]string{"parallel": "true", "check_utf8": "true", "read_buffer": "64"}},
	{"gws_std", map[string]string{"parallel": "true", "parallel_golimit": "2"}},
	{"gobwas", map[string]string{"read_buffer": "512"}},
	{"quickws", map[string]string{"parse_mode": "bufio"}},
	{"quickws", map[string]string{"read_buffer": "4096"}},
}

func TestConformanceOptions(t *testing.T) {
	testenv.Slow(t, "9 s: the conformance suite per preset option")
	type variant struct {
		name string
		opts map[string]string
	}
	var variants []variant
	for _, a := range frameworks.Adapters() {
		variants = append(variants,
			variant{a.Name, map[string]string{"nodelay": "false"}},
			variant{a.Name, map[string]string{"compression": "true"}})
	}
	for _, v := range optionVariants {
		variants = append(variants, variant(v))
	}
	for _, v := range variants {
		t.Run(v.name+"/"+optString(v.opts), func(t *testing.T) { testServer(t, v.name, v.opts) })
	}
}

func optString(opts map[string]string) string {
	keys := slices.Sorted(maps.Keys(opts))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + opts[k]
	}
	return strings.Join(parts, ",")
}

func resolveT(t *testing.T, name string, opts map[string]string) frameworks.Adapter {
	t.Helper()
	skipNoCompression(t, name, opts)
	a, _, errs := frameworks.Resolve(name, "", opts)
	if len(errs) > 0 {
		t.Fatalf("resolve %s %v: %v", name, opts, errors.Join(errs...))
	}
	return a
}

// startT resolves name with opts and starts it on two free loopback ports.
// The test is skipped when the adapter declares it has no
// permessage-deflate (Limits.NoCompression) and opts ask for it.
func startT(t *testing.T, name string, opts map[string]string) (a frameworks.Adapter, srv frameworks.Server, addrs []string) {
	t.Helper()
	mustBeApart(t, name)
	skipNoCompression(t, name, opts)
	a, vals, errs := frameworks.Resolve(name, "", opts)
	if len(errs) > 0 {
		t.Fatalf("resolve %s %v: %v", name, opts, errors.Join(errs...))
	}
	addrs = freeAddrs(t, 2)
	srv, err := a.Start(frameworks.Config{Addrs: addrs, Path: testPath, Payload: testPayload, Values: vals})
	if err != nil {
		t.Fatalf("start %s %v on %v: %v", name, opts, addrs, err)
	}
	return a, srv, addrs
}

// skipNoCompression skips the test when opts ask for compression of an
// adapter that declares it has no permessage-deflate (Resolve refuses it).
func skipNoCompression(t *testing.T, name string, opts map[string]string) {
	t.Helper()
	if on, _ := strconv.ParseBool(opts["compression"]); on {
		if a, _, _ := frameworks.Resolve(name, "", nil); a.Limits.NoCompression != "" {
			t.Skipf("%s: no permessage-deflate: %s", name, a.Limits.NoCompression)
		}
	}
}

// testServer runs the conformance suite on preset or adapter name with
// opts overriding its options.
func testServer(t *testing.T, name string, opts map[string]string) {
	if runApart(t, name) {
		return
	}
	a := resolveT(t, name, opts)
	leakOpts := []goleak.Option{goleak.IgnoreCurrent()}
	for _, fn := range lingeringOf(a.Name) {
		leakOpts = append(leakOpts, goleak.IgnoreAnyFunction(fn))
	}

	_, vals, _ := frameworks.Resolve(name, "", opts)
	lim := newLimiter(a.Limits, vals)
	_, srv, addrs := startT(t, name, opts)
	closed := false
	defer func() {
		if !closed {
			srv.Close()
		}
	}()

	t.Run("autobahn", func(t *testing.T) { testAutobahn(t, addrs[0], lim) })
	t.Run("sequence", func(t *testing.T) { testSequence(t, addrs[1], lim) })
	t.Run("fragmented_binary", func(t *testing.T) { testFragmented(t, addrs[0], lim) })
	t.Run("concurrent_connections_on_two_ports", func(t *testing.T) { testTwoPorts(t, addrs, lim) })
	t.Run("wrong_path_refused", func(t *testing.T) { testWrongPath(t, addrs[0]) })
	t.Run("server_close", func(t *testing.T) { testServerClose(t, srv, addrs, &closed) })

	if !closed {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		closed = true
	}
	if err := goleak.Find(leakOpts...); err != nil {
		t.Errorf("goroutines left after Close (if the library keeps them by design, list them with lingeringGoroutines in %s.go): %v", a.Name, err)
	}
}

// testSequence sends large then small messages on one connection: a
// reused read buffer must not leak bytes of the previous message into the
// next.
func testSequence(t *testing.T, addr string, lim limiter) {
	rnd := rand.New(rand.NewPCG(1, 2))
	kib := randBytes(rnd, 1<<10)
	mib := randBytes(rnd, 1<<20)
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	c := dialT(t, addr)
	defer c.conn.Close()
	for i, m := range [][]byte{mib, []byte("abc"), {}, kib, allBytes[:7], mib[:70000]} {
		op := ws.OpBinary
		if i%2 == 1 {
			op = ws.OpText
			m = bytes.ToUpper(bytes.Repeat([]byte("x"), len(m)))
		}
		if lim.cannot(op, m) != "" {
			op = lim.op(op)
			if len(m) == 0 {
				continue // the library limit is logged by echo_empty_*
			}
		}
		c.mustSend(t, op, m)
		c.mustEcho(t, op, m)
	}
	c.closeHandshake(t)
}

// testFragmented sends a binary message as a first frame plus three
// continuation frames (Autobahn's fragmentation cases, 5.x, send text).
func testFragmented(t *testing.T, addr string, lim limiter) {
	op := lim.op(ws.OpBinary)
	c := dialT(t, addr)
	defer c.conn.Close()
	parts := [][]byte{[]byte("frag"), []byte("mented "), []byte("in four "), []byte("frames")}
	c.mustWrite(t, ws.NewFrame(op, false, parts[0]))
	for i, part := range parts[1:] {
		c.mustWrite(t, ws.NewFrame(ws.OpContinuation, i == len(parts)-2, part))
	}
	c.mustEcho(t, op, bytes.Join(parts, nil))
	c.closeHandshake(t)
}

// testTwoPorts runs echo sessions on both listen addresses at once.
func testTwoPorts(t *testing.T, addrs []string, lim limiter) {
	const perAddr, messages = 4, 20
	var wg sync.WaitGroup
	errc := make(chan error, perAddr*len(addrs))
	for ai, addr := range addrs {
		for ci := range perAddr {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errc <- echoSession(addr, fmt.Sprintf("addr%d-conn%d", ai, ci), messages, lim)
			}()
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Error(err)
		}
	}
}

// testWrongPath: an upgrade on another path than testPath is refused.
func testWrongPath(t *testing.T, addr string) {
	conn, _, _, err := dial(addr, "/not-the-ws-path")
	if err == nil {
		conn.Close()
		t.Fatalf("upgrade on /not-the-ws-path succeeded, want it refused (only %s is served)", testPath)
	}
}

// testServerClose closes srv with one connection open: Close returns nil
// in time, the connection ends and the listeners are closed. It sets
// *closed once Close was called (it must not be called again, also when
// it hangs and the test stops here).
func testServerClose(t *testing.T, srv frameworks.Server, addrs []string, closed *bool) {
	c := dialT(t, addrs[0])
	defer c.conn.Close()
	c.mustSend(t, ws.OpBinary, []byte("open"))
	c.mustEcho(t, ws.OpBinary, []byte("open"))

	closeT(t, srv, addrs, closed)
	// The open connection must end: the server may send a close frame
	// (1001 going away) first, then EOF, or end TCP at once.
	if err := c.drainUntilEOF(); err != nil {
		t.Errorf("open connection after Close: %v", err)
	}
}

// closeT closes srv and wants Close to return nil within ioTimeout and
// the listeners on addrs closed. It sets *closed (when not nil) once
// Close was called, so that a hung Close is not called again.
func closeT(t *testing.T, srv frameworks.Server, addrs []string, closed *bool) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- srv.Close() }()
	select {
	case err := <-done:
		if closed != nil {
			*closed = true
		}
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(ioTimeout):
		if closed != nil {
			*closed = true
		}
		t.Fatalf("Close did not return within %v", ioTimeout)
	}
	for _, addr := range addrs {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			t.Errorf("dial %s after Close succeeded, want the listener closed", addr)
		}
	}
}

// wiringCases are the Autobahn cases the test runs on every adapter, by
// what they send: text messages, binary messages, or control frames only.
var wiringCases = struct{ text, binary, control []string }{
	text:    []string{"1.1.1", "1.1.2", "1.1.3", "1.1.4", "1.1.5", "1.1.6", "1.1.7", "1.1.8", "5.3", "5.4", "5.5", "5.6", "5.7", "5.8", "7.1.1", "9.1.1"},
	binary:  []string{"1.2.1", "1.2.2", "1.2.3", "1.2.4", "1.2.5", "1.2.6", "1.2.7", "1.2.8", "9.2.1", "9.2.3"},
	control: []string{"2.1", "2.2", "2.3", "2.4"},
}

// emptyMessageCases send an empty message.
var emptyMessageCases = []string{"1.1.1", "1.2.1"}

// testAutobahn runs wiringCases with internal/autobahn: each is OK, but
// those the adapter's declared limits explain, which must not be.
func testAutobahn(t *testing.T, addr string, lim limiter) {
	cases := slices.Concat(wiringCases.text, wiringCases.binary, wiringCases.control)
	why := map[string]string{} // case id -> the limit that makes it fail
	for _, id := range cases {
		op := ws.OpCode(0)
		switch {
		case slices.Contains(wiringCases.text, id):
			op = ws.OpText
		case slices.Contains(wiringCases.binary, id):
			op = ws.OpBinary
		}
		if op != 0 && lim.only != 0 && op != lim.only {
			why[id] = lim.l.OneMessageTypeWhy
		}
		if slices.Contains(emptyMessageCases, id) && lim.l.NoEmptyMessages != "" {
			why[id] = lim.l.NoEmptyMessages
		}
	}
	rep, err := autobahn.Run(t.Context(), autobahn.Target{URL: "ws://" + addr + testPath},
		autobahn.Options{Cases: cases, Parallel: 4, CaseTimeout: ioTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cases != len(cases) {
		t.Fatalf("%d cases ran, want %d", rep.Cases, len(cases))
	}
	for _, r := range rep.Results {
		switch limit, limited := why[r.ID]; {
		case !r.Pass && !limited:
			t.Errorf("case %s (%s): %s: %s", r.ID, r.Description, r.Verdict, r.Observed)
		case r.Pass && limited:
			t.Errorf("case %s (%s) is %s, but the adapter declares a limit that should fail it (%s): remove the stale limit", r.ID, r.Description, r.Verdict, limit)
		case limited:
			t.Logf("case %s %s as the declared limit says: %s", r.ID, r.Verdict, limit)
		}
	}
}

// TestCloseRightAfterStart closes every preset before any client comes:
// Close must not wait for serve goroutines that have not run yet, and must
// leave no goroutine behind.
func TestCloseRightAfterStart(t *testing.T) {
	testenv.Slow(t, "3 s: a close right after start, per preset")
	for _, p := range frameworks.Presets() {
		t.Run(p.Name, func(t *testing.T) {
			if runApart(t, p.Name) {
				return
			}
			leakOpts := []goleak.Option{goleak.IgnoreCurrent()}
			for _, fn := range lingeringOf(p.Framework) {
				leakOpts = append(leakOpts, goleak.IgnoreAnyFunction(fn))
			}
			for range 3 {
				_, srv, addrs := startT(t, p.Name, nil)
				closeT(t, srv, addrs, nil)
			}
			if err := goleak.Find(leakOpts...); err != nil {
				t.Errorf("goroutines left after Close: %v", err)
			}
		})
	}
}

// TestCompression checks permessage-deflate end to end for every adapter
// with compression=true: a client offering the extension (gorilla, no
// context takeover) gets it, the echoes are exact, and the server's replies
// are actually compressed on the wire.
func TestCompression(t *testing.T) {
	testenv.Slow(t, "2 s: permessage-deflate against every preset")
	for _, a := range frameworks.Adapters() {
		t.Run(a.Name, func(t *testing.T) {
			if runApart(t, a.Name) {
				return
			}
			_, srv, addrs := startT(t, a.Name, map[string]string{"compression": "true"})
			defer srv.Close()

			var wire countingConn
			d := gorilla.Dialer{
				EnableCompression: true,
				HandshakeTimeout:  ioTimeout,
				NetDial: func(network, addr string) (net.Conn, error) {
					c, err := net.Dial(network, addr)
					wire.Conn = c
					return &wire, err
				},
			}
			c, resp, err := d.Dial("ws://"+addrs[0]+testPath, nil)
			if err != nil {
				t.Fatalf("dial with permessage-deflate offered: %v", err)
			}
			defer c.Close()
			if ext := resp.Header.Get("Sec-WebSocket-Extensions"); !strings.Contains(ext, "permessage-deflate") {
				t.Fatalf("server did not accept permessage-deflate (Sec-WebSocket-Extensions: %q), but compression=true", ext)
			}
			text := bytes.Repeat([]byte("compressible wsplan text "), 64<<10/25)
			rnd := rand.New(rand.NewPCG(3, 4))
			msgs := []struct {
				typ  int
				data []byte
			}{
				{gorilla.TextMessage, text},
				{gorilla.BinaryMessage, randBytes(rnd, 100<<10)},
				{gorilla.TextMessage, []byte("short")},
				{gorilla.BinaryMessage, []byte{}},
				{gorilla.TextMessage, text},
			}
			for i, m := range msgs {
				before := wire.read.Load()
				if err := c.SetWriteDeadline(time.Now().Add(ioTimeout)); err != nil {
					t.Fatal(err)
				}
				if err := c.WriteMessage(m.typ, m.data); err != nil {
					t.Fatalf("message %d: write: %v", i, err)
				}
				if err := c.SetReadDeadline(time.Now().Add(ioTimeout)); err != nil {
					t.Fatal(err)
				}
				typ, got, err := c.ReadMessage()
				if err != nil {
					t.Fatalf("message %d (%d bytes): read echo: %v", i, len(m.data), err)
				}
				if typ != m.typ || !bytes.Equal(got, m.data) {
					t.Fatalf("message %d: echo is type %d, %s; want type %d", i, typ, firstDiff(got, m.data), m.typ)
				}
				if onWire := wire.read.Load() - before; len(m.data) == len(text) && onWire > int64(len(text)/4) {
					t.Errorf("message %d: %d bytes of repetitive text came back as %d bytes on the wire, want them compressed (< %d)", i, len(text), onWire, len(text)/4)
				}
			}
			if err := c.WriteControl(gorilla.CloseMessage, gorilla.FormatCloseMessage(gorilla.CloseNormalClosure, ""), time.Now().Add(ioTimeout)); err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.ReadMessage(); !gorilla.IsCloseError(err, gorilla.CloseNormalClosure) {
				t.Errorf("after close 1000: %v, want the server's close 1000", err)
			}
		})
	}
}

// countingConn counts the bytes read from the server.
type countingConn struct {
	net.Conn
	read atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// echoSession sends messages distinct per connection and checks each echo.
func echoSession(addr, id string, messages int, lim limiter) error {
	c, err := dialClient(addr)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	for i := range messages {
		op := ws.OpBinary
		if i%2 == 0 {
			op = ws.OpText
		}
		op = lim.op(op)
		want := []byte(fmt.Sprintf("%s message %d %s", id, i, strings.Repeat("z", i*97)))
		if err := c.write(ws.NewFrame(op, true, want)); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		gotOp, got, err := c.readMessage()
		if err != nil {
			return fmt.Errorf("%s message %d: %w", id, i, err)
		}
		if gotOp != op || !bytes.Equal(got, want) {
			return fmt.Errorf("%s message %d: got %s %q, want %s %q", id, i, opName(gotOp), truncate(got), opName(op), truncate(want))
		}
	}
	if err := c.write(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusNormalClosure, ""))); err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	if f, err := c.readFrame(); err != nil || f.Header.OpCode != ws.OpClose {
		return fmt.Errorf("%s: answer to close: %s frame, %v", id, opName(f.Header.OpCode), err)
	}
	return nil
}

// limiter applies an adapter's declared Limits to the checks: the Autobahn
// cases the library cannot pass must fail (testAutobahn), and checks that
// merely use a message type switch to the one the server handles.
type limiter struct {
	l    frameworks.Limits
	only ws.OpCode // 0 = both types
}

func newLimiter(l frameworks.Limits, values map[string]string) limiter {
	lim := limiter{l: l}
	if l.OneMessageType != nil {
		switch l.OneMessageType(values) {
		case "text":
			lim.only = ws.OpText
		case "binary":
			lim.only = ws.OpBinary
		}
	}
	return lim
}

// cannot returns why the server cannot echo this message, or "".
func (lim limiter) cannot(op ws.OpCode, payload []byte) string {
	if len(payload) == 0 && lim.l.NoEmptyMessages != "" {
		return lim.l.NoEmptyMessages
	}
	if lim.only != 0 && op != lim.only {
		return lim.l.OneMessageTypeWhy
	}
	return ""
}

// op is the message type to use where a check needs one: the server's own
// when it handles one type only.
func (lim limiter) op(op ws.OpCode) ws.OpCode {
	if lim.only != 0 {
		return lim.only
	}
	return op
}
