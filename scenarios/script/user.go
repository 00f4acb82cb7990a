package script

import (
	"bytes"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/proto"
	lang "github.com/wsplan/wsplan/internal/script"
)

// One user of a script phase: its place in the program, what it waits
// for, its captured values, and how a message it receives is matched.

// User states.
const (
	uFree    uint8 = iota // the slot is unused
	uDialing              // its connection is being opened
	uRunning              // executing steps
	uWaiting              // waiting for expects (its pipelining window is full, or a loop drains)
	uThinking
	uDone
)

// user is one user's state; conn.slot holds its index in scriptRun.users.
type user struct {
	c      *client.Conn
	num    int64    // the user's number, {{.conn}}
	row    [][]byte // its data row
	caps   [][]byte // captured values, by capture index
	msg    []byte   // a message assembled from several chunks
	pend   []pending
	lastID []byte // the correlation id the last send wrote
	loops  [lang.MaxDepth]loopFrame
	seq    int64 // sends so far
	iter   int64 // iterations completed
	ready  int64 // loop clock the current step became due (its scheduled time)
	sendAt int64 // scheduled time of the last send
	wake   int64 // armed timer; 0 = none
	pc     int32
	gen    uint32 // timer generation
	state  uint8
	unexp  bool // got an unexpected message
}

// pending is an expect waiting for its reply.
type pending struct {
	pc       int32 // the expect
	got      int32 // matching messages so far (streams)
	seq      int64 // the request's {{.seq}} and {{.iter}}, for templated checks
	iter     int64
	sentAt   int64 // scheduled time the exchange counts from
	deadline int64
	id       []byte // correlation id (Instr.Correlate)
}

type loopFrame struct {
	n     int64 // iterations begun
	until int64 // loop clock it ends at; 0 = no time limit
	on    bool
}

// advance runs u's steps from its pc until one blocks: an expect whose
// window is full, a pause, the end.
func (r *scriptRun) advance(l *client.Loop, u *user, now int64) {
	prog := r.job.prog
	slot := int32(u.c.Slot)
	for u.state == uRunning && l.Run() == r {
		if int(u.pc) == len(prog.Instrs) {
			r.iterationDone(l, u, slot, now)
			continue
		}
		in := &prog.Instrs[u.pc]
		switch in.Op {
		case lang.OpSend:
			if !r.send(l, u, in) {
				return // the connection was lost: u is ended
			}
			u.pc++
		case lang.OpExpect:
			r.await(u, in)
			w := r.window(u, in)
			u.pc++
			if len(u.pend) >= w {
				u.state = uWaiting
				r.setWake(u, slot, u.pend[0].deadline)
				return
			}
		case lang.OpThink:
			u.ready += int64(in.Think.Draw(l.Rand()))
			u.pc++
			if u.ready > now {
				u.state = uThinking
				r.setWake(u, slot, r.nextWake(u))
				return
			}
		case lang.OpLoop:
			f := &u.loops[in.Depth]
			if !f.on {
				*f = loopFrame{on: true}
				if in.LoopDuration > 0 {
					f.until = now + int64(in.LoopDuration)
				}
			}
			if (in.LoopCount > 0 && f.n >= in.LoopCount) || (f.until > 0 && now >= f.until) || r.stopping(now) {
				if len(u.pend) > 0 { // a pipelined loop drains before going on
					u.state = uWaiting
					r.setWake(u, slot, u.pend[0].deadline)
					return
				}
				f.on = false
				u.pc = int32(in.Pair)
				continue
			}
			f.n++
			u.pc++
		case lang.OpEndLoop:
			u.pc = int32(in.Pair)
		case lang.OpClose:
			r.failPending(u, ReasonUserEnded)
			l.CloseConn(u.c, uint16(in.Code))
			r.part.Finished++
			r.endUser(l, u, slot)
			return
		}
	}
}

