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
// live metrics (--metrics-listen, --metrics-push). Loops add to it where
// they already publish progress (Progress.Done, every progressBatch units
// and at each tick) and merge their latencies into it once a second, when
// their timeline's second rolls: never per message. A shard group sets
// each shard's snapshot as its progress lines bring them (SetShard); a
// snapshot is then the sum over the shards. Nil in a Progress: no live
// metrics.
type Live struct {
	sent, recv, failed, late, unsent atomic.Int64
	lost                             atomic.Int64
	connects, connectFailed, exch    atomic.Int64

	mu     sync.Mutex
	lat    *hdrhistogram.Histogram // latencies of finished seconds
	shards []LiveShard
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
	Sent          int64 `json:"sent,omitempty"`           // messages sent
	Recv          int64 `json:"recv,omitempty"`           // messages received (echoes, deliveries, pongs)
	Failed        int64 `json:"failed,omitempty"`         // messages that failed (a mismatch, a timeout)
	Lost          int64 `json:"lost,omitempty"`           // messages whose reply never came (at the phase's end)
	Late          int64 `json:"late,omitempty"`           // paced kinds: sends that left after late_after
	Unsent        int64 `json:"unsent,omitempty"`         // paced kinds: scheduled, never sent (at the phase's end)
	Connects      int64 `json:"connects,omitempty"`       // connections opened
	ConnectFailed int64 `json:"connect_failed,omitempty"` // connection attempts given up
	Exchanges     int64 `json:"exchanges,omitempty"`      // scripts: exchanges completed (a request and its reply)
	// Latency is the latency histogram so far (seconds).
	Latency NativeHist `json:"latency,omitzero"`
	// CPUSeconds and RSS are the process's (a shard's, on its progress
	// lines): CPU time since it started, resident set now.
	CPUSeconds float64 `json:"cpu_s,omitempty"`
	RSS        int64   `json:"rss,omitempty"`
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

// LiveCounts are a loop's running totals of a phase, as its part result
// counts them; publish adds what changed since the loop's last publish.
type LiveCounts struct {
	Sent, Recv, Failed, Lost, Late, Unsent, Connects, ConnectFailed, Exchanges int64
}

// publish adds now - *last to l and remembers now. A nil l does nothing.
func (l *Live) publish(last *LiveCounts, now LiveCounts) {
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
	add(&l.connects, now.Connects, last.Connects)
	add(&l.connectFailed, now.ConnectFailed, last.ConnectFailed)
	add(&l.exch, now.Exchanges, last.Exchanges)
	*last = now
}

// live is p's Live, nil without one.
func (p *Progress) live() *Live {
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

// SetShard sets shard i's latest snapshot (a shard group's progress).
func (l *Live) SetShard(i int, name string, s LiveSnapshot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.shards) <= i {
		l.shards = append(l.shards, LiveShard{})
	}
	l.shards[i] = LiveShard{Name: name, LiveSnapshot: s}
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
		Unsent: l.unsent.Load(), Connects: l.connects.Load(), ConnectFailed: l.connectFailed.Load(), Exchanges: l.exch.Load(),
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lat != nil {
		s.Latency = nativeOf(l.lat)
	}
	for _, sh := range l.shards {
		s.Sent += sh.Sent
		s.Recv += sh.Recv
		s.Failed += sh.Failed
		s.Lost += sh.Lost
		s.Late += sh.Late
		s.Unsent += sh.Unsent
		s.Connects += sh.Connects
		s.ConnectFailed += sh.ConnectFailed
		s.Exchanges += sh.Exchanges
		s.CPUSeconds += sh.CPUSeconds
		s.RSS += sh.RSS
		s.Latency.add(sh.Latency)
	}
	return s
}

// liveHist gathers one loop's latencies for Live between hand-overs: a
// kind that times its messages outside the rate timeline records into it
// beside its own histogram, hands it over at a tick once a second has
// passed (tick), and the rest when the phase ends (flush). Its zero value,
// or one started without a Live, records nothing.
type liveHist struct {
	h  *hdrhistogram.Histogram
	at int64 // loop clock of the last hand-over
}

// start readies w for live at loop clock now (nothing without live).
func (w *liveHist) start(live *Live, now int64) {
	if live != nil {
		w.h, w.at = NewHistogram(), now
	}
}

// add records latency v (ns).
func (w *liveHist) add(v int64) {
	if w.h != nil {
		record(w.h, v)
	}
}

// tick hands the latencies over to live when a second has passed since
// the last hand-over.
func (w *liveHist) tick(live *Live, now int64) {
	if w.h != nil && now-w.at >= int64(time.Second) {
		w.flush(live)
		w.at = now
	}
}

// flush hands the latencies over to live.
func (w *liveHist) flush(live *Live) {
	if w.h != nil {
		live.observe(w.h)
		w.h.Reset()
	}
}
