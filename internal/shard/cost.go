package shard

import (
	"runtime"
	"sync"
	"time"

	"github.com/wsplan/wsplan/internal/procstat"
)

// Cost is a shard's own process CPU and memory over the phases it ran. A
// shard measures itself (its /proc, its CPU clock) from the start of a
// request to its reply and returns the figures with the reply: the
// orchestrator cannot read a remote or Kubernetes shard's host, and local
// shards are measured the same way so that every shard's figures compare.
type Cost struct {
	// Shard names the shard: a remote shard's address, or "shard N" for
	// a local one (set by the orchestrator).
	Shard string `json:"shard,omitempty"`
	// CPUSeconds is the CPU time (user + system) the shard's process spent.
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUAvg is CPUSeconds over Wall, in percent of one core.
	CPUAvg float64 `json:"cpu_avg"`
	// WaitSeconds is the time its threads were runnable but waited for a
	// CPU (procstat.RunQueueWait): a shard on a busy CPU wanted more than
	// it got. WaitAvg is WaitSeconds over Wall, percent of one core.
	WaitSeconds float64 `json:"wait_seconds"`
	WaitAvg     float64 `json:"wait_avg"`
	// MemMax is the shard process's highest resident set size, bytes.
	MemMax int64 `json:"mem_max"`
	// Wall is the wall time measured, ns.
	Wall time.Duration `json:"wall"`
	// Usable is how many cores the shard's client can keep busy: its event
	// loops bounded by the CPUs the shard may run on (its affinity).
	Usable int `json:"usable"`
}

// usableCores is how many cores a client of loops event loops can keep
// busy in this process: runtime.NumCPU honours the CPU affinity.
func usableCores(loops int) int {
	return max(1, min(max(1, loops), runtime.NumCPU()))
}

// meter measures this process over one request (Cost).
type meter struct {
	s      *procstat.Sampler
	usable int
	wait0  time.Duration
	waitOK bool
}

func startMeter(loops int) *meter {
	m := &meter{s: procstat.NewSampler(procstat.FS{}, 0, procstat.DefaultInterval), usable: usableCores(loops)}
	var err error
	m.wait0, err = procstat.FS{}.RunQueueWait(0)
	m.waitOK = err == nil // without schedstat, no wait is counted
	m.s.Start()
	return m
}

func (m *meter) stop() *Cost {
	sum := m.s.Stop()
	if sum.Err != nil && sum.Samples == 0 {
		return nil // /proc unreadable: no figures rather than zeros
	}
	c := &Cost{CPUSeconds: sum.CPUSeconds, CPUAvg: sum.CPUAvg, MemMax: sum.MemMax, Wall: sum.Wall, Usable: m.usable}
	if w, err := (procstat.FS{}).RunQueueWait(0); err == nil && m.waitOK && w > m.wait0 {
		c.WaitSeconds = (w - m.wait0).Seconds()
		if sum.Wall > 0 {
			c.WaitAvg = c.WaitSeconds / sum.Wall.Seconds() * 100
		}
	}
	return c
}

// Demand is the share of its usable cores the shard used or waited for
// (CPUAvg + WaitAvg over Usable cores): near 1, the shard set the pace.
func (c Cost) Demand() float64 {
	return (c.CPUAvg + c.WaitAvg) / (100 * float64(max(1, c.Usable)))
}

// add sums o into c: CPU time and wall time add up, memory is the peak.
func (c *Cost) add(o Cost) {
	c.CPUSeconds += o.CPUSeconds
	c.WaitSeconds += o.WaitSeconds
	c.Wall += o.Wall
	c.MemMax = max(c.MemMax, o.MemMax)
	c.Usable = max(c.Usable, o.Usable)
	if c.Wall > 0 {
		c.CPUAvg = c.CPUSeconds / c.Wall.Seconds() * 100
		c.WaitAvg = c.WaitSeconds / c.Wall.Seconds() * 100
	}
}

// ledger is every shard's cost of every phase run so far, in order, so
// that a sampling window spanning several phases (a search's step: a
// settle and a measure) sums exactly the phases inside it.
type ledger struct {
	mu    sync.Mutex
	costs []Cost
}

func (l *ledger) append(c Cost) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.costs = append(l.costs, c)
}

// CostMark is a point in the group's cost ledger: pass it to CostsSince.
func (g *Group) CostMark() int {
	g.ledger.mu.Lock()
	defer g.ledger.mu.Unlock()
	return len(g.ledger.costs)
}

// CostsSince returns each shard's own cost (Cost) summed over the phases
// run since mark, in shard order; a shard that ran nothing is absent.
func (g *Group) CostsSince(mark int) []Cost {
	g.ledger.mu.Lock()
	defer g.ledger.mu.Unlock()
	var out []Cost
	at := map[string]int{}
	for _, c := range g.ledger.costs[min(mark, len(g.ledger.costs)):] {
		i, ok := at[c.Shard]
		if !ok {
			at[c.Shard] = len(out)
			out = append(out, Cost{Shard: c.Shard})
			i = len(out) - 1
		}
		out[i].add(c)
	}
	return out
}
