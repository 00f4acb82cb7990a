// Package procstat reads a process's CPU time and memory, and the host's
// facts, from the Linux /proc file system.
//
// Data flow: the run engine starts a Sampler on the server's pid (and one on
// the client's) at the start of each phase and stops it at the end; the
// Summary becomes the phase's cpu_* and mem_* metrics. HostInfo fills the
// host facts of the run document.
//
// Reading and parsing are apart, as in node_exporter: ParseStat, ParseStatus,
// ParseMeminfo and ParseCPUInfo are pure functions of a file's bytes, tested
// on the fixtures in testdata/proc; FS reads the files under a configurable
// root ("/proc" by default).
package procstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// UserHZ is the unit of the CPU times in /proc/<pid>/stat: clock ticks per
// second (USER_HZ, what `getconf CLK_TCK` prints). The kernel exports these
// times in USER_HZ whatever its internal HZ, and USER_HZ is 100 on every Linux
// architecture Go supports (amd64, arm64, …), so it is a constant here rather
// than a sysconf call (which would need cgo). A tick is 10ms: CPU times read
// from /proc are exact to 10ms, no finer.
const UserHZ = 100

// tick is the duration of one USER_HZ clock tick.
const tick = time.Second / UserHZ

// DefaultRoot is where the proc file system is mounted.
const DefaultRoot = "/proc"

// ErrExited is wrapped by errors about a process that no longer runs (its
// /proc entry is gone, or it is a zombie waiting to be reaped).
var ErrExited = errors.New("process exited")

// Stat is the part of /proc/<pid>/stat wsplan uses.
type Stat struct {
	PID        int
	Comm       string        // executable name, at most 15 bytes; may hold spaces and parentheses
	State      byte          // R running, S sleeping, D disk sleep, Z zombie, T stopped, …
	PPID       int           // parent pid
	UTime      time.Duration // user-mode CPU time, all threads
	STime      time.Duration // kernel-mode CPU time, all threads
	CUTime     time.Duration // user-mode CPU time of its waited-for (exited and reaped) children
	CSTime     time.Duration // kernel-mode CPU time of its waited-for children
	NumThreads int64
	StartTime  time.Duration // when the process started, after system boot
	VSize      int64         // virtual memory size in bytes
	RSSPages   int64         // resident set size in pages (see FS.PageSize)
}

// CPU returns the process's total CPU time (user + system).
func (s Stat) CPU() time.Duration { return s.UTime + s.STime }

// RSS returns the resident set size in bytes, given the page size.
func (s Stat) RSS(pageSize int) int64 { return s.RSSPages * int64(pageSize) }

// Exited reports whether the stat describes a process that is no longer
// running: a zombie (Z) or a dead (X) task.
func (s Stat) Exited() bool { return s.State == 'Z' || s.State == 'X' }

