package plan

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ParseCPUList parses a Linux CPU list as taskset -c and cpuset take it:
// comma-separated CPU numbers and inclusive ranges, e.g. "0", "0-3",
// "0,2-3". It returns the CPUs in ascending order. A CPU listed twice, a
// reversed range or a number above MaxCPU is an error. Whether the CPUs
// exist is not checked here (preflight does that).
func ParseCPUList(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty CPU list: want e.g. 0, 0-3 or 0,2-3")
	}
	seen := map[int]bool{}
	var out []int
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, "-")
		first, err := cpuNumber(lo, s)
		if err != nil {
			return nil, err
		}
		last := first
		if isRange {
			if last, err = cpuNumber(hi, s); err != nil {
				return nil, err
			}
			if last < first {
				return nil, fmt.Errorf("bad CPU list %q: range %s goes down", s, item)
			}
		}
		for c := first; c <= last; c++ {
			if seen[c] {
				return nil, fmt.Errorf("bad CPU list %q: CPU %d is listed twice", s, c)
			}
			seen[c] = true
			out = append(out, c)
		}
	}
	sort.Ints(out)
	return out, nil
}

func cpuNumber(t, list string) (int, error) {
	t = strings.TrimSpace(t)
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 || t[0] == '+' {
		return 0, fmt.Errorf("bad CPU list %q: want CPU numbers and ranges such as 0,2-3, got %q", list, t)
	}
	if n > MaxCPU {
		return 0, fmt.Errorf("bad CPU list %q: CPU %d is above %d", list, n, MaxCPU)
	}
	return n, nil
}
