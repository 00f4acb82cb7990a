package sysctl

import (
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseCPUList(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []int
		err  string
	}{
		{in: "0", want: []int{0}},
		{in: "0-3", want: []int{0, 1, 2, 3}},
		{in: "0,2-3", want: []int{0, 2, 3}},
		{in: " 4, 1-2 ", want: []int{1, 2, 4}},
		{in: "5-5", want: []int{5}},
		{in: "", err: `empty CPU list: want e.g. 0, 0-3 or 0,2-3`},
		{in: "3-1", err: `bad CPU list "3-1": range 3-1 goes down`},
		{in: "0,0", err: `bad CPU list "0,0": CPU 0 is listed twice`},
		{in: "0-2,1", err: `bad CPU list "0-2,1": CPU 1 is listed twice`},
		{in: "a", err: `bad CPU list "a": want CPU numbers and ranges such as 0,2-3, got "a"`},
		{in: "1,", err: `bad CPU list "1,": want CPU numbers and ranges such as 0,2-3, got ""`},
		{in: "-1", err: `bad CPU list "-1": want CPU numbers and ranges such as 0,2-3, got ""`},
		{in: "+1", err: `bad CPU list "+1": want CPU numbers and ranges such as 0,2-3, got "+1"`},
		{in: "1-2-3", err: `bad CPU list "1-2-3": want CPU numbers and ranges such as 0,2-3, got "2-3"`},
		{in: "0-99999999", err: `bad CPU list "0-99999999": CPU 99999999 is above 1023`},
		{in: "1024", err: `bad CPU list "1024": CPU 1024 is above 1023`}, // a CPU set cannot pin it
		{in: "0-1\n", want: []int{0, 1}},                                 // as read from /sys
		{in: "0-3,6,8-9", want: []int{0, 1, 2, 3, 6, 8, 9}},
	} {
		got, err := ParseCPUList(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParseCPUList(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestFormatCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{[]int{0, 1, 2, 3, 6, 8, 9}, "0-3,6,8-9"},
		{[]int{5}, "5"},
		{[]int{3, 1, 2, 2}, "1-3"},
		{nil, ""},
	} {
		if got := FormatCPUList(tc.in); got != tc.want {
			t.Errorf("FormatCPUList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestOnlineCPUs(t *testing.T) {
	got := OnlineCPUs()
	if len(got) == 0 {
		t.Fatal("OnlineCPUs is empty")
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	want, err := parseCpusAllowed(b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("OnlineCPUs = %v, /proc/self/status says %v", got, want)
	}
}

// threadAffinities returns the CPUs of every thread of this process.
func threadAffinities(t *testing.T) map[int][]int {
	t.Helper()
	tids, err := listTasks("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]int{}
	for _, tid := range tids {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			continue // exited meanwhile
		}
		out[tid] = cpusOf(&set)
	}
	return out
}

// Pin this test process to one CPU, check every thread (including one
// started afterwards), then pin it back.
func TestPinProcess(t *testing.T) {
	orig := OnlineCPUs()
	if len(orig) == 0 {
		t.Fatal("no CPUs")
	}
	before := threadAffinities(t)
	t.Cleanup(func() {
		if err := PinProcess(os.Getpid(), orig); err != nil {
			t.Errorf("pinning back: %v", err)
		}
	})
	one := orig[len(orig)-1]
	if err := PinProcess(os.Getpid(), []int{one}); err != nil {
		t.Fatal(err)
	}
	for tid, cpus := range threadAffinities(t) {
		if !slices.Equal(cpus, []int{one}) {
			t.Errorf("thread %d runs on %v after pinning to %d", tid, cpus, one)
		}
	}
	if len(before) < 2 {
		t.Errorf("only %d thread(s) seen: the test does not exercise every-thread pinning", len(before))
	}

	// Whatever thread runs new work, possibly one the runtime starts now, is
	// pinned too.
	var wg sync.WaitGroup
	var fresh []int
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // exiting locked, the goroutine takes its thread with it
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err == nil {
			fresh = cpusOf(&set)
		}
	}()
	wg.Wait()
	if !slices.Equal(fresh, []int{one}) {
		t.Errorf("a new thread runs on %v, want %d", fresh, one)
	}

	if err := PinProcess(os.Getpid(), orig); err != nil {
		t.Fatal(err)
	}
	for tid, cpus := range threadAffinities(t) {
		if !slices.Equal(cpus, orig) {
			t.Errorf("thread %d runs on %v after pinning back to %v", tid, cpus, orig)
		}
	}
}

func TestPinProcessErrors(t *testing.T) {
	pid := os.Getpid()
	p := strconv.Itoa(pid)
	for _, tc := range []struct {
		pid  int
		cpus []int
		want string // exact message, or its start when end is set
		end  string // the message ends so (after a thread id)
	}{
		{pid: 0, cpus: []int{0}, want: "pin process 0: not a process id"},
		{pid: pid, cpus: nil, want: "pin process " + p + ": no CPUs given"},
		{pid: pid, cpus: []int{1024}, want: "pin process " + p + ": CPU 1024 out of range 0-1023"},
		{pid: pid, cpus: []int{1023}, want: "pin process " + p + " to CPUs 1023: thread ",
			end: ": invalid argument (no CPU in the list is online, or allowed by this cgroup's cpuset)"},
		{pid: 1 << 30, cpus: []int{0}, want: "pin process 1073741824 to CPUs 0: open /proc/1073741824/task: no such file or directory"},
	} {
		before := threadAffinities(t)
		err := PinProcess(tc.pid, tc.cpus)
		if err == nil {
			t.Errorf("PinProcess(%d, %v) succeeded", tc.pid, tc.cpus)
			continue
		}
		got := err.Error()
		if tc.end == "" && got != tc.want || tc.end != "" && !(strings.HasPrefix(got, tc.want) && strings.HasSuffix(got, tc.end)) {
			t.Errorf("PinProcess(%d, %v):\n got %s\nwant %s…%s", tc.pid, tc.cpus, got, tc.want, tc.end)
		}
		if after := threadAffinities(t); !reflect.DeepEqual(pick(after, before), before) {
			t.Errorf("a failed PinProcess changed affinities: %v → %v", before, after)
		}
	}
}

// pick returns m restricted to the keys of like (threads may come and go).
func pick(m, like map[int][]int) map[int][]int {
	out := map[int][]int{}
	for k := range like {
		if v, ok := m[k]; ok {
			out[k] = v
		} else {
			out[k] = like[k]
		}
	}
	return out
}