// ParseStat parses the contents of /proc/<pid>/stat.
//
// The second field, comm, is the executable name in parentheses and may itself
// contain spaces and ')' (a program can name itself "a) R 1 (b"); the fields
// after it are therefore found from the last ')' in the line, as the kernel's
// own tools do.
func ParseStat(b []byte) (Stat, error) {
	var s Stat
	line := string(bytes.TrimSpace(b))
	open := strings.IndexByte(line, '(')
	closing := strings.LastIndexByte(line, ')')
	if open < 0 || closing < open {
		return s, fmt.Errorf("procstat: stat: no (comm) in %q", truncate(line, 80))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return s, fmt.Errorf("procstat: stat: pid: %w", err)
	}
	s.PID = pid
	s.Comm = line[open+1 : closing]

	// rest[0] is field 3 (state); field n of proc(5) is rest[n-3].
	rest := strings.Fields(line[closing+1:])
	const (
		fState      = 3
		fPPID       = 4
		fUTime      = 14
		fSTime      = 15
		fCUTime     = 16
		fCSTime     = 17
		fNumThreads = 20
		fStartTime  = 22
		fVSize      = 23
		fRSS        = 24
	)
	if len(rest) < fRSS-2 {
		return s, fmt.Errorf("procstat: stat: %d fields after comm, want at least %d", len(rest), fRSS-2)
	}
	field := func(n int) string { return rest[n-3] }
	num := func(n int, name string) (int64, error) {
		v, err := strconv.ParseInt(field(n), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("procstat: stat: %s (field %d): %w", name, n, err)
		}
		return v, nil
	}
	if st := field(fState); len(st) != 1 {
		return s, fmt.Errorf("procstat: stat: state (field 3): want one letter, got %q", st)
	}
	s.State = field(fState)[0]
	var v int64
	if v, err = num(fPPID, "ppid"); err != nil {
		return s, err
	}
	s.PPID = int(v)
	if v, err = num(fUTime, "utime"); err != nil {
		return s, err
	}
	s.UTime = time.Duration(v) * tick
	if v, err = num(fSTime, "stime"); err != nil {
		return s, err
	}
	s.STime = time.Duration(v) * tick
	if v, err = num(fCUTime, "cutime"); err != nil {
		return s, err
	}
	s.CUTime = time.Duration(v) * tick
	if v, err = num(fCSTime, "cstime"); err != nil {
		return s, err
	}
	s.CSTime = time.Duration(v) * tick
	if s.NumThreads, err = num(fNumThreads, "num_threads"); err != nil {
		return s, err
	}
	if v, err = num(fStartTime, "starttime"); err != nil {
		return s, err
	}
	s.StartTime = time.Duration(v) * tick
	if s.VSize, err = num(fVSize, "vsize"); err != nil {
		return s, err
	}
	if s.RSSPages, err = num(fRSS, "rss"); err != nil {
		return s, err
	}
	return s, nil
}

// Status is the part of /proc/<pid>/status wsplan uses. Sizes are in bytes;
// a kernel thread has no Vm* lines, and they are then 0.
type Status struct {
	Name    string
	State   byte
	Threads int64
	VmPeak  int64 // peak virtual memory size
	VmSize  int64 // virtual memory size
	VmHWM   int64 // peak resident set size ("high water mark")
	VmRSS   int64 // resident set size
}

// ParseStatus parses the contents of /proc/<pid>/status.
func ParseStatus(b []byte) (Status, error) {
	var s Status
	err := eachKeyValue(b, func(key, val string) error {
		var err error
		switch key {
		case "Name":
			s.Name = val
		case "State":
			if val != "" {
				s.State = val[0]
			}
		case "Threads":
			s.Threads, err = strconv.ParseInt(val, 10, 64)
		case "VmPeak":
			s.VmPeak, err = parseKB(val)
		case "VmSize":
			s.VmSize, err = parseKB(val)
		case "VmHWM":
			s.VmHWM, err = parseKB(val)
		case "VmRSS":
			s.VmRSS, err = parseKB(val)
		default:
			return nil
		}
		if err != nil {
			return fmt.Errorf("procstat: status: %s: %w", key, err)
		}
		return nil
	})
	return s, err
}

// Meminfo is the part of /proc/meminfo wsplan uses, in bytes.
type Meminfo struct {
	MemTotal     int64
	MemFree      int64
	MemAvailable int64 // estimate of memory available without swapping
	SwapTotal    int64
	SwapFree     int64
}

// ParseMeminfo parses the contents of /proc/meminfo.
func ParseMeminfo(b []byte) (Meminfo, error) {
	var m Meminfo
	dst := map[string]*int64{
		"MemTotal":     &m.MemTotal,
		"MemFree":      &m.MemFree,
		"MemAvailable": &m.MemAvailable,
		"SwapTotal":    &m.SwapTotal,
		"SwapFree":     &m.SwapFree,
	}
	err := eachKeyValue(b, func(key, val string) error {
		p, ok := dst[key]
		if !ok {
			return nil
		}
		v, err := parseKB(val)
		if err != nil {
			return fmt.Errorf("procstat: meminfo: %s: %w", key, err)
		}
		*p = v
		return nil
	})
	if err == nil && m.MemTotal == 0 {
		err = errors.New("procstat: meminfo: no MemTotal")
	}
	return m, err
}

// CPUInfo is what wsplan reports about the processors.
type CPUInfo struct {
	Model string // "model name" of the first processor ("" if the architecture has none)
	CPUs  int    // logical CPUs (processor entries)
}

