package script

import (
	"bufio"
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/proto/stomp"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// STOMP through script phases. denyBroker is the part of
// internal/client's test broker (stompBroker, proto_stomp_loop_test.go)
// the error answer needs, copied: a kind's tests cannot import the core's.

// denyBroker accepts a CONNECT and answers a SEND's receipt with an
// ERROR, which ends the connection.
type denyBroker struct{}

func (b *denyBroker) start(t *testing.T) string {
	s := &testserver.RawServer{Handle: b.handle}
	return s.Start(t)
}

func (b *denyBroker) handle(c net.Conn, r *bufio.Reader) {
	if _, _, _, err := testserver.ReadClientFrame(r); err != nil {
		return
	}
	c.Write(testserver.ServerFrame(true, client.OpText, []byte("CONNECTED\nversion:1.2\nheart-beat:0,0\n\n\x00\n")))
	for {
		_, op, p, err := testserver.ReadClientFrame(r)
		if err != nil || op == client.OpClose {
			return
		}
		if bytes.HasPrefix(p, []byte("SEND\n")) {
			_, rest, _ := bytes.Cut(p, []byte("\nreceipt:"))
			id, _, _ := bytes.Cut(rest, []byte("\n"))
			c.Write(testserver.ServerFrame(true, client.OpText, []byte("ERROR\nreceipt-id:"+string(id)+"\nmessage:access_refused\n\nwrite access to topic denied\x00")))
			return // STOMP: an ERROR ends the connection
		}
	}
}

// TestSTOMPErrorAnswer: a broker that answers a SEND's receipt with ERROR
// gives an error answer counted by its message, then ends the
// connection: the user is lost too.
func TestSTOMPErrorAnswer(t *testing.T) {
	b := &denyBroker{}
	c := stompClient(t, b.start(t), 10*time.Second)
	res, err := c.Run(t.Context(), &Params{Steps: steps(t, `
steps:
  - publish: {topic: /topic/x, payload: hi, receipt: true, as: send}
  - think: 1s
`), Users: 4, Iterations: 1, Concurrency: 4, Timeout: units.Duration(5 * time.Second), ConnectTimeout: units.Duration(5 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result)
	const why = "stomp ERROR: access_refused"
	e := r.Exchanges["send"]
	if e.Errors != 4 || e.Count != 0 || r.ErrorAnswers[why] != 4 || r.Failures["steps[0].publish"][why] != 4 {
		t.Fatalf("send %+v, error answers %v, failures %v: want 4 × %q", e, r.ErrorAnswers, r.Failures, why)
	}
	if r.UsersFailed != 4 || r.Errors["stomp: ERROR: access_refused (write access to topic denied)"] != 4 {
		t.Fatalf("users failed %d, errors %v: want every user's connection ended by the ERROR", r.UsersFailed, r.Errors)
	}
}

func stompClient(t *testing.T, addr string, keepalive time.Duration) *client.Client {
	return clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: 1,
		Protocol: client.ProtocolOptions{Name: stomp.Name, Settings: &stomp.Settings{Keepalive: units.Duration(keepalive), Username: "guest", Password: "guest"}}})
}
