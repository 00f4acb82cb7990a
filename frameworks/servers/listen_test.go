package servers

import (
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestListenReusePort(t *testing.T) {
	addr := freeAddrs(t, 1)[0]
	a, err := listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// SO_REUSEPORT: a second server process (or a restart) binds the same
	// port while the first still listens.
	b, err := listen(addr)
	if err != nil {
		t.Fatalf("second listen on %s with SO_REUSEPORT: %v", addr, err)
	}
	defer b.Close()
	// A socket without SO_REUSEPORT cannot join them.
	if c, err := net.Listen("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("plain listen on %s succeeded next to SO_REUSEPORT listeners, want EADDRINUSE", addr)
	}
}

func TestListenAllNoDelay(t *testing.T) {
	for _, nodelay := range []bool{true, false} {
		lns, err := listenAll(freeAddrs(t, 1), nodelay)
		if err != nil {
			t.Fatal(err)
		}
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := lns[0].Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}()
		client, err := net.DialTimeout("tcp", lns[0].Addr().String(), ioTimeout)
		if err != nil {
			t.Fatal(err)
		}
		var server net.Conn
		select {
		case server = <-accepted:
		case <-time.After(ioTimeout):
			t.Fatal("accept timed out")
		}
		if server == nil {
			t.Fatal("accept failed")
		}
		got, err := tcpNoDelay(server.(*net.TCPConn))
		if err != nil {
			t.Fatal(err)
		}
		if got != nodelay {
			t.Errorf("nodelay=%v: accepted connection has TCP_NODELAY=%v", nodelay, got)
		}
		server.Close()
		client.Close()
		closeListeners(lns)
	}
}

func TestListenAllClosesOnError(t *testing.T) {
	free := freeAddrs(t, 1)[0]
	_, err := listenAll([]string{free, "127.0.0.1:notaport"}, true)
	if err == nil || !strings.Contains(err.Error(), "listen 127.0.0.1:notaport") {
		t.Fatalf("listenAll with a bad address: err = %v, want it to name the address", err)
	}
	ln, err := net.Listen("tcp", free)
	if err != nil {
		t.Fatalf("%s still bound after listenAll failed: %v", free, err)
	}
	ln.Close()
	if _, err := listenAll(nil, true); err == nil {
		t.Fatal("listenAll(nil) succeeded, want an error")
	}
}

// tcpNoDelay reads TCP_NODELAY back from a connection.
func tcpNoDelay(c *net.TCPConn) (bool, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return false, err
	}
	var v int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		v, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY)
	}); err != nil {
		return false, err
	}
	return v != 0, serr
}
