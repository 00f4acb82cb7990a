package client

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Live is what a running phase has done so far, read while it runs by the
// live metrics (--metrics-listen, --metrics-push). Loops add their
// messages to it where they already publish progress (Progress.Done,
// every progressBatch units and at each tick) and merge their latencies
// into it once a second, when their timeline's second rolls: never per
// message. Connections are counted as they open, close and fail, by every
// dialer of a loop (a phase's, the reconnector's) in counters of the loop
// (loopCounts: atomic, no lock) that Live reads when asked: it follows
// the client a phase runs on from the phase's Client.Run. A shard group
// sets each shard's snapshot as its progress lines bring them (SetShard);
// a snapshot is then the sum over the shards. Nil in a Progress: no live
// metrics.
type Live struct {
	sent, recv, failed, late, unsent atomic.Int64
	lost, exch                       atomic.Int64

	src atomic.Pointer[liveSource] // the client followed; nil = none yet

	mu        sync.Mutex
	lat       *hdrhistogram.Histogram // latencies of finished seconds
	shards    []LiveShard
	shardBase []LiveSnapshot // each shard's counts of the group's runs before the one in progress
}

// loopCounts are one loop's connection counts, written by the loop as
// connections open, close and are given up, read by Live from any
// goroutine. Apart from the loop so that Live holds no loop.
type loopCounts struct {
	open   atomic.Int64                    // open connections (len(loop.open))
	opened atomic.Int64                    // handshakes done, by any dialer, since the loop started
	failed [NumConnectReasons]atomic.Int64 // connections given up, by reason, since the loop started
	peer   peerLog                         // open connections the server closed or reset (peerclose.go)
}

// connTotals are loopCounts summed over loops at one moment.
type connTotals struct {
	open, opened int64
	failed       ConnectFailures
}

// liveSource is the client a Live follows: its loops' counts, and their
// totals when Live began to follow it (the phase counts from there).
type liveSource struct {
	loops []*loopCounts
	base  connTotals
}

func (s *liveSource) totals() connTotals {
	var t connTotals
	for _, lc := range s.loops {
		t.open += lc.open.Load()
		t.opened += lc.opened.Load()
		for i := range lc.failed {
			t.failed[i] += lc.failed[i].Load()
		}
	}
	return t
}

// follow makes l read c's connection counts from now on (the first call
// wins: a phase that runs several times on one Live keeps counting from
// its start). A nil l does nothing.
func (l *Live) follow(c *Client) {
	if l == nil || l.src.Load() != nil {
		return
	}
	src := &liveSource{loops: make([]*loopCounts, len(c.loops))}
	for i, lp := range c.loops {
		src.loops[i] = lp.counts
	}
	src.base = src.totals()
	l.src.CompareAndSwap(nil, src)
}

// LiveShard is one shard's live snapshot, named as its figures are
// (shard.Cost.Shard).
type LiveShard struct {
	Name string
	LiveSnapshot
}

// LiveSnapshot is a Live's counts at one moment. JSON on the shard
// protocol's progress lines.
type LiveSnapshot struct {
	Sent          int64           `json:"sent,omitempty"`          // messages sent
	Recv          int64           `json:"recv,omitempty"`          // messages received (echoes, deliveries, pongs)
	Failed        int64           `json:"failed,omitempty"`        // messages that failed (a mismatch, a timeout)
	Lost          int64           `json:"lost,omitempty"`          // messages whose reply never came (at the phase's end)
	Late          int64           `json:"late,omitempty"`          // paced kinds: sends that left after late_after
	Unsent        int64           `json:"unsent,omitempty"`        // paced kinds: scheduled, never sent (at the phase's end)
	Connects      int64           `json:"connects,omitempty"`      // connections opened (reconnects too)
	ConnectFailed ConnectFailures `json:"connect_failed,omitzero"` // connections given up (a reconnect's attempts too), by reason
	Exchanges     int64           `json:"exchanges,omitempty"`     // scripts: exchanges completed (a request and its reply)
	// Open is the connections open now; HasOpen says it was read (a
	// client followed, or a shard's snapshot came), else Open means
	// nothing yet.
	Open    int64 `json:"open,omitempty"`
	HasOpen bool  `json:"-"`
	// Latency is the latency histogram so far (seconds).
	Latency NativeHist `json:"latency,omitzero"`
	// CPUSeconds and RSS are the process's (a shard's, on its progress
	// lines): CPU time since it started, resident set now.
	CPUSeconds float64 `json:"cpu_s,omitempty"`
	RSS        int64   `json:"rss,omitempty"`
}

