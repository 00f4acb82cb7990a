package broadcast

import (
	"bytes"
	"encoding/binary"
	"math"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/proto"
)

// The event-loop side of the broadcast phase's run step (broadcast.go
// holds its contract: parameters, result, merge, split, and the open and
// close steps): the publishers' timetable, the subscribers' checks of
// every delivery, the slow subscribers' pauses.

// subscriber is a subscriber's state in the run; conn.slot holds its index.
type subscriber struct {
	c      *client.Conn
	room   int32
	member int32
	slow   bool
	paused bool
	bad    bool
	live   bool
	want   int64 // messages its publishers are due to publish to it
	got    int64 // distinct messages received intact
	mark   [MarkerLen]byte
}

// pubWindow is what a subscriber saw of one publisher: the highest number and
// a bitmap of the 64 numbers up to it.
type pubWindow struct {
	max  int64
	bits uint64
}

// publisher is a publisher of this loop; its phase in the timetable is g /
// (Rooms × Publishers).
type publisher struct {
	sub  int // index in subs; -1 = it did not open
	g    int
	next int64
}

// run is the run step in a loop. Its publishers wake the loop as
// the rate phase's senders do (pacedWake: a timer slack, and a loop awake
// anyway for deliveries publishes what is due at once).
type run struct {
	client.BaseRun
	p         Params
	gate      client.PacedWake
	wakes0    int64 // the loop's wake-ups at the start
	pacer     client.Pacer
	timetable client.Cursor
	subs      []subscriber
	wins      []pubWindow // subs × Publishers
	pubs      []publisher
	hdr       []byte
	payload   []byte
	flen      int
	recv      int64 // receivers of each message
	slowRcv   int64 // of which slow
	// Loop clock: t = 0 of the timetable, end of publishing, latest end.
	start, end, stopAt int64
	epochUnix          int64 // Unix ns of loop clock 0
	lateAfter          int64
	readPause          int64 // slow subscribers' pause, ns
	verify, include    bool  // the params', read once at the start
	sending            bool
	pausedNow          bool
	toggle             int64 // loop clock of the next slow pause or resume
	want, got          int64 // over live subscribers: deliveries due and received (capped per subscriber)
	wake               int64 // loop clock of the next pump
	due                int64 // loop clock of the next due event (wake without the slack)
	fan                FanoutTable
	pr                 *client.Progress
	unflushed          int64
	published          client.LiveCounts // what client.Live has of this loop
	liveLat            client.LiveHist   // delivery latencies for client.Live
	part               Result

	// Through a protocol (broadcast_proto.go): a message being published,
	// its encoding, a decoded delivery, and the delivery as an event.
	msg, ebuf, scratch []byte
	evp                client.Event
}

// broadcastStart begins the run step in this loop.
func broadcastStart(l *client.Loop, id int64, start time.Time, p *Params, set *subscriberSet, hdr, payload []byte, pr *client.Progress) {
	r := &run{BaseRun: client.NewBaseRun(id), p: *p, hdr: hdr, payload: payload, pr: pr,
		part: Result{Latency: client.NewHist(), SlowLatency: client.NewHist()}}
	l.SetRun(r)
	r.liveLat.Start(pr.Following(), l.Now())
	r.pacer = client.Pacer{Rate: float64(p.Rate), Duration: p.Duration.D()}
	r.verify, r.include, r.readPause = *p.Verify, p.include(), int64(p.slow().ReadPause)
	r.flen = len(hdr) + len(payload)
	if need := max(client.DefaultPacedBatch, r.flen); cap(l.WriteBuf) < need {
		l.WriteBuf = make([]byte, need)
	}
	r.start = int64(start.Sub(l.Epoch()))
	if late := l.Now() - r.start; late > 0 && p.StartAt != 0 {
		r.part.StartedLate = time.Duration(late)
	}
	r.end = r.start + int64(p.Duration)
	r.stopAt = r.end + int64(p.Drain)
	r.lateAfter = int64(p.LateAfter)
	r.epochUnix = l.Epoch().UnixNano()
	r.gate = client.NewPacedWake(client.SlackOf(p.Slack))
	r.wakes0 = l.Wakes()
	all, slow := p.Receivers()
	r.recv, r.slowRcv = int64(all), int64(slow)
	totalPubs := p.Rooms * p.Publishers
	perPub := int64(math.Ceil(float64(p.Rate)*p.Duration.D().Seconds())) + 1
	stride := max(1, (int64(totalPubs)*perPub+MaxFanoutTracked-1)/MaxFanoutTracked)
	slotsPerPub := (perPub + stride - 1) / stride
	r.fan = FanoutTable{Stride: stride, PerPub: slotsPerPub, Max: make([]int64, int64(totalPubs)*slotsPerPub), Count: make([]int32, int64(totalPubs)*slotsPerPub)}
	firstG := r.place(set, slow)
	r.timetable = client.Cursor{Pacer: r.pacer, First: max(firstG, 0), Total: totalPubs, Conns: len(r.pubs)}
	// Batched reads for the subscribers that read as they can; a slow
	// one's latency is when it reads, so it keeps prompt reads.
	fast := make([]*client.Conn, 0, len(r.subs))
	for i := range r.subs {
		if !r.subs[i].slow {
			fast = append(fast, r.subs[i].c)
		}
	}
	r.part.Reads = r.gate.Begin(l, fast, p.Reads)
	r.sending = true
	r.toggle = math.MaxInt64
	if slow > 0 {
		r.toggle = r.start + r.readPause
	}
	l.SetTick(client.MaxTick)
	r.Pump(l, l.Now())
}

