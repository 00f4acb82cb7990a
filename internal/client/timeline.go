package client

import (
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Timeline is a loop's per-second timeline of a phase: entry i of secs
// covers [i s, i+1 s) of loop time from start. A finished second keeps
// only its summary (PacedSecond: 48 bytes); its latencies go to a
// current-second histogram that rolls into the phase's histogram when the
// second changes. Nothing is allocated per message: secs grows once per
// second, and the second last asked for is cached (two compares, no
// division).
type Timeline struct {
	Seconds  []PacedSecond
	start    int64 // loop clock at t = 0
	idx      int   // the second last asked for
	from, to int64 // its loop clock span
	cur      *hdrhistogram.Histogram
	curSec   int   // the second cur's latencies belong to
	Live     *Live // takes each second's latencies when it rolls (nil: none)
}

// PacedSecond is one second of a phase's timeline (rate's, echo's). A
// finished second keeps only this summary point: its latency percentiles
// are computed when the second ends. Merged over several loops or shards, P50, P99 and
// Max are the highest of theirs (Max is exact; P50 and P99 are upper
// bounds, exact for one part); the whole phase's Latency stays exact.
type PacedSecond struct {
	Sent int64         `json:"sent"`
	Recv int64         `json:"recv"`
	Late int64         `json:"late"`
	P50  time.Duration `json:"p50,omitempty"`
	P99  time.Duration `json:"p99,omitempty"`
	Max  time.Duration `json:"max,omitempty"`
}

// Merge adds o into s.
func (s *PacedSecond) Merge(o PacedSecond) {
	s.Sent += o.Sent
	s.Recv += o.Recv
	s.Late += o.Late
	s.P50 = max(s.P50, o.P50)
	s.P99 = max(s.P99, o.P99)
	s.Max = max(s.Max, o.Max)
}

// NewTimeline starts a timeline at loop clock start.
func NewTimeline(start int64) Timeline {
	return Timeline{start: start, from: math.MaxInt64, cur: NewHistogram()}
}

// Second returns the index and entry of loop time now, growing the
// timeline to it. Times before start count in second 0.
func (t *Timeline) Second(now int64) (int, *PacedSecond) {
	if now < t.from || now >= t.to {
		s := max(0, int((now-t.start)/int64(time.Second)))
		for len(t.Seconds) <= s {
			t.Seconds = append(t.Seconds, PacedSecond{})
		}
		t.idx = s
		t.from = t.start + int64(s)*int64(time.Second)
		if s == 0 {
			t.from = math.MinInt64
		}
		t.to = t.start + int64(s+1)*int64(time.Second)
	}
	return t.idx, &t.Seconds[t.idx]
}

// Echo counts an intact echo completed at now with latency v: in the
// second of now, its latency in that second's summary and (when the
// second rolls) in all.
func (t *Timeline) Echo(now, v int64, all *hdrhistogram.Histogram) {
	i, s := t.Second(now)
	s.Recv++
	if i != t.curSec {
		t.Roll(all)
		t.curSec = i
	}
	Record(t.cur, v)
}

// Roll ends second curSec's latencies: its entry keeps their summary
// (p50, p99, max), all takes them.
func (t *Timeline) Roll(all *hdrhistogram.Histogram) {
	if t.cur.TotalCount() == 0 {
		return
	}
	s := &t.Seconds[t.curSec]
	s.P50 = time.Duration(t.cur.ValueAtQuantile(50))
	s.P99 = time.Duration(t.cur.ValueAtQuantile(99))
	s.Max = time.Duration(t.cur.Max())
	all.Merge(t.cur)
	t.Live.observe(t.cur)
	t.cur.Reset()
}

// MergeSeconds adds o into secs, second by second.
func MergeSeconds(secs []PacedSecond, o []PacedSecond) []PacedSecond {
	for len(secs) < len(o) {
		secs = append(secs, PacedSecond{})
	}
	for i, s := range o {
		secs[i].Merge(s)
	}
	return secs
}
