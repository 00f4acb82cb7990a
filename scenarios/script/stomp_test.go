package script

import (
	"bufio"
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/proto/stomp"
	"github.com/wsplan/wsplan/internal/units"
)

// stompBroker answers a CONNECT as mode says and counts the client's
// heart-beats.
type stompBroker struct {
	mode  string // "ok", "error", "mute", "silent", "deny" (an ERROR answers a SEND's receipt)
	beat  string // CONNECTED's heart-beat header
	beats atomic.Int64
	conns atomic.Int64
	mu    sync.Mutex
	frame []string // the CONNECT frames seen
}

func (b *stompBroker) start(t *testing.T) string {
	s := &clienttest.RawServer{Handle: b.handle}
	return s.Start(t)
}

func (b *stompBroker) handle(c net.Conn, r *bufio.Reader) {
	_, _, connect, err := clienttest.ReadClientFrame(r)
	if err != nil {
		return
	}
	b.mu.Lock()
	b.frame = append(b.frame, string(connect))
	b.mu.Unlock()
	switch b.mode {
	case "error":
		c.Write(clienttest.ServerFrame(true, client.OpText, []byte("ERROR\nmessage:Bad CONNECT\ncontent-type:text/plain\ncontent-length:32\n\nAccess refused for user 'guest'\n\x00\n")))
	case "mute":
	default:
		c.Write(clienttest.ServerFrame(true, client.OpText, []byte("CONNECTED\nversion:1.2\nheart-beat:"+b.beat+"\n\n\x00\n")))
	}
	b.conns.Add(1)
	stop := make(chan struct{})
	defer close(stop)
	if b.mode == "ok" {
		go func() { // the server's heart-beats
			tk := time.NewTicker(100 * time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tk.C:
					if _, err := c.Write(clienttest.ServerFrame(true, client.OpText, []byte("\n"))); err != nil {
						return
					}
				}
			}
		}()
	}
	for {
		_, op, p, err := clienttest.ReadClientFrame(r)
		if err != nil || op == client.OpClose {
			return
		}
		if string(p) == "\n" {
			b.beats.Add(1)
		}
		if b.mode == "deny" && bytes.HasPrefix(p, []byte("SEND\n")) {
			_, rest, _ := bytes.Cut(p, []byte("\nreceipt:"))
			id, _, _ := bytes.Cut(rest, []byte("\n"))
			c.Write(clienttest.ServerFrame(true, client.OpText, []byte("ERROR\nreceipt-id:"+string(id)+"\nmessage:access_refused\n\nwrite access to topic denied\x00")))
			return // STOMP: an ERROR ends the connection
		}
	}
}

// TestSTOMPErrorAnswer: a broker that answers a SEND's receipt with ERROR
// gives an error answer counted by its message, then ends the
// connection: the user is lost too.
func TestSTOMPErrorAnswer(t *testing.T) {
	b := &stompBroker{mode: "deny"}
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
