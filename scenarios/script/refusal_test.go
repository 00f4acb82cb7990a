package script

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/proto/socketio"
	"github.com/wsplan/wsplan/internal/prototest"
	"github.com/wsplan/wsplan/internal/units"
)

// TestRefusalNotRetriedByScript: the rule is the dialer's, so it holds
// for every kind that opens connections: a script's 20 users refused by
// a Socket.IO namespace are 20 attempts, though the phase allows a retry.
func TestRefusalNotRetriedByScript(t *testing.T) {
	srv := &prototest.Refuser{Greet: prototest.SIORefuse(`"not authorized"`)}
	c := clienttest.NewClient(t, client.Options{Targets: []string{srv.Start(t)}, Loops: 2, Protocol: client.ProtocolOptions{Name: socketio.Name, Settings: &socketio.Settings{Namespace: "/chat"}}})
	res, err := c.Run(t.Context(), &Params{Steps: steps(t, "steps:\n  - emit: {event: chat, data: '1'}\n"), Users: 20, Iterations: 1, Concurrency: 20,
		Timeout: units.Duration(2 * time.Second), ConnectTimeout: units.Duration(2 * time.Second), Retries: 1, Drain: units.Duration(time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result)
	const want = client.Reason("socket.io: connect refused: not authorized")
	if got := srv.Attempts.Load(); got != 20 || r.OpenFailed != 20 || r.OpenErrors[want] != 20 {
		t.Errorf("%d attempts, %d users failed to open, errors %v; want 20, 20, 20 × %q", got, r.OpenFailed, r.OpenErrors, want)
	}
}