// ParseCPUInfo parses the contents of /proc/cpuinfo. On architectures
// without "model name" (arm64 lists "CPU implementer"/"CPU part"), the
// "Hardware" or "Model" line is used if there is one.
func ParseCPUInfo(b []byte) (CPUInfo, error) {
	var c CPUInfo
	var fallback string
	err := eachKeyValue(b, func(key, val string) error {
		switch key {
		case "processor":
			c.CPUs++
		case "model name":
			if c.Model == "" {
				c.Model = val
			}
		case "Hardware", "Model":
			if fallback == "" {
				fallback = val
			}
		}
		return nil
	})
	if c.Model == "" {
		c.Model = fallback
	}
	if err == nil && c.CPUs == 0 {
		err = errors.New("procstat: cpuinfo: no processor entries")
	}
	return c, err
}

// eachKeyValue calls fn for every "key: value" line, both sides trimmed.
// Lines without a colon (blank separators) are skipped.
func eachKeyValue(b []byte, fn func(key, val string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // cpuinfo "flags" lines are long
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if err := fn(strings.TrimSpace(key), strings.TrimSpace(val)); err != nil {
			return err
		}
	}
	return sc.Err()
}

// parseKB parses "1234 kB" to bytes; a value without a unit is returned as is.
func parseKB(s string) (int64, error) {
	num, unit, _ := strings.Cut(strings.TrimSpace(s), " ")
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, err
	}
	switch strings.TrimSpace(unit) {
	case "":
		return v, nil
	case "kB":
		return v * 1024, nil
	}
	return 0, fmt.Errorf("unknown unit %q", unit)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// FS reads files of a proc file system. The zero value reads /proc with the
// system's page size.
type FS struct {
	// Root is where proc is mounted; default "/proc" (node_exporter's
	// --path.procfs). Tests point it at testdata/proc.
	Root string
	// PageSize converts the RSS of /proc/<pid>/stat from pages to bytes;
	// default os.Getpagesize().
	PageSize int
}

func (fs FS) root() string {
	if fs.Root == "" {
		return DefaultRoot
	}
	return fs.Root
}

// live reports whether fs reads the running system's /proc, so that
// process CPU clocks describe the same processes.
func (fs FS) live() bool { return filepath.Clean(fs.root()) == DefaultRoot }

func (fs FS) pageSize() int {
	if fs.PageSize <= 0 {
		return os.Getpagesize()
	}
	return fs.PageSize
}

// pidDir names the process's directory; pid 0 means the calling process.
func (fs FS) pidDir(pid int) string {
	if pid == 0 {
		return filepath.Join(fs.root(), "self")
	}
	return filepath.Join(fs.root(), strconv.Itoa(pid))
}

// ReadStat reads and parses /proc/<pid>/stat; pid 0 is the calling process.
// A process that is gone yields an error wrapping ErrExited.
func (fs FS) ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile(filepath.Join(fs.pidDir(pid), "stat"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return Stat{}, fmt.Errorf("procstat: pid %d: %w (%w)", pid, ErrExited, err)
		}
		return Stat{}, fmt.Errorf("procstat: %w", err)
	}
	return ParseStat(b)
}

// ReadStatus reads and parses /proc/<pid>/status; pid 0 is the calling
// process.
func (fs FS) ReadStatus(pid int) (Status, error) {
	b, err := os.ReadFile(filepath.Join(fs.pidDir(pid), "status"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return Status{}, fmt.Errorf("procstat: pid %d: %w (%w)", pid, ErrExited, err)
		}
		return Status{}, fmt.Errorf("procstat: %w", err)
	}
	return ParseStatus(b)
}

// ReadMeminfo reads and parses /proc/meminfo.
func (fs FS) ReadMeminfo() (Meminfo, error) {
	b, err := os.ReadFile(filepath.Join(fs.root(), "meminfo"))
	if err != nil {
		return Meminfo{}, fmt.Errorf("procstat: %w", err)
	}
	return ParseMeminfo(b)
}

