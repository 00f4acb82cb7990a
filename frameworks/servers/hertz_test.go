package servers

import (
	"net"
	"testing"
	"time"

	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/network/netpoll"
)

// TestRecoverNetpollExit: hertz's netpoll transport panics when netpoll's
// Serve fails (here: its listener is closed before Run); the goroutine
// that runs a hertz server survives it, with the transport closed, and
// any other panic still goes on.
func TestRecoverNetpollExit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // netpoll cannot take the fd of a closed listener
	h := server.New(server.WithTransport(netpoll.NewTransporter), server.WithListener(ln), server.WithDisablePrintRoute(true))
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }() // what recoverNetpollExit lets through
		defer recoverNetpollExit(h, ln)
		_ = h.Run()
		done <- "Run returned"
	}()
	select {
	case got := <-done:
		if got != nil {
			t.Errorf("first: %v, want the netpoll panic recovered (and Run not to return)", got)
		}
	case <-time.After(ioTimeout):
		t.Fatal("Run neither returned nor panicked")
	}

	go func() {
		defer func() { done <- recover() }()
		defer recoverNetpollExit(h, ln)
		panic("another")
	}()
	if got := <-done; got != "another" {
		t.Errorf("another panic: %v, want it to go on", got)
	}
}
