package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/result"
)

// Host writes the banner that says what was measured where: the plan and its
// variables, when it ran, then the machine (kernel, CPU model and cores,
// memory, Go version, open-file limits, the CPUs the server and the client
// were pinned to, and the recorded sysctls, sorted). Unknown facts print "?".
// The banner is plain aligned text; Markdown wraps it in a code block.
func Host(w io.Writer, run *result.Run) error {
	ew := &errWriter{w: w}
	line := func(key, val string) {
		if val == "" {
			val = "?"
		}
		ew.printf("%-8s %s\n", key, val)
	}
	p := run.Plan
	plan := p.Name
	if p.File != "" {
		if plan == "" {
			plan = p.File
		} else {
			plan += " (" + p.File + ")"
		}
	}
	line("plan", plan)
	if len(p.Vars) > 0 {
		line("vars", sortedPairs(p.Vars, " "))
	}
	if !run.Started.IsZero() {
		s := run.Started.UTC().Format("2006-01-02 15:04:05 UTC")
		if !run.Finished.IsZero() && run.Finished.After(run.Started) {
			s += ", took " + Duration(run.Finished.Sub(run.Started).Round(10*time.Millisecond))
		}
		line("started", s)
	}

	h := run.Host
	line("kernel", h.Kernel)
	cpu := h.CPUModel
	if h.Cores > 0 {
		if cpu == "" {
			cpu = "?"
		}
		cpu += fmt.Sprintf(" (%d cores)", h.Cores)
	}
	line("cpu", cpu)
	mem := ""
	if h.MemTotal > 0 {
		mem = GiB(h.MemTotal)
	}
	line("memory", mem)
	line("go", h.Go)
	if run.Wsplan != nil {
		line("wsplan", strings.TrimPrefix(run.Wsplan.String(), "wsplan "))
	}
	nofile := ""
	if h.NoFileSoft > 0 || h.NoFileHard > 0 {
		nofile = fmt.Sprintf("soft %d, hard %d", h.NoFileSoft, h.NoFileHard)
	}
	line("nofile", nofile)
	line("cpus", fmt.Sprintf("server %s, client %s", orUnknown(h.ServerCPUs), orUnknown(h.ClientCPUs)))
	if h.CPUIdle != "" {
		line("cpuidle", h.CPUIdle)
	}
	keys := make([]string, 0, len(h.Sysctl))
	for k := range h.Sysctl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		key := ""
		if i == 0 {
			key = "sysctl"
		}
		line(key, k+" = "+h.Sysctl[k])
	}
	ew.printf("\n")
	return ew.err
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// sortedPairs formats a map as "k=v" pairs sorted by key.
func sortedPairs(m map[string]string, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, sep)
}