// window is how many expects u may have waiting once in, the expect at
// its pc, waits: its loop's inflight, or fewer when in waits for a QoS
// > 0 publish's answer and the server's quota for u's connection is
// smaller (MQTT 5's Receive Maximum): u waits rather than send past it.
func (r *scriptRun) window(u *user, in *lang.Instr) int {
	w := in.Window
	if w <= 1 || !r.job.quota[u.pc] {
		return w
	}
	if s := client.ProtoOf(u.c); s != nil && s.Quota > 0 && int(s.Quota) < w {
		return int(s.Quota)
	}
	return w
}

// stopping reports whether closed arrivals' Duration is over: loops end
// and no iteration starts. Open arrivals' Duration is when users arrive:
// each runs its steps to the end (within the drain).
func (r *scriptRun) stopping(now int64) bool { return !r.p.open() && r.end > 0 && now >= r.end }

// iterationDone ends one pass over the steps: the next, or the user's
// end (its connection closed cleanly).
func (r *scriptRun) iterationDone(l *client.Loop, u *user, slot int32, now int64) {
	if len(u.pend) > 0 {
		u.state = uWaiting // expects of the last steps are still out
		r.setWake(u, slot, u.pend[0].deadline)
		return
	}
	u.iter++
	r.part.Iterations++
	iters := r.p.Iterations
	if r.p.open() && iters == 0 {
		iters = 1
	}
	if (iters == 0 || u.iter < iters) && !r.stopping(now) {
		u.pc = 0
		return
	}
	r.part.Finished++
	l.CloseConn(u.c, client.CloseNormal)
	r.endUser(l, u, slot)
}

// endUser frees the slot of a user whose connection is closed, and ends
// the phase here if it was the last.
func (r *scriptRun) endUser(l *client.Loop, u *user, slot int32) {
	if u.unexp {
		r.part.UnexpectedUsers++
	}
	u.state = uDone
	r.live--
	r.release(slot)
	r.maybeDone(l, l.Now())
}

// await makes in, an expect, wait: its exchange counts from the send
// before it (or from now, when the server pushes unasked).
func (r *scriptRun) await(u *user, in *lang.Instr) {
	at := u.ready
	if in.Send >= 0 {
		at = u.sendAt
	}
	n := len(u.pend)
	if n < cap(u.pend) {
		u.pend = u.pend[:n+1]
	} else {
		u.pend = append(u.pend, pending{})
	}
	p := &u.pend[n]
	*p = pending{pc: u.pc, seq: u.seq, iter: u.iter, sentAt: at, deadline: at + int64(in.Timeout), id: p.id[:0]}
	if in.Correlate != nil || in.ByID {
		p.id = append(p.id, u.lastID...)
	}
}

// send renders in's template and writes it; false when the connection
// was lost (the user is ended).
func (r *scriptRun) send(l *client.Loop, u *user, in *lang.Instr) bool {
	u.seq++
	u.sendAt = u.ready
	r.setVars(u, u.seq, u.iter)
	var ok bool
	if r.sbuf, ok = in.Tmpl.Append(r.sbuf[:0], &r.vars); !ok {
		r.tooLong(l, u, in)
		return false
	}
	if next := int(u.pc) + 1; next < len(r.job.prog.Instrs) {
		if x := &r.job.prog.Instrs[next]; x.Op == lang.OpExpect && x.Correlate != nil {
			id, _ := x.Correlate.Text(r.sbuf, r.idbuf)
			u.lastID = append(u.lastID[:0], id...)
		}
	}
	op := byte(client.OpText)
	if in.Binary {
		op = client.OpBinary
	}
	r.part.Sent++
	r.part.BytesSent += int64(len(r.sbuf))
	c := u.c
	payload := r.sbuf
	if p := r.cl.Proto(); p != nil {
		var ok bool
		if payload, op, ok = r.encode(l, p, u, in); !ok {
			return false
		}
	}
	data, rsv := payload, byte(0)
	if c.Sec != nil && c.Sec.Deflate {
		if c.Sec.WindowBits != r.zbits {
			r.zc.Init(&l.Deflater, pmdeflate.Params{ClientNoContextTakeover: true, ClientMaxWindowBits: int(c.Sec.WindowBits)})
			r.zbits = c.Sec.WindowBits
		}
		r.zout = r.zc.Compress(r.zout[:0], payload)
		data, rsv = r.zout, client.Rsv1
	}
	need := client.MaxHeader + len(data)
	if cap(l.WriteBuf) < need {
		l.WriteBuf = make([]byte, 0, need)
	}
	key := uint32(l.Rand().Uint64())
	buf := client.AppendClientHeader(l.WriteBuf[:0], op, len(data), key)
	buf[0] |= rsv
	h := len(buf)
	buf = buf[:h+len(data)]
	client.MaskCopy(buf[h:], data, key, 0)
	if c.Flags&client.FlagWantOut != 0 {
		x := l.GetExt(c)
		x.Out = append(x.Out, buf...) // behind what waits for EPOLLOUT
		return true
	}
	l.WriteOrQueue(c, buf)
	return c.State() == client.StateOpen
}

