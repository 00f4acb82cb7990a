package rate

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// runCompressed runs a rate phase of chat-like text on 8 connections to
// srv under permessage-deflate (and TLS with ca), and checks what holds
// on any host: every message sent echoed intact, none lost, and the
// frames (each message compressed on its own) under half the payload.
func runCompressed(t *testing.T, addr string, tlsOpts *client.TLSOptions, d time.Duration) {
	t.Helper()
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: 2, TLS: tlsOpts, Compression: &pmdeflate.Params{}})
	clienttest.MustConnect(t, c, 8)
	r, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(d), Rate: 100,
		Send: Send{Payload: new(units.Size(4096)), Verify: new(true), PayloadKind: "text", Drain: units.Duration(5 * time.Second)}}, nil)
	if err != nil || r.Failed != 0 || r.Lost() != 0 || r.Recv != r.Sent || r.Sent == 0 {
		t.Fatalf("rate: sent %d recv %d failed %d lost %d %v %v", r.Sent, r.Recv, r.Failed, r.Lost(), r.Errors, err)
	}
	if r.BytesWire*2 >= r.BytesPayload || r.BytesPayload != r.BytesSent+r.BytesRecv {
		t.Errorf("payload %d wire %d (sent %d recv %d): want wire < half of payload", r.BytesPayload, r.BytesWire, r.BytesSent, r.BytesRecv)
	}
	t.Logf("wire/payload %.3f", float64(r.BytesWire)/float64(r.BytesPayload))
}

// TestRateCompressed: under permessage-deflate the open loop compresses
// each message on its own (they differ in their marker) and counts the
// bytes both ways. (The core's TestCompressionInterop checks compressed
// messages both ways against several libraries.)
func TestRateCompressed(t *testing.T) {
	t.Parallel() // counts only, no timing: runs after the timing tests, beside the others like it
	srv := testserver.Start(t, testserver.Options{Compression: true})
	runCompressed(t, srv.Addr(), nil, 300*time.Millisecond)
}

// TestRateTLSCompressed: the same over TLS 1.3: the compressed frames of
// several messages due at once sealed in records, every echo intact.
func TestRateTLSCompressed(t *testing.T) {
	t.Parallel() // counts only, no timing: runs after the timing tests, beside the others like it
	srv, tlsOpts := clienttest.TLSServer(t, testserver.Options{Compression: true})
	runCompressed(t, srv.Addr(), tlsOpts, 300*time.Millisecond)
}
