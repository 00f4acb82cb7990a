package script

import (
	"fmt"
	"math"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/proto"
	lang "github.com/wsplan/wsplan/internal/script"
)

// What one loop runs of a script phase: its users' connections (a dialer
// of its own), the open arrivals' timetable, the users' timers, and the
// end of the phase. user.go is one user's steps and messages.

// scriptJob is what every loop of a script phase shares (read-only).
type scriptJob struct {
	phase int64
	prog  *lang.Program
	verbs []uint8 // by pc: the proto.Out verb of a send
	// quota is, by pc, whether an expect waits for the answer to a QoS > 0
	// publish: such expects count against a connection's quota
	// (proto.Conn.Quota); inflight is the deepest window of them.
	quota    []bool
	inflight int
	rows     *lang.Rows
	row      [][][]byte // rows.Values as bytes, by index in rows
	query    *lang.Template
	hdrs     []scriptHeader
	start    time.Time // t = 0 of the timetable, the same for every loop
	pr       *client.Progress
}

type scriptHeader struct {
	name string
	val  *lang.Template
}

// Start implements Params: the program is compiled once per process and
// shared by its loops (templates, paths and matchers are read-only).
func (p *Params) Start(ph *client.PhaseEnv) (*client.PhasePlan, error) {
	prog, errs := p.compile(proto.AnswerRule(ph.Client.Proto()))
	if len(errs) > 0 {
		return nil, fmt.Errorf("client: script: %v", errs[0])
	}
	job := &scriptJob{phase: ph.ID, prog: prog, rows: p.Rows, start: ph.Start, pr: ph.Progress, verbs: make([]uint8, len(prog.Instrs))}
	for i, in := range prog.Instrs {
		if in.Op == lang.OpSend && in.Verb != "" {
			v, ok := proto.VerbCodes[in.Verb]
			if !ok || ph.Client.Proto() == nil || !proto.HasVerb(ph.Client.Proto(), v) {
				return nil, fmt.Errorf("client: script: %s: the server's protocol has no %s", in.Label, in.Verb)
			}
			job.verbs[i] = v
		}
	}
	job.quota, job.inflight = quotaExpects(prog)
	if err := job.compileRequest(p); err != nil {
		return nil, err
	}
	if p.Rows != nil {
		job.row = make([][][]byte, len(p.Rows.Values))
		for i, r := range p.Rows.Values {
			job.row[i] = make([][]byte, len(r))
			for j, v := range r {
				job.row[i][j] = []byte(v)
			}
		}
	}
	units := int64(p.Users)
	if p.open() {
		units = p.arrivals()
	}
	ph.Progress.Begin(units)
	return &client.PhasePlan{
		Starts: client.StartParts(ph, p, func(l *client.Loop, q *Params) { startRun(l, job, q) }),
		Done: func(res client.Result, wall time.Duration) {
			r := res.(*Result)
			r.Used = wall
			client.EnsureHists(&r.Connect)
			for _, name := range prog.Exchanges {
				r.exchange(name) // every named exchange, measured or not
			}
		},
	}, nil
}

// quotaExpects marks the expects that wait for the answer to a QoS > 0
// publish, by pc, and returns the deepest window of them.
func quotaExpects(prog *lang.Program) ([]bool, int) {
	marks := make([]bool, len(prog.Instrs))
	deepest := 0
	for pc, in := range prog.Instrs {
		if in.Op != lang.OpExpect || !in.ByID || in.Send < 0 {
			continue
		}
		if s := &prog.Instrs[in.Send]; s.Verb == lang.VerbPublish && s.QoS > 0 {
			marks[pc] = true
			deepest = max(deepest, in.Window)
		}
	}
	return marks, deepest
}

// compileRequest compiles the users' query and header templates (fields
// only: no capture exists before the connection).
func (j *scriptJob) compileRequest(p *Params) error {
	var cols []string
	if p.Rows != nil {
		cols = p.Rows.Columns
	}
	env := &lang.Env{Columns: cols}
	var err error
	if p.Query != "" {
		if j.query, err = lang.ParseTemplate(p.Query, env); err != nil {
			return fmt.Errorf("client: script: query: %w", err)
		}
	}
	for _, h := range p.HeaderList {
		t, err := lang.ParseTemplate(h[1], env)
		if err != nil {
			return fmt.Errorf("client: script: header %s: %w", h[0], err)
		}
		j.hdrs = append(j.hdrs, scriptHeader{name: h[0], val: t})
	}
	return nil
}