// encode shapes in's message as u's connection's protocol says, keeping
// the id its answer will carry; false when the protocol refused it (the
// user is ended).
func (r *scriptRun) encode(l *client.Loop, p proto.Protocol, u *user, in *lang.Instr) ([]byte, byte, bool) {
	next := int(u.pc) + 1
	awaited := next < len(r.job.prog.Instrs) && r.job.prog.Instrs[next].ByID
	r.out = proto.Out{Verb: r.job.verbs[u.pc], Body: r.sbuf, QoS: in.QoS, Ack: in.Ack, Binary: in.Binary, Awaited: awaited}
	if in.Topic != nil {
		var ok bool
		if r.tbuf, ok = in.Topic.Append(r.tbuf[:0], &r.vars); !ok {
			r.tooLong(l, u, in)
			return nil, 0, false
		}
		r.out.Topic = r.tbuf
	}
	out, op, id, err := p.Encode(r.ebuf[:0], client.ProtoOf(u.c), &r.out, r.idbuf[:0])
	r.ebuf = out
	if err != nil {
		why := client.Reason(err.Error())
		r.part.fail(in.Label, why)
		r.part.UsersFailed++
		r.part.Errors.Add(why)
		r.abort(l, u, int32(u.c.Slot), true)
		return nil, 0, false
	}
	if awaited {
		u.lastID = append(u.lastID[:0], id...)
	}
	r.idbuf = id[:0]
	return out, op, true
}

// tooLong fails in's step for u, whose template would render more than
// lang.MaxRenderBytes: an error, and the user ends (what it would send
// next depends on what it could not send).
func (r *scriptRun) tooLong(l *client.Loop, u *user, in *lang.Instr) {
	r.part.fail(in.Label, client.ReasonTooLong)
	r.part.UsersFailed++
	r.part.Errors.Add(client.ReasonTooLong)
	r.abort(l, u, int32(u.c.Slot), true)
}

// setVars points the run's template values at u's, for request seq/iter.
func (r *scriptRun) setVars(u *user, seq, iter int64) {
	r.vars.Conn, r.vars.Seq, r.vars.Iter = u.num, seq, iter
	r.vars.Row, r.vars.Captures = u.row, u.caps
	r.vars.NowNs = time.Now().UnixNano()
}

// timer runs when u's wake-up comes: a pause ends, its oldest expect
// times out, or it came early and is re-armed.
func (r *scriptRun) timer(l *client.Loop, u *user, now int64) {
	slot := int32(u.c.Slot)
	if len(u.pend) > 0 && now >= u.pend[0].deadline {
		in := &r.job.prog.Instrs[u.pend[0].pc]
		if in.Exchange >= 0 {
			r.exch[in.Exchange].Timeouts++
		}
		r.part.Timeouts++
		r.part.fail(in.Label, client.ReasonTimeout)
		u.pend = u.pend[:copy(u.pend, u.pend[1:])]
		// A reply that never came leaves the conversation unknown: the
		// user ends, its connection closed.
		r.abort(l, u, slot, true)
		return
	}
	if u.state == uThinking && now >= u.ready {
		u.state = uRunning
		r.advance(l, u, now)
		return
	}
	// Early (armed for an expect since answered): re-arm for what is due.
	r.setWake(u, slot, r.nextWake(u))
}

