package report

import (
	"fmt"
	"maps"
	"slices"

	"github.com/wsplan/wsplan/internal/result"
)

// HostDiff lists what differs between the hosts two runs were measured on,
// one "what: old → new" item each, for figures compared across them:
// kernel, CPU, cores, the CPU split, how idle CPUs waited, open-file limits
// and the recorded sysctls. A fact one run did not record is not compared.
func HostDiff(old, cur result.Host) []string {
	var out []string
	add := func(what, a, b string) {
		if a != "" && b != "" && a != b {
			out = append(out, fmt.Sprintf("%s: %s → %s", what, a, b))
		}
	}
	add("kernel", old.Kernel, cur.Kernel)
	add("cpu", old.CPUModel, cur.CPUModel)
	if old.Cores > 0 && cur.Cores > 0 {
		add("cores", fmt.Sprint(old.Cores), fmt.Sprint(cur.Cores))
	}
	add("server cpus", old.ServerCPUs, cur.ServerCPUs)
	add("client cpus", old.ClientCPUs, cur.ClientCPUs)
	add("cpuidle", old.CPUIdle, cur.CPUIdle)
	if old.NoFileHard > 0 && cur.NoFileHard > 0 {
		add("nofile hard", fmt.Sprint(old.NoFileHard), fmt.Sprint(cur.NoFileHard))
	}
	for _, k := range slices.Sorted(maps.Keys(cur.Sysctl)) {
		add(k, old.Sysctl[k], cur.Sysctl[k])
	}
	return out
}
