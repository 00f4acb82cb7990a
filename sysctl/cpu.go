package sysctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxCPU is the number of CPUs a unix.CPUSet can name.
const maxCPU = len(unix.CPUSet{}) * 64

// OnlineCPUs returns the CPUs this process may run on, ascending: the
// sched_getaffinity mask of its main thread (which honours taskset and
// cgroup cpusets, and does not depend on which thread asks), or, if that
// fails, /sys/devices/system/cpu/online. It returns nil if neither can be
// read.
func OnlineCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(os.Getpid(), &set); err == nil {
		if cpus := cpusOf(&set); len(cpus) > 0 {
			return cpus
		}
	}
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil
	}
	cpus, err := ParseCPUList(string(b))
	if err != nil {
		return nil
	}
	return cpus
}

func cpusOf(set *unix.CPUSet) []int {
	var cpus []int
	for c := range maxCPU {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// PinProcess sets the CPU affinity of every thread of process pid to cpus.
// Threads created later inherit the affinity of the thread that creates
// them, so once every current thread is pinned the whole process is. The
// thread list is re-read until a pass finds no thread it has not pinned, to
// catch threads started while it runs; threads that exit meanwhile are
// skipped.
func PinProcess(pid int, cpus []int) error {
	if pid <= 0 {
		return fmt.Errorf("pin process %d: not a process id", pid)
	}
	if len(cpus) == 0 {
		return fmt.Errorf("pin process %d: no CPUs given", pid)
	}
	var set unix.CPUSet
	for _, c := range cpus {
		if c < 0 || c >= maxCPU {
			return fmt.Errorf("pin process %d: CPU %d out of range 0-%d", pid, c, maxCPU-1)
		}
		set.Set(c)
	}
	list := FormatCPUList(cpus)
	done := map[int]bool{}
	taskDir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	for pass := 0; pass < 100; pass++ {
		tids, err := listTasks(taskDir)
		if err != nil {
			return fmt.Errorf("pin process %d to CPUs %s: %w", pid, list, err)
		}
		fresh := 0
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			done[tid] = true
			err := unix.SchedSetaffinity(tid, &set)
			switch {
			case errors.Is(err, unix.ESRCH): // the thread exited meanwhile
				continue
			case errors.Is(err, unix.EINVAL):
				return fmt.Errorf("pin process %d to CPUs %s: thread %d: %w (no CPU in the list is online, or allowed by this cgroup's cpuset)", pid, list, tid, err)
			case err != nil:
				return fmt.Errorf("pin process %d to CPUs %s: thread %d: %w", pid, list, tid, err)
			}
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
	return fmt.Errorf("pin process %d to CPUs %s: threads keep appearing", pid, list)
}

func listTasks(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// ParseCPUList parses a Linux CPU list as taskset -c and cpuset take it:
// comma-separated CPU numbers and inclusive ranges, e.g. "0", "0-3",
// "0,2-3". It returns the CPUs in ascending order. A CPU listed twice, a
// reversed range or a CPU a CPU set cannot name (maxCPU and above) is an
// error. Kernel files (/sys/devices/system/cpu/online, Cpus_allowed_list)
// use the same format. Whether the CPUs
// exist is not checked here (preflight does that).
func ParseCPUList(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty CPU list: want e.g. 0, 0-3 or 0,2-3")
	}
	rs, err := parseList(s, "CPU list", cpuNumber)
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	var out []int
	for _, r := range rs {
		for c := r.Lo; c <= r.Hi; c++ {
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
	if n >= maxCPU {
		return 0, fmt.Errorf("bad CPU list %q: CPU %d is above %d", list, n, maxCPU-1)
	}
	return n, nil
}

// FormatCPUList writes CPUs the kernel's way: "0-3,6". The input is sorted
// and deduplicated first.
func FormatCPUList(cpus []int) string { return RangesOf(cpus...).String() }
