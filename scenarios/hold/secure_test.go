package hold

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// TestHoldTLSPings: a hold with pings over TLS (with permessage-deflate,
// which control frames never use): every ping is sealed in a record of
// its own, every pong read out of one, and the connections stay open.
// The counts are asserted, not the timing: every ping sent got its pong.
func TestHoldTLSPings(t *testing.T) {
	srv, tlsOpts := clienttest.TLSServer(t, testserver.Options{Compression: true})
	c := clienttest.NewClient(t, client.Options{Targets: []string{srv.Addr()}, Loops: 2,
		TLS: tlsOpts, Compression: &pmdeflate.Params{}})
	clienttest.MustConnect(t, c, 8)
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(300 * time.Millisecond), Ping: units.Duration(50 * time.Millisecond)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Conns != 8 || res.Alive != 8 || res.Pings == 0 || res.Pongs != res.Pings || len(res.Errors) != 0 {
		t.Fatalf("hold over TLS: %+v; want every ping answered on 8 connections", res)
	}
	if c.Conns() != 8 {
		t.Errorf("%d connections open after the hold, want 8", c.Conns())
	}
}