// place makes the run's subscribers of set's open connections and its
// publishers (members below Publishers, open or not: their timetable
// slots exist either way), and returns the timetable index of the first
// publisher (-1 = none here).
func (r *run) place(set *subscriberSet, slow int) (firstG int) {
	p := &r.p
	slowFrom := p.RoomSize - slow
	totalPubs := p.Rooms * p.Publishers
	firstG = -1
	for k, c := range set.conns {
		s := set.first + k
		room, member := s/p.RoomSize, s%p.RoomSize
		si := -1
		if c != nil && c.State() == client.StateOpen {
			si = len(r.subs)
			sub := subscriber{c: c, room: int32(room), member: int32(member), slow: member >= slowFrom, live: true}
			if rcvbuf := int(p.slow().RcvBuf); sub.slow && rcvbuf > 0 {
				// A small receive buffer moves the backlog of a subscriber
				// that does not read to the server. Best effort: the run
				// goes on with the kernel's buffer if it fails.
				_ = unix.SetsockoptInt(int(c.FD()), unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf)
			}
			for q := range p.Publishers {
				if q != member || r.include {
					sub.want += r.pacer.Total(float64(room*p.Publishers+q) / float64(totalPubs))
				}
			}
			c.Slot = int64(si)
			r.subs = append(r.subs, sub)
			r.want += sub.want
			r.part.Subscribers++
			if sub.slow {
				r.part.Slow++
			}
		}
		if member < p.Publishers {
			g := room*p.Publishers + member
			if firstG < 0 {
				firstG = g
			}
			r.pubs = append(r.pubs, publisher{sub: si, g: g})
		}
	}
	r.wins = make([]pubWindow, len(r.subs)*p.Publishers)
	for i := range r.wins {
		r.wins[i].max = -1
	}
	return firstG
}

// WakeAt implements client.LoopRun.
func (r *run) WakeAt() int64 { return r.wake }

// DueAt implements the client's slackRun.
func (r *run) DueAt() int64 { return r.due }

// Pump implements client.LoopRun: it publishes what the timetable has due, pauses
// and resumes the slow subscribers, ends publishing at Duration and the
// run when every delivery due here came or the drain is over.
func (r *run) Pump(l *client.Loop, now int64) {
	more := false
	r.gate.Pumped(now)
	if r.sending && len(r.pubs) > 0 {
		el := time.Duration(now - r.start)
		visited := 0
		left := client.PumpBytes
		for {
			at := r.timetable.At()
			if at >= r.pacer.Duration || at > el {
				break
			}
			left -= r.publish(l, r.timetable.Index, now)
			if l.Run() != r {
				return
			}
			if left <= 0 {
				more = true
				break
			}
			r.timetable.Advance()
			if visited++; visited >= len(r.pubs) {
				r.timetable.Seek(el)
				visited = 0
			}
		}
	}
	if r.sending && now >= r.end {
		r.closeWindow(l, now)
	}
	for r.sending && now >= r.toggle {
		r.pausedNow = !r.pausedNow
		r.setPaused(l, r.pausedNow)
		if l.Run() != r {
			return
		}
		r.toggle += r.readPause
	}
	if !r.sending && (r.got >= r.want || now >= r.stopAt) {
		r.Finish(l, false, now)
		return
	}
	switch {
	case more:
		r.wake, r.due = now, now
	case r.sending:
		r.wake, r.due = min(r.end, r.toggle), min(r.end, r.toggle)
		if len(r.pubs) > 0 {
			if at := r.timetable.At(); at < r.pacer.Duration {
				r.due = min(r.due, r.start+int64(at))
				r.wake = min(r.wake, r.gate.Wake(r.due))
			}
		}
	default:
		r.wake, r.due = r.stopAt, r.stopAt
	}
}