// addCounts adds o's counts (not its gauges: Open, CPUSeconds, RSS) to s.
func (s *LiveSnapshot) addCounts(o LiveSnapshot) {
	s.Sent += o.Sent
	s.Recv += o.Recv
	s.Failed += o.Failed
	s.Lost += o.Lost
	s.Late += o.Late
	s.Unsent += o.Unsent
	s.Connects += o.Connects
	s.ConnectFailed.add(o.ConnectFailed)
	s.Exchanges += o.Exchanges
	s.Latency.add(o.Latency)
}

// NativeSchema is the resolution of NativeHist: bucket i covers
// (2^((i-1)/8), 2^(i/8)] seconds, a factor of 1.09 per bucket (Prometheus
// native histograms' schema 3; OpenTelemetry's exponential histograms at
// scale 3, whose index is i-1).
const NativeSchema = 3

// NativeHist is a latency histogram in exponential buckets of schema
// NativeSchema, in seconds: it merges exactly (bucket counts add), and
// Prometheus and OpenTelemetry take it as it is.
type NativeHist struct {
	Count   uint64         `json:"n,omitempty"`
	Sum     float64        `json:"sum,omitempty"` // seconds
	Buckets map[int]uint64 `json:"b,omitempty"`   // bucket index -> count
}

// NativeBucket is the index of the bucket of NativeSchema holding v
// seconds (> 0).
func NativeBucket(v float64) int {
	frac, exp := math.Frexp(v) // v = frac × 2^exp, frac in [0.5, 1)
	// v = (2 frac) × 2^(exp-1), 2 frac in [1, 2): the bucket is
	// 8(exp-1) + the smallest j with 2 frac <= 2^(j/8).
	f := 2 * frac
	j := 0
	for j < 8 && f > nativeBounds[j] {
		j++
	}
	return 8*(exp-1) + j
}

// nativeBounds[j] = 2^(j/8).
var nativeBounds = func() [9]float64 {
	var b [9]float64
	for j := range b {
		b[j] = math.Exp2(float64(j) / 8)
	}
	return b
}()

// NativeUpper is the upper bound of bucket i, seconds.
func NativeUpper(i int) float64 { return math.Exp2(float64(i) / 8) }

// add adds o's counts into h.
func (h *NativeHist) add(o NativeHist) {
	h.Count += o.Count
	h.Sum += o.Sum
	for i, n := range o.Buckets {
		if h.Buckets == nil {
			h.Buckets = map[int]uint64{}
		}
		h.Buckets[i] += n
	}
}