// nextWake is when u must wake up next: the end of its pause or its oldest
// expect's deadline, whichever comes first; 0 = none.
func (r *scriptRun) nextWake(u *user) int64 {
	w := int64(0)
	if u.state == uThinking {
		w = u.ready
	}
	if len(u.pend) > 0 && (w == 0 || u.pend[0].deadline < w) {
		w = u.pend[0].deadline
	}
	return w
}

// abort ends u on a failure the caller counted (a timeout, the loss of
// its connection): its other waiting expects fail with "user ended", its
// connection is closed (closeIt) unless lost already.
func (r *scriptRun) abort(l *client.Loop, u *user, slot int32, closeIt bool) {
	if u.state == uDone || u.state == uFree {
		return
	}
	r.failPending(u, ReasonUserEnded)
	if closeIt && u.c != nil && u.c.State() == client.StateOpen {
		l.CloseConn(u.c, client.CloseNormal)
	}
	r.part.Aborted++
	r.endUser(l, u, slot)
}

// failPending fails u's waiting expects with reason.
func (r *scriptRun) failPending(u *user, reason client.Reason) {
	for i := range u.pend {
		in := &r.job.prog.Instrs[u.pend[i].pc]
		if in.Exchange >= 0 {
			r.exch[in.Exchange].Failed++
		}
		r.part.Unanswered++
		r.part.fail(in.Label, reason)
	}
	u.pend = u.pend[:0]
}

// OnData implements LoopRun: a chunk of a message for a user; whole
// messages are matched (a message in several chunks is assembled).
func (r *scriptRun) OnData(l *client.Loop, c *client.Conn, ev *client.Event, now int64) {
	slot := int32(c.Slot)
	if slot < 0 || int(slot) >= len(r.users) || r.users[slot].c != c {
		return
	}
	u := &r.users[slot]
	msg := ev.Data
	if !ev.End || int64(len(ev.Data)) != ev.Total {
		u.msg = append(u.msg, ev.Data...)
		if !ev.End {
			return
		}
		msg = u.msg
	}
	r.rawMsg = proto.Message{Msg: lang.Msg{Type: lang.TypeData, Body: msg}}
	r.deliver(l, u, slot, &r.rawMsg, now)
	if cap(u.msg) > 64<<10 {
		u.msg = nil // do not keep a large message's buffer per user
	} else {
		u.msg = u.msg[:0]
	}
}

// OnMessage implements LoopRun: a message a protocol decoded.
func (r *scriptRun) OnMessage(l *client.Loop, c *client.Conn, m *proto.Message, now int64) {
	slot := int32(c.Slot)
	if slot < 0 || int(slot) >= len(r.users) || r.users[slot].c != c {
		return
	}
	r.deliver(l, &r.users[slot], slot, m, now)
}

