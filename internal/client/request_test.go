package client

import (
	"strings"
	"testing"
)

// TestRequestWith: a request With a query and headers keeps the
// target's path and query first, the headers before the key, and the key
// where the request keeps it.
func TestRequestWith(t *testing.T) {
	base := newUpgradeRequest(requestSpec{host: "h", uri: "/ws?a=1"})
	r := base.With("u=x", []byte("X-User: x\r\n"))
	s := string(r.buf)
	if !strings.HasPrefix(s, "GET /ws?a=1&u=x HTTP/1.1\r\n") || !strings.Contains(s, "X-User: x\r\nSec-WebSocket-Key: ") || string(r.buf[r.keyOff:r.keyOff+4]) != "AAAA" {
		t.Fatalf("request %q", s)
	}
}