// scriptRun is a script phase on one loop.
type scriptRun struct {
	client.BaseRun
	d      client.Dialer
	cl     *client.Client
	job    *scriptJob
	p      *Params
	users  []user
	free   []int32         // free user slots
	byNum  map[int64]int32 // user number -> slot, while its connection is dialled
	timers client.TimerHeap

	// Closed arrivals: users dialled so far; at most Concurrency in flight.
	dialled int
	// Open arrivals: the next one (j-th of this part), how many, the
	// loop clock of arrival k = 0, and ns per arrival of the whole phase.
	arrNext, arrN int64
	arrAt0        int64
	period        float64
	active        int   // users dialling or running
	live          int64 // users running (connected, not ended)

	start, end, stopAt int64 // loop clock: t = 0, end of Duration (0 = none), latest end
	lateAfter          int64
	exch               []Exchange // by exchange index
	part               Result
	scratch            lang.Scratch
	vars               lang.Vars
	rawMsg             proto.Message // a raw message, as a protocol's would be
	out                proto.Out     // a verb's message being sent
	tbuf               []byte        // a rendered topic
	ebuf               []byte        // a message its protocol shaped
	sbuf               []byte        // a rendered message
	idbuf              []byte
	zc                 pmdeflate.Compressor
	zbits              uint8
	zout               []byte
	unflushed          int64
	published          client.LiveCounts // what Live has of this loop
	liveLat            client.LiveHist   // the exchanges' latencies for Live
	ending             bool
}

// startRun begins a script phase on this loop.
func startRun(l *client.Loop, job *scriptJob, p *Params) {
	r := &scriptRun{BaseRun: client.NewBaseRun(job.phase), cl: l.Client(), job: job, p: p, byNum: map[int64]int32{},
		exch: make([]Exchange, len(job.prog.Exchanges))}
	for i := range r.exch {
		r.exch[i].Latency = client.NewHist()
	}
	r.part.Connect = client.NewHist()
	r.part.Inflight = int64(job.inflight)
	r.vars.Rand = l.Rand()
	r.liveLat.Start(job.pr.Following(), l.Now())
	r.d.Init(r, int64(p.ConnectTimeout), p.Retries, r.request)
	l.SetRun(r)
	r.start = int64(job.start.Sub(l.Epoch()))
	if p.Duration > 0 { // drain and late_after come defaulted (Ready)
		r.end = r.start + int64(p.Duration)
		r.stopAt = r.end + int64(p.Drain)
	}
	r.lateAfter = int64(p.LateAfter)
	l.SetTick(min(p.ConnectTimeout, p.Timeout).D() / 10)
	if p.open() {
		r.arrN = p.arrivals()
		r.part.Arrivals = r.arrN
		r.period = 1e9 / float64(p.ArrivalRate)
		r.arrAt0 = r.start
		// Pointers into users stay valid while a user runs: no growth.
		r.users = make([]user, 0, max(p.MaxUsers, 1))
	} else {
		r.users = make([]user, 0, p.Users)
		r.fill(l)
	}
	r.Pump(l, l.Now())
}

// request returns user idx's upgrade request: the target's, with the
// query and headers rendered for the user; nil when one would render
// more than lang.MaxRenderBytes (the attempt fails, ReasonTooLong).
func (r *scriptRun) request(idx int64, target int) *client.UpgradeRequest {
	base := &r.cl.Targets()[target].Req
	if r.job.query == nil && len(r.job.hdrs) == 0 {
		return base
	}
	v := &lang.Vars{Conn: idx, Row: r.rowOf(idx), Rand: r.vars.Rand, NowNs: time.Now().UnixNano()}
	var q []byte
	ok := true
	if r.job.query != nil {
		q, ok = r.job.query.Append(nil, v)
	}
	var h []byte
	for _, hd := range r.job.hdrs {
		h = append(h, hd.name...)
		h = append(h, ": "...)
		var fits bool
		h, fits = hd.val.Append(h, v)
		ok = ok && fits
		h = append(h, "\r\n"...)
	}
	if !ok {
		return nil
	}
	req := base.With(string(q), h)
	return &req
}

// rowOf returns the row user num takes, nil without data.
func (r *scriptRun) rowOf(num int64) [][]byte {
	rows := r.job.rows
	if rows == nil {
		return nil
	}
	i := lang.Index(r.p.Order, num, rows.Total, r.p.RowSeed) - rows.First
	if i < 0 || i >= len(r.job.row) {
		return nil // cannot happen: Split sends every row a part's users take
	}
	return r.job.row[i]
}

