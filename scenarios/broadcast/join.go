package broadcast

import (
	"bytes"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/proto"
)

// The broadcast phase through a server's protocol (proto.Rooms): the open
// step's connections greet, then join their room (an MQTT SUBSCRIBE, a
// STOMP SUBSCRIBE, a Socket.IO join event, a GraphQL subscription) and
// count as open once the protocol answered; publishers publish through
// the protocol; a delivery is whatever message carries the phase's
// payload, checked and timed exactly as a raw one (onData).

// joinRun is the open step through a protocol on one loop.
type joinRun struct {
	client.BaseRun
	d         client.Dialer
	rp        proto.Rooms
	p         *Params
	set       *subscriberSet
	pr        *client.Progress
	started   int         // connections begun
	waiting   [][]byte    // by set index: the id of the join answer awaited; nil = none
	pending   int         // joins awaiting an answer
	joinAt    []int64     // by set index: loop clock the join was sent
	joins     client.Hist // join latency: the join's send to its answer
	part      Result
	unflushed int64
	filling   bool
	buf, idb  []byte
}

// broadcastJoin begins the open step through the client's protocol.
func broadcastJoin(l *client.Loop, id int64, p *Params, set *subscriberSet, pr *client.Progress) {
	r := &joinRun{BaseRun: client.NewBaseRun(id), rp: l.Client().Proto().(proto.Rooms), p: p, set: set, pr: pr,
		waiting: make([][]byte, len(set.conns)), joinAt: make([]int64, len(set.conns)), joins: client.NewHist()}
	r.d.Init(r, int64(p.Timeout), max(p.Retries, 0), nil)
	l.SetRun(r)
	l.SetTick(p.Timeout.D() / 10)
	r.fill(l)
}

// fill starts attempts up to the concurrency, and ends the step when
// every connection is open and joined, or failed.
func (r *joinRun) fill(l *client.Loop) {
	if r.filling {
		return
	}
	r.filling = true
	for len(r.d.Inflight) < max(r.p.Concurrency, 1) && r.started < len(r.set.conns) {
		idx := int64(r.set.first + r.started)
		r.started++
		l.Dial(&r.d, idx, 0)
		if l.Run() != r {
			return
		}
	}
	r.filling = false
	if r.started == len(r.set.conns) && len(r.d.Inflight) == 0 && r.pending == 0 {
		r.Finish(l, false, l.Now())
	}
}

// Dialed implements the client's dialHooks: the connection joins its room.
func (r *joinRun) Dialed(l *client.Loop, c *client.Conn, idx int64, now int64) {
	k := idx - int64(r.set.first)
	c.Slot = k
	r.set.conns[k] = c
	room := idx / int64(r.p.RoomSize)
	out, op, id, answered := r.rp.JoinRoom(r.buf[:0], client.ProtoOf(c), room, r.idb[:0])
	r.buf, r.idb = out, id[:0]
	l.SendProto(c, op, out)
	if c.State() != client.StateOpen {
		return // lost while writing: counted by lost
	}
	if answered {
		r.waiting[k] = append([]byte(nil), id...)
		r.joinAt[k] = now
		r.pending++
	} else {
		r.joined(k)
	}
	r.fill(l)
}

// joined counts a subscriber ready.
func (r *joinRun) joined(k int64) {
	r.part.Opened++
	if r.unflushed++; r.pr != nil && r.unflushed >= client.ProgressBatch {
		r.pr.Done.Add(r.unflushed)
		r.unflushed = 0
	}
}

// GaveUp implements the client's dialHooks.
func (r *joinRun) GaveUp(l *client.Loop, _ int64, _ client.Reason) {
	r.unflushed++
	r.fill(l)
}

// OnMessage implements client.LoopRun: a join's answer.
func (r *joinRun) OnMessage(l *client.Loop, c *client.Conn, m *proto.Message, now int64) {
	k := c.Slot
	if k < 0 || k >= int64(len(r.waiting)) || r.set.conns[k] != c || r.waiting[k] == nil || !proto.IsAnswer(m.Type) || !bytes.Equal(m.ID, r.waiting[k]) {
		return // a delivery before the run, or anything else: not a join's answer
	}
	r.waiting[k] = nil
	r.pending--
	if m.Type == proto.MsgError {
		why := ReasonJoinRefused
		if m.Why != "" { // once per refused connection: the allocation is no hot path's
			why += ": " + client.Reason(m.Why)
		}
		r.part.OpenErrors.Add(why)
		r.part.OpenFailed++
		l.CloseConn(c, client.CloseNormal)
		r.set.conns[k] = nil
	} else {
		client.Record(r.joins.Histogram, now-r.joinAt[k])
		r.joined(k)
	}
	r.fill(l)
}

