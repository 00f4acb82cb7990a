package echo

import (
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// TestEchoCompressed: under permessage-deflate the echo kind sends its
// pre-compressed frame and counts the bytes both ways: chat-like text
// crosses the wire at under half its size, every echo intact. (The core's
// TestCompressionInterop checks the receiving side against several
// libraries.)
func TestEchoCompressed(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Compression: true})
	c := clienttest.NewClient(t, client.Options{Targets: []string{srv.Addr()}, Loops: 2, Compression: &pmdeflate.Params{}})
	clienttest.MustConnect(t, c, 20)
	res, err := client.RunAs[Result](c, t.Context(), &Params{Total: 2000, Concurrency: 20, Payload: new(units.Size(1024)), Text: true, Verify: new(true), PayloadKind: "text"}, nil)
	if err != nil || res.Success != 2000 || res.Failed != 0 {
		t.Fatalf("echo %d ok, %d failed (%v), %v", res.Success, res.Failed, res.Errors, err)
	}
	ratio := float64(res.BytesWire) / float64(res.BytesPayload)
	if res.BytesPayload != 2*2000*1024 || ratio >= 0.5 {
		t.Errorf("payload %d bytes (want %d), wire %d: ratio %.3f, want < 0.5", res.BytesPayload, 2*2000*1024, res.BytesWire, ratio)
	}
}