// fill dials closed arrivals' users up to the concurrency.
func (r *scriptRun) fill(l *client.Loop) {
	for len(r.d.Inflight) < max(r.p.Concurrency, 1) && r.dialled < r.p.Users {
		num := r.p.First + int64(r.dialled)
		r.dialled++
		r.dial(l, num, l.Now())
		if l.Run() != r {
			return
		}
	}
}

// dial starts user num's connection; ready is when its script is due.
func (r *scriptRun) dial(l *client.Loop, num int64, ready int64) {
	slot := r.newUser(num, ready)
	r.byNum[num] = slot
	r.active++
	l.Dial(&r.d, num, 0)
}

// newUser takes a slot for user num.
func (r *scriptRun) newUser(num, ready int64) int32 {
	u := user{num: num, row: r.rowOf(num), ready: ready, state: uDialing, gen: 1}
	if n := len(r.free); n > 0 {
		slot := r.free[n-1]
		r.free = r.free[:n-1]
		old := &r.users[slot]
		u.pend, u.caps, u.msg, u.gen = old.pend[:0], old.caps[:0], old.msg[:0], old.gen+1
		r.users[slot] = u
		return slot
	}
	r.users = append(r.users, u)
	return int32(len(r.users) - 1)
}

// Dialed implements dialHooks: the user's script starts.
func (r *scriptRun) Dialed(l *client.Loop, c *client.Conn, idx int64, now int64) {
	slot, ok := r.byNum[idx]
	if !ok {
		l.CloseConn(c, client.CloseNormal) // cannot happen
		return
	}
	delete(r.byNum, idx)
	u := &r.users[slot]
	u.c = c
	c.Slot = int64(slot)
	r.part.Users++
	r.live++
	r.part.Peak = max(r.part.Peak, r.live)
	if !r.p.open() {
		u.ready = now // closed arrivals start when connected
	}
	r.quotaOf(c)
	u.state = uRunning
	r.advance(l, u, now)
	if l.Run() == r && !r.p.open() {
		r.fill(l)
	}
}

// quotaOf notes the quota the server set c (proto.Conn.Quota): the least
// over the users' connections, and whether it throttles the steps'
// pipelining.
func (r *scriptRun) quotaOf(c *client.Conn) {
	s := client.ProtoOf(c)
	if s == nil || s.Quota == 0 {
		return
	}
	q := int64(s.Quota)
	if r.part.ReceiveMax == 0 || q < r.part.ReceiveMax {
		r.part.ReceiveMax = q
	}
	if int(s.Quota) < r.job.inflight {
		r.part.Throttled++
	}
}

// GaveUp implements dialHooks.
func (r *scriptRun) GaveUp(l *client.Loop, idx int64, reason client.Reason) {
	r.part.OpenFailed++
	r.part.OpenErrors.Add(reason)
	if slot, ok := r.byNum[idx]; ok {
		delete(r.byNum, idx)
		r.release(slot)
	}
	if !r.p.open() {
		r.fill(l)
	}
	r.maybeDone(l, l.Now())
}

// release frees a user's slot.
func (r *scriptRun) release(slot int32) {
	u := &r.users[slot]
	u.state = uFree
	u.c = nil
	u.gen++
	r.active--
	r.free = append(r.free, slot)
	r.progress(1)
}

// progress publishes finished users in batches.
func (r *scriptRun) progress(n int64) {
	r.unflushed += n
	if r.job.pr != nil && r.unflushed >= client.ProgressBatch {
		r.job.pr.Done.Add(r.unflushed)
		r.unflushed = 0
		r.job.pr.Following().Publish(&r.published, r.liveCounts())
	}
}

// WakeAt implements LoopRun: the next timer or arrival.
func (r *scriptRun) WakeAt() int64 {
	w := r.timers.Next()
	if r.arrNext < r.arrN {
		if a := r.arrivalAt(r.arrNext); w < 0 || a < w {
			w = a
		}
	}
	if r.stopAt > 0 && (w < 0 || r.stopAt < w) {
		w = r.stopAt
	}
	return w
}

// arrivalAt is the loop clock of this part's j-th arrival.
func (r *scriptRun) arrivalAt(j int64) int64 {
	k := r.p.ArrivalFirst + j*max(r.p.ArrivalStride, 1)
	return r.arrAt0 + int64(math.Round(float64(k)*r.period))
}

