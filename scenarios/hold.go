package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/units"
)

// Hold keeps every connection open and idle for Duration, counting the ones
// that drop, and reports what an idle connection costs in memory.
type Hold struct {
	Duration units.Duration `yaml:"duration"` // how long to hold; required, > 0
}

func init() {
	Register(Kind{
		Name: "hold",
		Doc:  "keep every connection open and idle; count drops; memory per connection",
		New:  func() Phase { return &Hold{} },
		Metrics: []metrics.Def{
			{Name: "duration", Kind: metrics.Duration, Doc: "time held"},
			{Name: "conns", Kind: metrics.Count, Doc: "connections open at the start"},
			{Name: "alive", Kind: metrics.Count, Doc: "connections open at the end"},
			{Name: "dropped", Kind: metrics.Count, Doc: "connections lost while holding"},
			{Name: "server_rss", Kind: metrics.Bytes, Doc: "server RSS at the start of the hold (the end of connect)"},
			{Name: "mem_per_conn", Kind: metrics.Bytes, Doc: "(server RSS at the start of the hold − server RSS before the first phase) / conns"},
			{Name: "client_rss", Kind: metrics.Bytes, Doc: "client RSS (every client process) at the start of the hold"},
			{Name: "client_mem_per_conn", Kind: metrics.Bytes, Doc: "(client RSS at the start of the hold − client RSS before the first phase) / conns"},
		},
	})
}

// Defaults implements Phase.
func (p *Hold) Defaults(Context) {}

// Validate implements Phase.
func (p *Hold) Validate(c Context) []FieldError {
	var errs []FieldError
	if p.Duration <= 0 {
		errs = append(errs, FieldError{"duration", fmt.Sprintf("must be > 0, got %s", p.Duration)})
	}
	if c.Conns == 0 {
		errs = append(errs, FieldError{"", "needs open connections: put a connect phase before it"})
	}
	return errs
}

// holdPoll is how often a hold checks how many connections are open.
const holdPoll = 100 * time.Millisecond

// Run implements Phase.
func (p *Hold) Run(ctx context.Context, env *Env) (Outcome, error) {
	conns := int64(env.Driver.Conns())
	v := metrics.Values{"conns": conns}
	if env.Mem != nil {
		now := env.Mem()
		v["server_rss"], v["client_rss"] = now.Server, now.Client
		v["mem_per_conn"], v["client_mem_per_conn"] = perConn(now.Server-env.Base.Server, conns), perConn(now.Client-env.Base.Client, conns)
	}
	d := p.Duration.D()
	if env.Progress != nil {
		env.Progress.Total.Store(int64(d / time.Second))
	}
	start := time.Now()
	t := time.NewTicker(holdPoll)
	defer t.Stop()
	var out Outcome
loop:
	for time.Since(start) < d {
		select {
		case <-ctx.Done():
			out.Failed, out.Error = true, "stopped after "+time.Since(start).Truncate(time.Millisecond).String()
			break loop
		case <-t.C:
			if env.Progress != nil {
				env.Progress.Done.Store(int64(time.Since(start) / time.Second))
			}
		}
	}
	alive := int64(env.Driver.Conns())
	v["duration"], v["alive"], v["dropped"] = time.Since(start), alive, conns-alive
	out.Metrics = v
	if alive < conns && !out.Failed {
		out.Failed, out.Error = true, fmt.Sprintf("%d of %d connections dropped while idle", conns-alive, conns)
	}
	return out, nil
}

func perConn(bytes, conns int64) int64 {
	if conns <= 0 || bytes < 0 {
		return 0
	}
	return bytes / conns
}
