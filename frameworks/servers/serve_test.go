package servers

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
)

func TestParseAddrs(t *testing.T) {
	good := []struct {
		spec string
		want []string
	}{
		{"127.0.0.1:9000", []string{"127.0.0.1:9000"}},
		{"127.0.0.1:9000-9002", []string{"127.0.0.1:9000", "127.0.0.1:9001", "127.0.0.1:9002"}},
		{"127.0.0.1:9000-9000", []string{"127.0.0.1:9000"}},
		{"127.0.0.1:9000,127.0.0.2:9000", []string{"127.0.0.1:9000", "127.0.0.2:9000"}},
		{"127.0.0.1:9000-9001, 127.0.0.2:9005", []string{"127.0.0.1:9000", "127.0.0.1:9001", "127.0.0.2:9005"}},
		{"[::1]:9000-9001", []string{"[::1]:9000", "[::1]:9001"}},
		{"[::1]:9000,127.0.0.1:9000", []string{"[::1]:9000", "127.0.0.1:9000"}},
		{"localhost:1", []string{"localhost:1"}},
		{"0.0.0.0:65535", []string{"0.0.0.0:65535"}},
	}
	for _, tc := range good {
		got, err := ParseAddrs(tc.spec)
		if err != nil {
			t.Errorf("ParseAddrs(%q): %v", tc.spec, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ParseAddrs(%q) = %q, want %q", tc.spec, got, tc.want)
		}
	}
	if got, err := ParseAddrs("127.0.0.1:9000-9049"); err != nil || len(got) != 50 || got[0] != "127.0.0.1:9000" || got[49] != "127.0.0.1:9049" {
		t.Errorf("ParseAddrs(127.0.0.1:9000-9049) = %d addrs (%q...%q), %v; want 50, 9000...9049", len(got), first(got), last(got), err)
	}

	bad := []struct {
		spec, wantErr string
	}{
		{"", "addrs: empty"},
		{"   ", "addrs: empty"},
		{"9000", "missing port in address"},
		{":9000", "missing host"},
		{"127.0.0.1", "missing port in address"},
		{"127.0.0.1:", `port "": want a number`},
		{"127.0.0.1:abc", `port "abc": want a number`},
		{"127.0.0.1:0", "port 0: want 1..65535"},
		{"127.0.0.1:65536", "port 65536: want 1..65535"},
		{"127.0.0.1:9001-9000", "port range 9001-9000 runs backwards"},
		{"127.0.0.1:9000-", `port "": want a number`},
		{"127.0.0.1:-9000", `port "": want a number`},
		{"127.0.0.1:9000-9001-9002", `port "9001-9002": want a number`},
		{"::1:9000", "too many colons"},
		{"127.0.0.1:9000,,127.0.0.1:9001", "empty element between commas"},
		{"127.0.0.1:9000,", "empty element between commas"},
		{"127.0.0.1:9000-9002,127.0.0.1:9002", "127.0.0.1:9002 is listed twice"},
	}
	for _, tc := range bad {
		got, err := ParseAddrs(tc.spec)
		if err == nil {
			t.Errorf("ParseAddrs(%q) = %q, want an error containing %q", tc.spec, got, tc.wantErr)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseAddrs(%q) error = %q, want it to contain %q", tc.spec, err, tc.wantErr)
		}
		if got != nil {
			t.Errorf("ParseAddrs(%q) returned %q with its error, want nil", tc.spec, got)
		}
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

func TestServeErrors(t *testing.T) {
	// A port held by a plain listener (no SO_REUSEPORT) cannot be shared.
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	free := freeAddrs(t, 1)

	cases := []struct {
		name    string
		fw      string
		opts    map[string]string
		addrs   []string
		path    string
		payload int
		wantErr []string
	}{
		{"unknown framework", "no_such_fw", nil, free, "/ws", 1024,
			[]string{`unknown framework "no_such_fw"`, "gorilla"}},
		{"bad bool option", "gorilla", map[string]string{"nodelay": "yes please"}, free, "/ws", 1024,
			[]string{`option nodelay: want true or false, got "yes please"`}},
		{"bad int option", "gorilla", map[string]string{"read_buffer": "-1"}, free, "/ws", 1024,
			[]string{"option read_buffer: must be >= 0, got -1"}},
		{"int option above its max", "gorilla", map[string]string{"read_buffer": "67108865"}, free, "/ws", 1024,
			[]string{"option read_buffer: must be <= 67108864, got 67108865"}},
		{"greatws pool_max below its min", "greatws", map[string]string{"pool_max": "0"}, free, "/ws", 1024,
			[]string{"option pool_max: must be >= 1, got 0"}},
		{"greatws pool smaller than its idle size", "greatws", map[string]string{"pool_max": "10"}, free, "/ws", 1024,
			[]string{"options pool_init (240) and pool_min (240) must be <= pool_max (10)"}},
		{"nbio max_blocking_online below its min", "nbio_mixed", map[string]string{"max_blocking_online": "0"}, free, "/ws", 1024,
			[]string{"option max_blocking_online: must be >= 1, got 0"}},
		{"unknown option", "gorilla", map[string]string{"parallel": "true"}, free, "/ws", 1024,
			[]string{`framework gorilla has no option "parallel"`}},
		{"every option problem at once", "gws", map[string]string{"parallel": "x", "colour": "red"}, free, "/ws", 1024,
			[]string{`framework gws has no option "colour"`, "option parallel: want true or false"}},
		{"bad enum option", "gws", map[string]string{"server": "netpoll"}, free, "/ws", 1024,
			[]string{`option server: want one of gws|std, got "netpoll"`}},
		{"port in use", "gorilla", nil, []string{held.Addr().String()}, "/ws", 1024,
			[]string{"start gorilla: listen " + held.Addr().String(), "address already in use"}},
		{"port in use after a free one", "gws", nil, []string{free[0], held.Addr().String()}, "/ws", 1024,
			[]string{"start gws: listen " + held.Addr().String(), "address already in use"}},
		{"no address", "gorilla", nil, nil, "/ws", 1024,
			[]string{"no listen address"}},
		{"relative path", "gorilla", nil, free, "ws", 1024,
			[]string{`path "ws": must start with /`}},
		{"zero payload", "gorilla", nil, free, "/ws", 0,
			[]string{"payload: must be > 0, got 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The context is already done: a Serve that wrongly starts
			// returns at once instead of hanging the test.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := Serve(ctx, tc.fw, tc.opts, tc.addrs, tc.path, tc.payload, nil)
			if err == nil {
				t.Fatalf("Serve succeeded, want an error containing %q", tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Serve error = %q, want it to contain %q", err, w)
				}
			}
		})
	}
	// A failed start must not leave the free port bound.
	ln, err := net.Listen("tcp", free[0])
	if err != nil {
		t.Fatalf("port %s still bound after failed starts: %v", free[0], err)
	}
	ln.Close()
}

func TestServeRunsUntilCancelled(t *testing.T) {
	addrs := freeAddrs(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, "gorilla", map[string]string{"read_buffer": "64"}, addrs, "/echo", 1024, nil)
	}()

	// Wait for the listeners, then echo once on each address.
	for _, addr := range addrs {
		var c *client
		deadline := time.Now().Add(5 * time.Second)
		for {
			conn, br, _, err := dial(addr, "/echo")
			if err == nil {
				c = &client{conn: conn, r: conn}
				if br != nil {
					c.r = br
				}
				break
			}
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("server on %s not reachable: %v", addr, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		c.mustSend(t, ws.OpBinary, []byte("served"))
		c.mustEcho(t, ws.OpBinary, []byte("served"))
		c.conn.Close()
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned %v before its context was cancelled", err)
	default:
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of cancel")
	}
	for _, addr := range addrs {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("port %s still bound after Serve returned: %v", addr, err)
			continue
		}
		ln.Close()
	}
}