// Pump implements LoopRun: due arrivals, due timers, the phase's end.
func (r *scriptRun) Pump(l *client.Loop, now int64) {
	for r.arrNext < r.arrN && l.Run() == r {
		at := r.arrivalAt(r.arrNext)
		if at > now {
			break
		}
		num := r.p.ArrivalFirst + r.arrNext*max(r.p.ArrivalStride, 1)
		r.arrNext++
		if r.active >= max(r.p.MaxUsers, 1) {
			r.part.Dropped++
			r.progress(1)
			continue
		}
		if now-at > r.lateAfter {
			r.part.Late++
		}
		r.dial(l, num, at)
	}
	for l.Run() == r {
		t := r.timers.Next()
		if t < 0 || t > now {
			break
		}
		tm := r.timers.Pop()
		if u := &r.users[tm.ID]; u.gen == tm.Gen && u.wake == tm.At {
			u.wake = 0
			r.timer(l, u, now)
		}
	}
	if l.Run() == r && r.stopAt > 0 && now >= r.stopAt {
		r.Finish(l, false, now)
		return
	}
	r.maybeDone(l, now)
}

// setWake makes sure u wakes up by `at` (0 = nothing to wait for). A
// wake-up already armed no later stays, and one no longer needed is not
// taken back: when it comes, timer re-arms for what is due then. So a user
// keeps one timer through its exchanges (a new deadline each, later than
// the one armed) instead of leaving one in the heap per exchange: the heap
// holds about one entry per user, not exchange rate × timeout.
func (r *scriptRun) setWake(u *user, slot int32, at int64) {
	if at <= 0 || (u.wake > 0 && u.wake <= at) {
		return
	}
	u.wake = at
	r.timers.Push(client.Timer{At: at, ID: slot, Gen: u.gen})
}

// maybeDone ends the phase here once every user is done and no arrival
// is left.
func (r *scriptRun) maybeDone(l *client.Loop, now int64) {
	if l.Run() != r || r.ending || r.active > 0 || r.arrNext < r.arrN || (!r.p.open() && r.dialled < r.p.Users) {
		return
	}
	r.Finish(l, false, now)
}

// Tick implements LoopRun: handshake deadlines, progress.
func (r *scriptRun) Tick(l *client.Loop, now int64) {
	r.d.Tick(l, now)
	if l.Run() == r && r.job.pr != nil && r.unflushed > 0 {
		r.job.pr.Done.Add(r.unflushed)
		r.unflushed = 0
	}
	if l.Run() == r {
		r.job.pr.Following().Publish(&r.published, r.liveCounts())
		r.liveLat.Tick(r.job.pr.Following(), now)
	}
}

// Lost implements LoopRun: a user's connection dropped.
func (r *scriptRun) Lost(l *client.Loop, c *client.Conn, _ uint8, reason client.Reason) {
	slot := int32(c.Slot)
	if slot < 0 || int(slot) >= len(r.users) || r.users[slot].c != c {
		return
	}
	u := &r.users[slot]
	r.part.UsersFailed++
	r.part.Errors.Add(reason)
	r.abort(l, u, slot, false)
}

// Finish implements LoopRun: users still running are ended (their
// waiting expects fail with "phase ended"), connections closed.
func (r *scriptRun) Finish(l *client.Loop, stopped bool, _ int64) {
	if r.ending {
		return
	}
	r.ending = true
	r.d.Abandon(l)
	for i := range r.users {
		u := &r.users[i]
		if u.state == uFree || u.state == uDialing {
			continue
		}
		r.failPending(u, ReasonPhaseEnd)
		r.part.Cut++
		if u.c != nil && u.c.State() == client.StateOpen {
			l.CloseConn(u.c, client.CloseNormal)
		}
	}
	if r.job.pr != nil && r.unflushed > 0 {
		r.job.pr.Done.Add(r.unflushed)
	}
	r.job.pr.Following().Publish(&r.published, r.liveCounts())
	r.liveLat.Flush(r.job.pr.Following())
	for i, name := range r.job.prog.Exchanges {
		e := r.part.exchange(name)
		e.merge(&r.exch[i])
	}
	r.part.Connect.Add(r.d.Part.Latency) // the users' handshakes
	l.Finished(r.job.phase, &r.part, stopped)
}

// liveCounts are this loop's totals so far, for Live: messages, and
// exchanges completed and failed (the users' connections are the loop's:
// loopCounts).
func (r *scriptRun) liveCounts() client.LiveCounts {
	c := client.LiveCounts{Sent: r.part.Sent, Recv: r.part.Received, Late: r.part.Late}
	for i := range r.exch {
		e := &r.exch[i]
		c.Exchanges += e.Count
		c.Failed += e.Timeouts + e.Mismatched + e.Failed + e.Errors + e.Downgraded
	}
	return c
}