// ReasonJoinRefused is a room join the protocol answered with an error.
const ReasonJoinRefused client.Reason = "join refused"

// Lost implements client.LoopRun: a connection lost while joining fails.
func (r *joinRun) Lost(l *client.Loop, c *client.Conn, _ uint8, reason client.Reason) {
	k := c.Slot
	if k < 0 || k >= int64(len(r.waiting)) || r.set.conns[k] != c {
		return
	}
	if r.waiting[k] != nil {
		r.waiting[k] = nil
		r.pending--
		r.part.OpenFailed++
		r.part.OpenErrors.Add(reason)
	}
	r.set.conns[k] = nil
	r.fill(l)
}

// Tick implements client.LoopRun: handshake deadlines, and joins never
// answered within the attempt's timeout.
func (r *joinRun) Tick(l *client.Loop, now int64) {
	r.d.Tick(l, now)
	for k, id := range r.waiting {
		if id != nil && now-r.joinAt[k] > int64(r.p.Timeout) && l.Run() == r {
			r.waiting[k] = nil
			r.pending--
			r.part.OpenFailed++
			r.part.OpenErrors.Add(ReasonJoinTimeout)
			if c := r.set.conns[k]; c != nil {
				l.CloseConn(c, client.CloseNormal)
				r.set.conns[k] = nil
			}
		}
	}
	if l.Run() == r && r.pr != nil && r.unflushed > 0 {
		r.pr.Done.Add(r.unflushed)
		r.unflushed = 0
	}
	if l.Run() == r {
		r.fill(l)
	}
}

// ReasonJoinTimeout is a room join the protocol never answered.
const ReasonJoinTimeout client.Reason = "join unanswered"

// Finish implements client.LoopRun.
func (r *joinRun) Finish(l *client.Loop, stopped bool, _ int64) {
	if stopped {
		r.d.Abandon(l)
	}
	if r.pr != nil && r.unflushed > 0 {
		r.pr.Done.Add(r.unflushed)
	}
	cr := r.d.Result()
	r.part.OpenFailed += cr.Failed
	r.part.OpenErrors.Merge(cr.Errors)
	r.part.Connect = cr.Latency
	r.part.Join = r.joins
	if stopped {
		r.part.Stopped = client.StopCanceled
	}
	l.Finished(r.ID(), &r.part, stopped)
}

// publishProto writes publisher j's due messages through the protocol
// and returns the bytes written (publish's protocol path).
func (r *run) publishProto(l *client.Loop, c *client.Conn, rp proto.Rooms, due int64, pb *publisher, phase float64, now int64) int {
	room, member := uint32(pb.g/r.p.Publishers), uint32(pb.g%r.p.Publishers)
	wrote := 0
	for pb.next < due {
		at := int64(r.pacer.At(pb.next, phase))
		r.msg = append(r.msg[:0], r.payload...)
		putBroadcastMarker(r.msg, uint64(pb.next), r.epochUnix+r.start+at, room, member)
		out, op := rp.PublishRoom(r.ebuf[:0], client.ProtoOf(c), int64(room), r.msg)
		r.ebuf = out
		l.SendProto(c, op, out)
		wrote += len(out) + client.MaxHeader
		pb.next++
		r.part.Published++
		r.part.Deliveries += r.recv
		r.part.SlowDeliveries += r.slowRcv
		if now-(r.start+at) > r.lateAfter {
			r.part.Late++
		}
		r.gate.Sent(now, r.start+at)
		if c.State() != client.StateOpen || c.Flags&client.FlagWantOut != 0 {
			break // lost, or its socket is full: resume sends the rest
		}
	}
	return wrote
}

// OnMessage implements client.LoopRun: a protocol's message that carries a
// delivery is checked as a raw one.
func (r *run) OnMessage(l *client.Loop, c *client.Conn, m *proto.Message, now int64) {
	rp, ok := l.Client().Proto().(proto.Rooms)
	if !ok {
		return
	}
	payload, ok := rp.Delivery(m, r.scratch[:0])
	if !ok {
		return
	}
	if cap(payload) > cap(r.scratch) && len(payload) > 0 && &payload[0] != &m.Body[0] {
		r.scratch = payload[:0]
	}
	r.evp = client.Event{Kind: client.EventData, Op: client.OpBinary, End: true, Data: payload, Total: int64(len(payload))}
	r.OnData(l, c, &r.evp, now)
}