// ReadCPUInfo reads and parses /proc/cpuinfo.
func (fs FS) ReadCPUInfo() (CPUInfo, error) {
	b, err := os.ReadFile(filepath.Join(fs.root(), "cpuinfo"))
	if err != nil {
		return CPUInfo{}, fmt.Errorf("procstat: %w", err)
	}
	return ParseCPUInfo(b)
}

// Host holds the host facts found in proc, named as in result.Host.
type Host struct {
	Kernel   string // /proc/sys/kernel/osrelease, e.g. "6.8.0-49-generic"
	CPUModel string // "model name" of /proc/cpuinfo
	Cores    int    // logical CPUs listed in /proc/cpuinfo
	MemTotal int64  // bytes, MemTotal of /proc/meminfo
}

// HostInfo reads the kernel release, CPU model, logical CPU count and total
// memory. It returns what it could read together with an error joining every
// file that could not be read.
func HostInfo(fs FS) (Host, error) {
	var h Host
	var errs []error
	b, err := os.ReadFile(filepath.Join(fs.root(), "sys", "kernel", "osrelease"))
	if err != nil {
		errs = append(errs, fmt.Errorf("procstat: %w", err))
	} else {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if c, err := fs.ReadCPUInfo(); err != nil {
		errs = append(errs, err)
	} else {
		h.CPUModel, h.Cores = c.Model, c.CPUs
	}
	if m, err := fs.ReadMeminfo(); err != nil {
		errs = append(errs, err)
	} else {
		h.MemTotal = m.MemTotal
	}
	return h, errors.Join(errs...)
}

// RSS returns the resident set size of a process in bytes; pid 0 is the
// calling process.
func (fs FS) RSS(pid int) (int64, error) {
	st, err := fs.ReadStat(pid)
	if err != nil {
		return 0, err
	}
	return st.RSS(fs.pageSize()), nil
}

// Tree returns the process pid and every process descending from it, pid
// first, found through the parent pid of every process in proc (a process
// that exits during the scan is left out). pid 0 is the calling process. An
// error wraps ErrExited when pid itself is gone or a zombie.
func (fs FS) Tree(pid int) ([]Stat, error) {
	root, err := fs.ReadStat(pid)
	if err != nil {
		return nil, err
	}
	if root.Exited() {
		return nil, fmt.Errorf("procstat: pid %d: %w (state %c)", root.PID, ErrExited, root.State)
	}
	entries, err := os.ReadDir(fs.root())
	if err != nil {
		return nil, fmt.Errorf("procstat: %w", err)
	}
	children := map[int][]Stat{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n == root.PID {
			continue
		}
		st, err := fs.ReadStat(n)
		if err != nil {
			continue // gone since the directory was read, or unreadable: not ours to measure
		}
		children[st.PPID] = append(children[st.PPID], st)
	}
	out := []Stat{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i].PID]...)
	}
	return out, nil
}

// ParseSoftirq sums the softirq time of the given CPUs from the contents
// of /proc/stat (the seventh figure of each "cpuN" line, in USER_HZ
// ticks). A CPU missing from b is an error.
func ParseSoftirq(b []byte, cpus []int) (time.Duration, error) {
	want := make(map[string]bool, len(cpus))
	for _, c := range cpus {
		want["cpu"+strconv.Itoa(c)] = true
	}
	var sum int64
	found := 0
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 8 || !want[f[0]] {
			continue
		}
		v, err := strconv.ParseInt(f[7], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("procstat: /proc/stat %s: softirq %q: %w", f[0], f[7], err)
		}
		sum += v
		found++
		delete(want, f[0])
	}
	if found < len(cpus) {
		return 0, fmt.Errorf("procstat: /proc/stat: %d of the CPUs %v missing", len(cpus)-found, cpus)
	}
	return time.Duration(sum) * tick, nil
}

// ReadSoftirq reads the softirq time spent so far on the given CPUs, from
// /proc/stat: on loopback, mostly delivering packets written on those CPUs
// into the receiving sockets (and waking their readers).
func (fs FS) ReadSoftirq(cpus []int) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(fs.root(), "stat"))
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	return ParseSoftirq(b, cpus)
}