// deliver matches one whole message.
func (r *scriptRun) deliver(l *client.Loop, u *user, slot int32, m *proto.Message, now int64) {
	g := &m.Msg
	msg := g.Body
	r.part.Received++
	r.part.BytesRecv += int64(len(msg))
	prog := r.job.prog
	for _, ig := range prog.Ignore {
		if ig.Select(g, &r.scratch) {
			r.part.Ignored++
			return
		}
	}
	if len(u.pend) == 0 || u.state == uDone {
		r.unexpected(u)
		return
	}
	in := &prog.Instrs[u.pend[0].pc]
	i := 0
	switch {
	case in.ByID || in.Correlate != nil:
		id := g.ID
		if in.ByID && !proto.IsAnswer(g.Type) {
			r.unexpected(u)
			return
		}
		if !in.ByID {
			var ok bool
			if id, ok = in.Correlate.Text(msg, r.idbuf); !ok {
				r.unexpected(u)
				return
			}
		}
		for i = 0; i < len(u.pend) && !bytes.Equal(u.pend[i].id, id); i++ {
		}
		if i == len(u.pend) {
			r.unexpected(u)
			return
		}
	case !in.Match.Select(g, &r.scratch) && (in.Until == nil || !in.Until.Select(g, &r.scratch)):
		r.unexpected(u)
		return
	}
	p := &u.pend[i]
	r.setVars(u, p.seq, p.iter)
	if in.ByID {
		r.part.Answers++
		if g.Type == proto.MsgError {
			r.settle(l, u, slot, in, i, now, settleError, orReason(client.Reason(m.Why), ReasonErrorAnswer))
			return
		}
		if m.Grant > 0 && m.Grant-1 < r.job.prog.Instrs[in.Send].QoS {
			r.settle(l, u, slot, in, i, now, settleDowngrade, orReason(client.Reason(m.Why), ReasonDowngraded))
			return
		}
	}
	ends := in.Until != nil && in.Until.Matches(g, &r.vars, &r.scratch)
	if !ends && !(in.Match.Select(g, &r.scratch) && in.Match.Check(g, &r.vars, &r.scratch)) {
		r.settle(l, u, slot, in, i, now, settleMismatch, ReasonMismatch)
		return
	}
	p.got++
	if !ends && (in.Until != nil || int(p.got) < in.Count) {
		return // a stream: more to come
	}
	for _, c := range in.Captures {
		if v, ok := c.Path.Text(msg, r.idbuf); ok {
			for len(u.caps) <= c.Index {
				u.caps = append(u.caps, nil)
			}
			u.caps[c.Index] = append(u.caps[c.Index][:0], v...)
		}
	}
	if in.Exchange >= 0 {
		e := &r.exch[in.Exchange]
		e.Count++
		client.Record(e.Latency.Histogram, now-p.sentAt)
		r.liveLat.Add(now - p.sentAt)
	}
	r.complete(l, u, slot, i, now)
}

// How an answer settles an expect without completing its exchange.
const (
	settleMismatch  = iota // a reply to another request
	settleError            // the protocol's error answer
	settleDowngrade        // the protocol granted less than asked
)

// settle fails expect i of u as how says, for why (the failed step's
// reason, and an error's or a downgrade's code), and lets u go on.
func (r *scriptRun) settle(l *client.Loop, u *user, slot int32, in *lang.Instr, i int, now int64, how uint8, why client.Reason) {
	var e *Exchange
	if in.Exchange >= 0 {
		e = &r.exch[in.Exchange]
	}
	switch {
	case how == settleError:
		r.part.ErrorAnswers.Add(why)
		if e != nil {
			e.Errors++
			e.ErrorCodes.Add(why)
		}
	case how == settleDowngrade:
		r.part.Downgrades.Add(why)
		if e != nil {
			e.Downgraded++
			e.DowngradeCodes.Add(why)
		}
	default:
		r.part.Mismatched++
		if e != nil {
			e.Mismatched++
		}
	}
	r.part.fail(in.Label, why)
	r.complete(l, u, slot, i, now)
}

// orReason is why, or def when the protocol said nothing.
func orReason(why, def client.Reason) client.Reason {
	if why == "" {
		return def
	}
	return why
}

// complete takes expect i off u's waiting list and lets u go on.
func (r *scriptRun) complete(l *client.Loop, u *user, slot int32, i int, now int64) {
	p := u.pend[i]
	copy(u.pend[i:], u.pend[i+1:])
	u.pend = u.pend[:len(u.pend)-1]
	u.pend[:cap(u.pend)][len(u.pend)].id = p.id // keep the id buffer for reuse
	if u.ready < now {
		u.ready = now // the next step is due when its reply came
	}
	// A thinking user's wake-up stays armed: an answered expect only makes
	// the next deadline later.
	if u.state == uWaiting {
		u.state = uRunning
		r.advance(l, u, now)
	}
}

// unexpected counts a message no expect waited for.
func (r *scriptRun) unexpected(u *user) {
	r.part.Unexpected++
	u.unexp = true
}
