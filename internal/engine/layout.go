package engine

import (
	"fmt"
	"os"
	"runtime"

	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/sysctl"
)

// Layout is where servers and the client run.
type Layout struct {
	ServerCPUs []int
	ClientCPUs []int
}

func loops(p *plan.Plan, l Layout) int {
	if p.Client.Loops > 0 {
		return p.Client.Loops
	}
	return max(1, len(l.ClientCPUs))
}

// pinSelf pins every thread of this process to cpus and sets GOMAXPROCS to
// the event loops plus one for the engine; the returned func undoes both.
func pinSelf(cpus []int, loops int) (func(), error) {
	old := sysctl.OnlineCPUs() // this process's mask, from before pinning
	if err := sysctl.PinProcess(os.Getpid(), cpus); err != nil {
		return nil, fmt.Errorf("pinning the client to CPUs %v: %w", cpus, err)
	}
	prev := runtime.GOMAXPROCS(loops + 1)
	return func() {
		runtime.GOMAXPROCS(prev)
		// Best effort: the process ends soon after a run anyway.
		_ = sysctl.PinProcess(os.Getpid(), old)
	}, nil
}

// ComputeLayout splits the CPUs between servers and client: the plan's lists
// when given, else the first half of the online CPUs for servers and the rest
// for the client (on a 1-CPU host both share it).
func ComputeLayout(serverSpec, clientSpec string, online []int) (Layout, error) {
	var l Layout
	var err error
	if serverSpec != "" {
		if l.ServerCPUs, err = sysctl.ParseCPUList(serverSpec); err != nil {
			return l, fmt.Errorf("host.server_cpus: %w", err)
		}
	}
	if clientSpec != "" {
		if l.ClientCPUs, err = sysctl.ParseCPUList(clientSpec); err != nil {
			return l, fmt.Errorf("host.client_cpus: %w", err)
		}
	}
	half := max(1, len(online)/2)
	if len(l.ServerCPUs) == 0 {
		l.ServerCPUs = append([]int(nil), online[:half]...)
	}
	if len(l.ClientCPUs) == 0 {
		taken := map[int]bool{}
		for _, c := range l.ServerCPUs {
			taken[c] = true
		}
		for _, c := range online {
			if !taken[c] {
				l.ClientCPUs = append(l.ClientCPUs, c)
			}
		}
		if len(l.ClientCPUs) == 0 {
			l.ClientCPUs = append([]int(nil), online...)
		}
	}
	on := map[int]bool{}
	for _, c := range online {
		on[c] = true
	}
	for _, c := range append(append([]int(nil), l.ServerCPUs...), l.ClientCPUs...) {
		if !on[c] {
			return l, fmt.Errorf("CPU %d is not online here (online: %s)", c, sysctl.FormatCPUList(online))
		}
	}
	return l, nil
}

// usableClientCPU is how many cores the client can keep busy: its event
// loops (over every shard) bounded by the CPUs it is pinned to.
func (e *runner) usableClientCPU() int {
	if n := e.shards(); n > 0 {
		return min(n*max(1, e.plan.Client.Loops), len(e.o.Layout.ClientCPUs))
	}
	return min(loops(e.plan, e.o.Layout), len(e.o.Layout.ClientCPUs))
}