// closeWindow ends publishing: what was due and not written stays unsent,
// and slow subscribers read again.
func (r *run) closeWindow(l *client.Loop, now int64) {
	r.sending = false
	el := time.Duration(now - r.start)
	for j, pb := range r.pubs {
		due := r.pacer.Due(min(el, r.pacer.Duration), r.timetable.Phase(j))
		r.part.Unsent += max(0, due-pb.next)
	}
	if r.pausedNow {
		r.pausedNow = false
		r.setPaused(l, false)
	}
}

// setPaused stops or restarts reading on every live slow subscriber.
func (r *run) setPaused(l *client.Loop, paused bool) {
	for i := range r.subs {
		s := &r.subs[i]
		if !s.slow || !s.live || s.c.State() != client.StateOpen || s.paused == paused {
			continue
		}
		ev := uint32(client.EvIn)
		if paused {
			ev = unix.EPOLLET
		}
		if s.c.Flags&client.FlagWantOut != 0 {
			ev |= unix.EPOLLOUT
		}
		if err := client.EpollCtl(l.EpollFD, unix.EPOLL_CTL_MOD, s.c.FD(), s.c.Gen(), ev); err != nil {
			l.Drop(s.c, client.Reason("epoll_ctl: "+client.ErrnoText(err)))
			if l.Run() != r {
				return
			}
			continue
		}
		s.paused = paused
		if !paused {
			l.ReadFrames(s.c) // what arrived while it did not read
			if l.Run() != r {
				return
			}
		}
	}
}

// publish writes publisher j's due messages and returns the bytes written.
func (r *run) publish(l *client.Loop, j int, now int64) int {
	pb := &r.pubs[j]
	if pb.sub < 0 {
		return 0
	}
	c := r.subs[pb.sub].c
	if c.State() != client.StateOpen || c.Flags&client.FlagWantOut != 0 {
		return 0 // closed, or blocked until flush empties its output (resume sends)
	}
	phase := r.timetable.Phase(j)
	due := r.pacer.Due(time.Duration(now-r.start), phase)
	if rp, ok := l.Client().Proto().(proto.Rooms); ok {
		return r.publishProto(l, c, rp, due, pb, phase, now)
	}
	buf := l.WriteBuf[:0]
	wrote := 0
	room, member := uint32(pb.g/r.p.Publishers), uint32(pb.g%r.p.Publishers)
	for pb.next < due {
		if len(buf)+r.flen > cap(l.WriteBuf) {
			if !l.WriteOrQueue(c, buf) {
				return wrote
			}
			buf = l.WriteBuf[:0]
		}
		at := int64(r.pacer.At(pb.next, phase))
		buf = r.appendFrame(l, buf, uint64(pb.next), r.epochUnix+r.start+at, room, member)
		wrote += r.flen
		pb.next++
		r.part.Published++
		r.part.Deliveries += r.recv
		r.part.SlowDeliveries += r.slowRcv
		if now-(r.start+at) > r.lateAfter {
			r.part.Late++
		}
		r.gate.Sent(now, r.start+at)
	}
	if len(buf) > 0 {
		l.WriteOrQueue(c, buf)
	}
	return wrote
}

