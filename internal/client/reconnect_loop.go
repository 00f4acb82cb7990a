package client

import "time"

// reconnector is one loop's reconnects: the pool's connections the
// server dropped, each waiting out the policy's wait before its next
// attempt, dialled by a dialer of its own.
type reconnector struct {
	pol    Reconnect
	d      Dialer
	waits  []rcWait
	free   []int32
	timers TimerHeap
	byIdx  map[int64]int32 // attempt's connection number → wait
	next   int64           // attempts dialled: attempt k is connection base + k×stride
	base   int64
	stride int64
	check  int64 // loop clock of the next deadline check, while attempts are in flight
	st     ReconnectStats
}

// rcWait is one dropped connection on its way back.
type rcWait struct {
	old    *Conn // the dropped connection (closed): where the run had it
	lostAt int64 // loop clock of the drop
	tries  int   // attempts that failed
	gen    uint32
	busy   bool
}

// rcNumbers is where reconnects' connection numbers start, past any a
// phase gives out: numbers pick a connection's target and source address.
const rcNumbers = 1 << 40

// newReconnector readies loop id's of n for policy p (checked).
func newReconnector(p Reconnect, id, n int) *reconnector {
	rc := &reconnector{pol: p, byIdx: map[int64]int32{}, base: rcNumbers + int64(id), stride: int64(n)}
	rc.d.Init(rc, int64(p.Timeout), 0, nil)
	rc.st.Latency = NewHist()
	return rc
}

// dropped takes c, a connection of the pool the server dropped at now,
// when the run in progress (if any) can take its replacement.
func (rc *reconnector) dropped(l *Loop, c *Conn, now int64) {
	if r := l.ph; r != nil {
		if _, ok := r.(adopter); !ok {
			return
		}
	}
	var i int32
	if n := len(rc.free); n > 0 {
		i = rc.free[n-1]
		rc.free = rc.free[:n-1]
	} else {
		rc.waits = append(rc.waits, rcWait{})
		i = int32(len(rc.waits) - 1)
	}
	w := &rc.waits[i]
	*w = rcWait{old: c, lostAt: now, gen: w.gen + 1, busy: true}
	rc.st.Drops++
	if rc.st.FirstDrop == 0 {
		rc.st.FirstDrop = l.epoch.Add(time.Duration(now)).UnixNano()
	}
	rc.arm(l, i, now)
}

// arm sets wait i's next attempt by the policy.
func (rc *reconnector) arm(l *Loop, i int32, now int64) {
	w := &rc.waits[i]
	u := float64(l.rng.Uint64()>>11) / (1 << 53)
	rc.timers.Push(Timer{At: now + int64(rc.pol.wait(w.tries, u)), ID: i, Gen: w.gen})
}

// wakeAt is the loop clock of the reconnector's next attempt or deadline
// check; < 0 = none.
func (rc *reconnector) wakeAt() int64 {
	w := rc.timers.Next()
	if len(rc.d.Inflight) > 0 && (w < 0 || rc.check < w) {
		w = rc.check
	}
	return w
}

// pump starts the attempts due and fails those past their deadline.
func (rc *reconnector) pump(l *Loop, now int64) {
	for {
		at := rc.timers.Next()
		if at < 0 || at > now {
			break
		}
		t := rc.timers.Pop()
		w := &rc.waits[t.ID]
		if !w.busy || w.gen != t.Gen {
			continue
		}
		idx := rc.base + rc.next*rc.stride
		rc.next++
		rc.byIdx[idx] = t.ID
		if len(rc.d.Inflight) == 0 {
			rc.check = now + int64(rc.pol.Timeout)/10
		}
		l.Dial(&rc.d, idx, 0)
	}
	if len(rc.d.Inflight) > 0 && now >= rc.check {
		rc.d.Tick(l, now)
		rc.check = now + max(int64(rc.pol.Timeout)/10, int64(minTick))
	}
}

// Dialed implements dialHooks: a dropped connection is back; the run in
// progress takes it in the old one's place.
func (rc *reconnector) Dialed(l *Loop, c *Conn, idx int64, now int64) {
	i, ok := rc.byIdx[idx]
	if !ok {
		return
	}
	delete(rc.byIdx, idx)
	w := &rc.waits[i]
	old := w.old
	rc.st.Reconnects++
	Record(rc.st.Latency.Histogram, now-w.lostAt)
	if rc.st.PerTick == nil {
		rc.st.PerTick = map[int64]int64{}
	}
	wall := l.epoch.Add(time.Duration(now))
	rc.st.PerTick[wall.UnixNano()/int64(PeakWindow)]++
	if rc.st.FirstBack == 0 {
		rc.st.FirstBack = wall.UnixNano()
	}
	rc.st.LastBack = wall.UnixNano()
	w.busy, w.old = false, nil
	rc.free = append(rc.free, i)
	if a, ok := l.ph.(adopter); ok {
		a.Adopt(l, old, c)
	}
}

// GaveUp implements dialHooks: the attempt failed; the next one waits.
func (rc *reconnector) GaveUp(l *Loop, idx int64, reason Reason) {
	i, ok := rc.byIdx[idx]
	if !ok {
		return
	}
	delete(rc.byIdx, idx)
	rc.st.Failed++
	rc.st.Errors.Add(reason)
	rc.waits[i].tries++
	rc.arm(l, i, l.Now())
}

// Reconnecting reports whether dropped connections of l are on their way
// back: a timed run then keeps going for them.
func (l *Loop) Reconnecting() bool { return l.rc != nil && len(l.rc.free) < len(l.rc.waits) }

// stats returns what the reconnector did since the last call, with the
// drops still pending, and starts counting anew.
func (rc *reconnector) stats() ReconnectStats {
	s := rc.st
	for _, w := range rc.waits {
		if w.busy {
			s.Pending++
		}
	}
	rc.st = ReconnectStats{Latency: NewHist()}
	return s
}
