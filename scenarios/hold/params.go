package hold

import (
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
)

// DefaultDrain is how long a hold with pings waits after its duration
// for the pongs still due.
const DefaultDrain = time.Second

// Params configure a hold phase ; they are its plan keys
// too (Phase holds them inline), declared once in their tags.
// With Ping > 0 every open connection sends a ping every Ping, the
// connections' pings spread evenly over the interval; a connection that
// falls behind sends one ping, not the ones it missed.
type Params struct {
	Duration units.Duration `yaml:"duration" json:"duration" required:"true" min:"1ns" doc:"how long to hold every connection open"`
	Ping     units.Duration `yaml:"ping" json:"ping" default:"0s" min:"0s" hint:"0 = no pings" doc:"ping interval per connection; 0 = idle, no pings"`
}

// Result is what a hold phase measured.
type Result struct {
	Conns  int64          `json:"conns"` // open at the start
	Alive  int64          `json:"alive"` // open at the end
	Pings  int64          `json:"pings"` // pings sent
	Pongs  int64          `json:"pongs"` // pongs received (during the hold and up to DefaultDrain after it)
	Used   time.Duration  `json:"used"`
	Errors client.Reasons `json:"errors"` // why connections dropped -> count
	// Stopped: client.StopCanceled, client.StopClosed; "" = it ran to its end.
	client.Ended
}

// Validate implements client.Params.
func (p *Params) Validate() error { return client.CheckParams(p) }

// Split implements client.Params: every part holds all of its connections, and
// spreads its own connections' pings over the interval.
func (p *Params) Split(weights []int) []client.Params {
	return client.Parts(p, len(weights), func(int, *Params) bool { return true })
}

// Merge implements client.Result.
func (r *Result) Merge(other client.Result) {
	o := other.(*Result)
	r.Conns += o.Conns
	r.Alive += o.Alive
	r.Pings += o.Pings
	r.Pongs += o.Pongs
	r.Used = max(r.Used, o.Used)
	r.Errors.Merge(o.Errors)
	r.Stopped = client.MergeStop(r.Stopped, o.Stopped)
}

// Start implements client.Params.
func (p *Params) Start(ph *client.PhaseEnv) (*client.PhasePlan, error) {
	total := ph.OpenTotal()
	pacer := client.Pacer{Duration: p.Duration.D(), Rate: 1}
	if p.Ping > 0 {
		pacer.Rate = 1 / p.Ping.D().Seconds()
	}
	if pr := ph.Progress; pr != nil {
		pr.Done.Store(0)
		if p.Ping > 0 {
			var want int64
			for j := range total {
				want += pacer.Total(float64(j) / float64(total))
			}
			pr.Total.Store(want)
		} else {
			pr.Total.Store(int64(p.Duration.D() / time.Second))
		}
	}
	plan := &client.PhasePlan{Starts: make([]func(*client.Loop), len(ph.Open))}
	first := 0
	for i := range ph.Open {
		job := &job{
			phase: ph.ID,
			ping:  p.Ping > 0,
			pacer: pacer,
			first: first,
			total: max(total, 1),
			start: ph.Start,
			clock: i == 0 && p.Ping == 0,
			pr:    ph.Progress,
		}
		if p.Ping > 0 {
			job.drain = int64(DefaultDrain)
		}
		first += ph.Open[i]
		plan.Starts[i] = func(l *client.Loop) { start(l, job) }
	}
	plan.Done = func(res client.Result, wall time.Duration) { res.(*Result).Used = wall }
	return plan, nil
}