// appendFrame appends one message as a masked frame with a fresh key.
func (r *run) appendFrame(l *client.Loop, buf []byte, seq uint64, atUnix int64, room, member uint32) []byte {
	key := uint32(l.Rand().Uint64())
	n := len(buf)
	buf = buf[:n+r.flen]
	hl := copy(buf[n:], r.hdr)
	f := buf[n:]
	f[hl-4] = byte(key)
	f[hl-3] = byte(key >> 8)
	f[hl-2] = byte(key >> 16)
	f[hl-1] = byte(key >> 24)
	var m [MarkerLen]byte
	putBroadcastMarker(m[:], seq, atUnix, room, member)
	client.MaskCopy(f[hl:], m[:], key, 0)
	client.MaskCopy(f[hl+MarkerLen:], r.payload[MarkerLen:], key, MarkerLen)
	return buf
}

// putBroadcastMarker writes a message's marker into m's first
// MarkerLen bytes.
func putBroadcastMarker(m []byte, seq uint64, atUnix int64, room, member uint32) {
	client.PutMarker(m, seq, atUnix)
	binary.LittleEndian.PutUint32(m[16:], room)
	binary.LittleEndian.PutUint32(m[20:], member)
}

// slot returns c's subscriber index, or -1.
func (r *run) slot(c *client.Conn) int {
	if i := c.Slot; i >= 0 && i < int64(len(r.subs)) && r.subs[i].c == c {
		return int(i)
	}
	return -1
}

// Resume implements client.LoopRun: a publisher whose output drained sends what
// is due.
func (r *run) Resume(l *client.Loop, c *client.Conn) {
	i := r.slot(c)
	if i < 0 || !r.sending || int(r.subs[i].member) >= r.p.Publishers {
		return
	}
	for j := range r.pubs {
		if r.pubs[j].sub == i {
			r.publish(l, j, l.Now())
			return
		}
	}
}

// OnData implements client.LoopRun: a chunk of a delivery. At its end the marker
// must name a publisher of the subscriber's room; its latency runs from
// the scheduled publish time.
func (r *run) OnData(l *client.Loop, c *client.Conn, ev *client.Event, now int64) {
	i := r.slot(c)
	if i < 0 {
		return
	}
	s := &r.subs[i]
	d := ev.Data
	pos := ev.Total - int64(len(d))
	if pos < MarkerLen {
		k := copy(s.mark[pos:], d)
		d = d[k:]
		pos += int64(k)
	}
	if ev.Total > int64(len(r.payload)) {
		s.bad = true
	} else if r.verify && len(d) > 0 && !bytes.Equal(d, r.payload[pos:ev.Total]) {
		s.bad = true
	}
	if !ev.End {
		return
	}
	seq, atUnix, room, member, reason := r.check(s, ev)
	if reason != "" {
		r.part.Failed++
		r.part.Errors.Add(reason)
		return
	}
	q := int64(seq)
	dup, outOfOrder := r.wins[i*r.p.Publishers+int(member)].see(q)
	if outOfOrder {
		r.part.OutOfOrder++
	}
	if dup {
		r.part.Duplicated++
		return
	}
	r.delivered(s, room, member, q, max(0, r.epochUnix+now-atUnix))
	if r.unflushed++; r.unflushed >= client.ProgressBatch && r.pr != nil {
		r.flush()
	}
	if !r.sending && r.got >= r.want {
		r.Finish(l, false, now)
	}
}

// check reads a complete delivery's marker (its number, scheduled time,
// room and publisher) and says what is wrong with it ("" = nothing); s is
// ready for its next delivery after.
func (r *run) check(s *subscriber, ev *client.Event) (seq uint64, atUnix int64, room, member uint32, reason client.Reason) {
	seq, atUnix = client.ReadMarker(s.mark[:])
	room = binary.LittleEndian.Uint32(s.mark[16:])
	member = binary.LittleEndian.Uint32(s.mark[20:])
	switch {
	case ev.Total != int64(len(r.payload)):
		reason = client.ReasonWrongLength
	case ev.Op != client.OpBinary:
		reason = client.ReasonWrongOpcode
	case s.bad:
		reason = client.ReasonPayloadMismatch
	case room != uint32(s.room) || member >= uint32(r.p.Publishers) || seq > 1<<62:
		reason = client.ReasonMarkerMismatch
	case !r.include && member == uint32(s.member):
		reason = client.ReasonUnexpected
	}
	s.bad = false
	s.mark = [MarkerLen]byte{}
	return seq, atUnix, room, member, reason
}