// Indexes are the histogram's bucket indexes in order.
func (h NativeHist) Indexes() []int {
	out := make([]int, 0, len(h.Buckets))
	for i := range h.Buckets {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// nativeOf converts an HDR histogram of nanoseconds: each of its recorded
// values (the highest of its equivalent range) goes to the bucket holding
// it.
func nativeOf(h *hdrhistogram.Histogram) NativeHist {
	out := NativeHist{Buckets: map[int]uint64{}}
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		v := float64(max(b.To, 1)) / 1e9
		out.Buckets[NativeBucket(v)] += uint64(b.Count)
		out.Count += uint64(b.Count)
		out.Sum += v * float64(b.Count)
	}
	return out
}

// LiveCounts are a loop's running totals of a phase's messages, as its
// part result counts them; publish adds what changed since the loop's
// last publish. (Connections are counted by the loop: loopCounts.)
type LiveCounts struct {
	Sent, Recv, Failed, Lost, Late, Unsent, Exchanges int64
}

// Publish adds now - *last to l and remembers now. A nil l does nothing.
func (l *Live) Publish(last *LiveCounts, now LiveCounts) {
	if l == nil {
		return
	}
	add := func(c *atomic.Int64, cur, prev int64) {
		if cur != prev {
			c.Add(cur - prev)
		}
	}
	add(&l.sent, now.Sent, last.Sent)
	add(&l.recv, now.Recv, last.Recv)
	add(&l.failed, now.Failed, last.Failed)
	add(&l.lost, now.Lost, last.Lost)
	add(&l.late, now.Late, last.Late)
	add(&l.unsent, now.Unsent, last.Unsent)
	add(&l.exch, now.Exchanges, last.Exchanges)
	*last = now
}

// live is p's Live, nil without one.
func (p *Progress) Following() *Live {
	if p == nil {
		return nil
	}
	return p.Live
}

// observe merges a loop's latencies of one second (ns). A nil l does
// nothing.
func (l *Live) observe(h *hdrhistogram.Histogram) {
	if l == nil || h.TotalCount() == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lat == nil {
		l.lat = NewHistogram()
	}
	l.lat.Merge(h)
}

// SetShard sets shard i's latest snapshot (a shard group's progress):
// its counts add to those of the group's runs before (ShardRunsDone), its
// gauges replace theirs.
func (l *Live) SetShard(i int, name string, s LiveSnapshot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.growShards(i)
	cur := LiveSnapshot{Open: s.Open, CPUSeconds: s.CPUSeconds, RSS: s.RSS}
	cur.addCounts(l.shardBase[i])
	cur.addCounts(s)
	l.shards[i] = LiveShard{Name: name, LiveSnapshot: cur}
}

// growShards makes room for shard i; l.mu is held.
func (l *Live) growShards(i int) {
	for len(l.shards) <= i {
		l.shards = append(l.shards, LiveShard{})
		l.shardBase = append(l.shardBase, LiveSnapshot{})
	}
}

// SetShardOpen sets shard i's open connections, before its progress
// lines say (a shard group's run starting).
func (l *Live) SetShardOpen(i int, name string, open int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.growShards(i)
	l.shards[i].Name, l.shards[i].Open = name, open
}

// ShardRunsDone ends a shard group's run of the phase: a shard counts
// each run from zero, so the next run's snapshots add to what the shards
// have counted so far.
func (l *Live) ShardRunsDone() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, sh := range l.shards {
		l.shardBase[i] = sh.LiveSnapshot
	}
}

// Shards returns every shard's latest snapshot, in shard order (none
// without shards).
func (l *Live) Shards() []LiveShard {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.shards)
}

// Snapshot returns the counts so far: this process's loops', plus every
// shard's latest.
func (l *Live) Snapshot() LiveSnapshot {
	s := LiveSnapshot{
		Sent: l.sent.Load(), Recv: l.recv.Load(), Failed: l.failed.Load(), Lost: l.lost.Load(), Late: l.late.Load(),
		Unsent: l.unsent.Load(), Exchanges: l.exch.Load(),
	}
	if src := l.src.Load(); src != nil {
		t := src.totals()
		s.Open, s.HasOpen = t.open, true
		s.Connects = t.opened - src.base.opened
		for i := range t.failed {
			s.ConnectFailed[i] = t.failed[i] - src.base.failed[i]
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lat != nil {
		s.Latency = nativeOf(l.lat)
	}
	for _, sh := range l.shards {
		s.addCounts(sh.LiveSnapshot)
		s.Open += sh.Open
		s.HasOpen = true
		s.CPUSeconds += sh.CPUSeconds
		s.RSS += sh.RSS
	}
	return s
}

// LiveHist gathers one loop's latencies for Live between hand-overs: a
// kind that times its messages outside the rate timeline records into it
// beside its own histogram, hands it over at a tick once a second has
// passed (tick), and the rest when the phase ends (flush). Its zero value,
// or one started without a Live, records nothing.
type LiveHist struct {
	h  *hdrhistogram.Histogram
	at int64 // loop clock of the last hand-over
}

// Start readies w for live at loop clock now (nothing without live).
func (w *LiveHist) Start(live *Live, now int64) {
	if live != nil {
		w.h, w.at = NewHistogram(), now
	}
}

// Add records latency v (ns).
func (w *LiveHist) Add(v int64) {
	if w.h != nil {
		Record(w.h, v)
	}
}

// Tick hands the latencies over to live when a second has passed since
// the last hand-over.
func (w *LiveHist) Tick(live *Live, now int64) {
	if w.h != nil && now-w.at >= int64(time.Second) {
		w.Flush(live)
		w.at = now
	}
}

// Flush hands the latencies over to live.
func (w *LiveHist) Flush(live *Live) {
	if w.h != nil {
		live.observe(w.h)
		w.h.Reset()
	}
}
