package close

import (
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/client"
)

// The states of a connection in a close run (run.sent holds the loop
// clock of its close frame while the handshake is in progress).
const (
	closeWaiting = -1 // its close frame is not sent yet
	closeDone    = -2 // answered, failed or lost
)

// run is a close phase running in a loop. Its connections are the
// loop's first open ones; Conn.Slot holds a connection's index.
type run struct {
	client.BaseRun
	conns     []*client.Conn
	sent      []int64 // per connection: the loop clock its close left, or closeWaiting, closeDone
	next      int     // the next connection to send a close on
	inflight  int
	timeout   int64
	pr        *client.Progress
	unflushed int64
	part      Result
}

// start begins a close phase on loop l: n connections, conc of them
// closing at once.
func start(l *client.Loop, id int64, n, conc int, timeout int64, pr *client.Progress) {
	n = min(n, len(l.Open()))
	r := &run{BaseRun: client.NewBaseRun(id), conns: append([]*client.Conn(nil), l.Open()[:n]...), sent: make([]int64, n),
		timeout: timeout, pr: pr, part: Result{Latency: client.NewHist()}}
	l.SetRun(r)
	l.SetTick(time.Duration(timeout / 10))
	for i, c := range r.conns {
		c.Slot = int64(i)
		r.sent[i] = closeWaiting
	}
	now := l.Now()
	for range min(conc, n) {
		if l.Run() != r {
			return
		}
		r.send(l, now)
	}
	r.maybeDone(l)
}

// send writes the close frame of the next connection still open.
func (r *run) send(l *client.Loop, now int64) {
	for r.next < len(r.conns) {
		i := r.next
		r.next++
		if r.sent[i] != closeWaiting {
			continue // lost before its turn: already counted
		}
		r.sent[i] = now
		r.inflight++
		r.conns[i].Flags |= client.FlagClosing // the server's close answers this one: not a close of its own
		l.SendControl(r.conns[i], client.OpClose, closePayload)
		return
	}
}

// slot returns c's index in the run, or -1.
func (r *run) slot(c *client.Conn) int {
	if i := c.Slot; i >= 0 && i < int64(len(r.conns)) && r.conns[i] == c {
		return int(i)
	}
	return -1
}

// Lost implements client.LoopRun: the loop drops a connection when the server's
// close frame arrives (reason ReasonServerClose, with the server's code):
// the handshake in progress on it succeeded. Any other reason, or the
// server's close before the client's, fails the connection's close.
func (r *run) Lost(l *client.Loop, c *client.Conn, _ uint8, reason client.Reason) {
	i := r.slot(c)
	if i < 0 || r.sent[i] == closeDone {
		return
	}
	answered := r.sent[i] >= 0 && strings.HasPrefix(string(reason), string(client.ReasonServerClose))
	if r.sent[i] >= 0 {
		r.inflight--
	}
	switch {
	case answered:
		client.Record(r.part.Latency.Histogram, l.Now()-r.sent[i])
		r.part.Success++
		if reason != closeAnswered {
			r.part.OtherCode++
			r.part.Codes.Add(reason)
		}
	case r.sent[i] < 0:
		r.part.Failed++
		r.part.Errors.Add("before its close: " + reason)
	default:
		r.part.Failed++
		r.part.Errors.Add(reason)
	}
	r.sent[i] = closeDone
	r.progress()
	if l.Run() == r {
		r.send(l, l.Now())
		r.maybeDone(l)
	}
}

// Tick implements client.LoopRun: it fails closes older than the timeout
// (dropping their connections) and publishes progress.
func (r *run) Tick(l *client.Loop, now int64) {
	for i, c := range r.conns {
		if l.Run() != r {
			return
		}
		if r.sent[i] >= 0 && now-r.sent[i] > r.timeout {
			l.Drop(c, client.ReasonTimeout)
		}
	}
	if r.pr != nil && r.unflushed > 0 {
		r.pr.Done.Add(r.unflushed)
		r.unflushed = 0
	}
}

func (r *run) progress() {
	if r.unflushed++; r.unflushed >= client.ProgressBatch && r.pr != nil {
		r.pr.Done.Add(r.unflushed)
		r.unflushed = 0
	}
}

// maybeDone ends the phase here once every close was answered or failed.
func (r *run) maybeDone(l *client.Loop) {
	if l.Run() != r || r.inflight > 0 || r.next < len(r.conns) {
		return
	}
	r.Finish(l, false, 0)
}

// Finish implements client.LoopRun: a connection whose close frame left and that
// is still open (the phase was cut short) is closed now.
func (r *run) Finish(l *client.Loop, stopped bool, _ int64) {
	for i, c := range r.conns {
		if r.sent[i] >= 0 && c.State() == client.StateOpen {
			l.CloseFD(c)
		}
		c.Slot = 0
	}
	if r.pr != nil && r.unflushed > 0 {
		r.pr.Done.Add(r.unflushed)
	}
	l.Finished(r.ID(), &r.part, stopped)
}