// see notes message q of the window's publisher: dup when it was seen
// already, outOfOrder when a higher one came before it (one too old to
// tell from a duplicate counts as out of order, not as a duplicate).
func (w *pubWindow) see(q int64) (dup, outOfOrder bool) {
	switch {
	case q > w.max:
		if sh := q - w.max; sh >= 64 {
			w.bits = 1
		} else {
			w.bits = w.bits<<uint(sh) | 1
		}
		w.max = q
	case w.max-q >= 64:
		return false, true
	default:
		bit := uint64(1) << uint(w.max-q)
		if w.bits&bit != 0 {
			return true, false
		}
		w.bits |= bit
		return false, true
	}
	return false, false
}

// delivered counts a distinct delivery of message q from member of room to
// s, with its latency (a slow subscriber's apart; fan-out sampled).
func (r *run) delivered(s *subscriber, room, member uint32, q, lat int64) {
	r.part.Delivered++
	if s.got < s.want {
		r.got++
	}
	s.got++
	if s.slow {
		r.part.SlowDelivered++
		client.Record(r.part.SlowLatency.Histogram, lat)
		return
	}
	client.Record(r.part.Latency.Histogram, lat)
	r.liveLat.Add(lat)
	if q%r.fan.Stride == 0 && q/r.fan.Stride < r.fan.PerPub {
		g := int64(room)*int64(r.p.Publishers) + int64(member)
		k := g*r.fan.PerPub + q/r.fan.Stride
		r.fan.Count[k]++
		r.fan.Max[k] = max(r.fan.Max[k], lat)
	}
}

// Lost implements client.LoopRun: a subscriber the server dropped (or that
// failed) leaves the run; what it was still due counts as lost.
func (r *run) Lost(l *client.Loop, c *client.Conn, _ uint8, reason client.Reason) {
	i := r.slot(c)
	if i < 0 {
		return
	}
	s := &r.subs[i]
	if !s.live {
		return
	}
	s.live = false
	r.want -= s.want
	r.got -= min(s.got, s.want)
	r.part.Dropped++
	if s.slow {
		r.part.SlowDropped++
	}
	r.part.Errors.Add(reason)
	if !r.sending && r.got >= r.want {
		r.wake, r.due = 0, 0 // the next pump ends the run
	}
}

// Tick implements client.LoopRun: it publishes progress.
func (r *run) Tick(_ *client.Loop, now int64) {
	if r.pr != nil && r.unflushed > 0 {
		r.flush()
	}
	r.liveLat.Tick(r.pr.Following(), now)
}

// Finish implements client.LoopRun. Deliveries still due are ignored when they
// come; the close step closes the connections.
func (r *run) Finish(l *client.Loop, stopped bool, now int64) {
	if r.sending {
		r.closeWindow(l, now)
	}
	for i := range r.subs {
		s := &r.subs[i]
		if s.c.Slot == int64(i) {
			s.c.Slot = 0
		}
	}
	elapsed := max(0, time.Duration(now-r.start))
	r.part.Used = min(elapsed, r.pacer.Duration)
	r.part.Drain = elapsed - r.part.Used
	r.part.Fanout = r.fan
	r.gate.End(l)
	r.part.Slack = time.Duration(r.gate.Slack)
	r.part.SendLate = client.Hist{Histogram: r.gate.Late}
	r.part.Wakeups = l.Wakes() - r.wakes0
	if r.part.Subscribers > 0 && r.part.Dropped == r.part.Subscribers {
		r.part.Stopped = client.StopNoConnections
	}
	if r.pr != nil && r.unflushed > 0 {
		r.pr.Done.Add(r.unflushed)
	}
	final := r.liveCounts()
	final.Lost = r.part.Lost()
	r.pr.Following().Publish(&r.published, final)
	r.liveLat.Flush(r.pr.Following())
	l.Finished(r.ID(), &r.part, stopped)
}

// flush publishes the deliveries not yet in Progress, and Live's counts.
func (r *run) flush() {
	r.pr.Done.Add(r.unflushed)
	r.unflushed = 0
	r.pr.Following().Publish(&r.published, r.liveCounts())
}

// liveCounts are this loop's totals so far, for Live.
func (r *run) liveCounts() client.LiveCounts {
	return client.LiveCounts{Sent: r.part.Published, Recv: r.part.Delivered, Failed: r.part.Failed, Late: r.part.Late, Unsent: r.part.Unsent}
}
