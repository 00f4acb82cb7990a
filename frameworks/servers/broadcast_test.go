package servers

import (
	"bytes"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/wsplan/wsplan/frameworks"
)

// TestBroadcast runs the /broadcast convention on every preset whose
// adapter serves it: three members of room 1 (on two ports) and one of
// room 2; a message from a member of room 1 reaches all three and not
// room 2; with include_sender=false it does not come back to its sender.
func TestBroadcast(t *testing.T) {
	for _, p := range frameworks.Presets() {
		t.Run(p.Name, func(t *testing.T) {
			if runApart(t, p.Name) {
				return
			}
			addrs := startBroadcastT(t, p.Name, 2)
			join := func(addr, query string) *client {
				conn, br, _, err := dial(addr, frameworks.BroadcastPath+query)
				if err != nil {
					t.Fatalf("dial %s%s: %v", addr, query, err)
				}
				c := &client{conn: conn, r: conn}
				if br != nil {
					c.r = br
				}
				t.Cleanup(func() { conn.Close() })
				return c
			}
			a1 := join(addrs[0], "?room=1")
			a2 := join(addrs[1], "?room=1")
			quiet := join(addrs[0], "?room=1&include_sender=false")
			other := join(addrs[1], "?room=2")
			time.Sleep(50 * time.Millisecond) // the joins are in before anyone publishes
			msg := bytes.Repeat([]byte{0xa5}, 64)
			a1.mustSend(t, ws.OpBinary, msg)
			for i, c := range []*client{a1, a2, quiet} {
				op, got, err := c.readMessage()
				if err != nil || op != ws.OpBinary || !bytes.Equal(got, msg) {
					t.Fatalf("member %d of room 1: %s %d bytes, %v; want the 64-byte binary message", i, opName(op), len(got), err)
				}
			}
			quiet.mustSend(t, ws.OpBinary, msg[:32])
			for i, c := range []*client{a1, a2} {
				if _, got, err := c.readMessage(); err != nil || len(got) != 32 {
					t.Fatalf("member %d: %d bytes, %v; want the quiet member's 32", i, len(got), err)
				}
			}
			// Neither the quiet sender nor room 2 gets anything: a2 sends
			// once more, and the next message quiet reads must be that one.
			a2.mustSend(t, ws.OpBinary, msg[:40])
			if _, got, err := quiet.readMessage(); err != nil || len(got) != 40 {
				t.Fatalf("quiet member: %d bytes, %v; want a2's 40 (its own 32 came back?)", len(got), err)
			}
			if err := other.conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			if _, err := ws.ReadHeader(other.r); err == nil {
				t.Fatalf("room 2 received a message of room 1")
			}
		})
	}
}

// TestBroadcastFirstMessage: a member that publishes right after its
// handshake, before the server could have seen anything else, gets its
// message back (it is in its room by then). 100 members one after the
// other on every preset's broadcast server: one that files a connection
// in its room only after the upgrade returns loses some (go-netty-ws did,
// about one in ten on two CPUs).
func TestBroadcastFirstMessage(t *testing.T) {
	for _, p := range frameworks.Presets() {
		t.Run(p.Name, func(t *testing.T) {
			if runApart(t, p.Name) {
				return
			}
			addr := startBroadcastT(t, p.Name, 1)[0]
			for i := range 100 {
				conn, br, _, err := dial(addr, frameworks.BroadcastPath+"?room="+strconv.Itoa(i%3))
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				c := &client{conn: conn, r: conn}
				if br != nil {
					c.r = br
				}
				c.mustSend(t, ws.OpBinary, []byte("first"))
				if _, got, err := c.readMessage(); err != nil || string(got) != "first" {
					t.Fatalf("member %d: %q, %v; want its first message back", i, got, err)
				}
				conn.Close()
			}
		})
	}
}

// startBroadcastT starts preset's broadcast server on n free loopback
// ports until the test ends (Close must then succeed), and returns the
// addresses; the test is skipped when the adapter serves no broadcast.
func startBroadcastT(t *testing.T, preset string, n int) []string {
	t.Helper()
	mustBeApart(t, preset)
	a, vals, errs := frameworks.Resolve(preset, "", nil)
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	if a.Broadcast == nil {
		t.Skipf("%s: %s", a.Name, a.NoBroadcastWhy())
	}
	addrs := freeAddrs(t, n)
	srv, err := a.StartBroadcast(frameworks.Config{Addrs: addrs, Path: frameworks.BroadcastPath, Payload: testPayload, Values: vals})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return addrs
}
