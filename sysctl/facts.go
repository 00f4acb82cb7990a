package sysctl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultProcRoot is where procfs is mounted; ReadHostFacts uses it when
// procRoot is "".
const DefaultProcRoot = "/proc"

// ReadHostFacts reads what Preflight needs to know about the host: the
// RLIMIT_NOFILE hard limit and CPU affinity of this process (procRoot/self/limits,
// procRoot/self/status), MemAvailable (procRoot/meminfo), and the sysctls
// net.ipv4.ip_local_port_range, net.ipv4.ip_local_reserved_ports,
// fs.file-max, fs.nr_open and net.core.somaxconn through fs. Call it after RaiseNoFile/SetNoFile so the
// limits are the ones children will inherit.
//
// It reads everything it can: a fact that cannot be read stays zero (so
// Preflight skips its check) and the returned error, if any, joins every
// failure.
func ReadHostFacts(fs FS, procRoot string) (HostFacts, error) {
	if procRoot == "" {
		procRoot = DefaultProcRoot
	}
	var h HostFacts
	var errs []error
	fail := func(what string, err error) { errs = append(errs, fmt.Errorf("%s: %w", what, err)) }

	if b, err := os.ReadFile(filepath.Join(procRoot, "self", "limits")); err != nil {
		fail("RLIMIT_NOFILE", err)
	} else if _, hard, err := parseNoFileLimits(b); err != nil {
		fail("RLIMIT_NOFILE", err)
	} else {
		h.NoFileHard = hard
	}

	if b, err := os.ReadFile(filepath.Join(procRoot, "self", "status")); err != nil {
		fail("online CPUs", err)
	} else if cpus, err := parseCpusAllowed(b); err != nil {
		fail("online CPUs", err)
	} else {
		h.OnlineCPUs = cpus
	}

	if b, err := os.ReadFile(filepath.Join(procRoot, "meminfo")); err != nil {
		fail("MemAvailable", err)
	} else if n, err := parseMemAvailable(b); err != nil {
		fail("MemAvailable", err)
	} else {
		h.MemAvailable = n
	}

	if v, err := fs.Get(PortRangeKey); err != nil {
		errs = append(errs, err)
	} else if lo, hi, err := ParsePortRange(v); err != nil {
		fail(PortRangeKey, err)
	} else {
		h.PortRangeLow, h.PortRangeHigh = lo, hi
	}
	if v, err := fs.Get(ReservedPortsKey); err != nil {
		errs = append(errs, err)
	} else if r, err := ParsePortList(v); err != nil {
		fail(ReservedPortsKey, err)
	} else {
		h.ReservedPorts, h.ReservedKnown = r, true
	}

	for _, s := range []struct {
		key string
		dst *int64
	}{{"fs.file-max", &h.FileMax}, {"fs.nr_open", &h.NrOpen}} {
		if n, err := getInt(fs, s.key); err != nil {
			errs = append(errs, err)
		} else {
			*s.dst = n
		}
	}
	if n, err := getInt(fs, "net.core.somaxconn"); err != nil {
		errs = append(errs, err)
	} else if n > math.MaxInt32 {
		fail("net.core.somaxconn", fmt.Errorf("%d out of range", n))
	} else {
		h.Somaxconn = int(n)
	}
	return h, errors.Join(errs...)
}

func getInt(fs FS, key string) (int64, error) {
	v, err := fs.Get(key)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("sysctl %s: not an integer: %q", key, v)
	}
	return n, nil
}

// parseNoFileLimits reads the "Max open files" line of /proc/PID/limits.
// "unlimited" reads as math.MaxUint64 (RLIM_INFINITY).
func parseNoFileLimits(b []byte) (soft, hard uint64, err error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Max open files")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			break
		}
		if soft, err = parseLimit(f[0]); err != nil {
			return 0, 0, err
		}
		if hard, err = parseLimit(f[1]); err != nil {
			return 0, 0, err
		}
		return soft, hard, nil
	}
	return 0, 0, errors.New(`no "Max open files" line`)
}

func parseLimit(s string) (uint64, error) {
	if s == "unlimited" {
		return math.MaxUint64, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad limit %q", s)
	}
	return n, nil
}

// parseCpusAllowed reads the "Cpus_allowed_list:" line of /proc/PID/status:
// the CPUs the process's affinity allows.
func parseCpusAllowed(b []byte) ([]int, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Cpus_allowed_list:"); ok {
			return ParseCPUList(rest)
		}
	}
	return nil, errors.New(`no "Cpus_allowed_list:" line`)
}

// parseMemAvailable reads MemAvailable from /proc/meminfo, in bytes.
func parseMemAvailable(b []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("bad MemAvailable line %q", sc.Text())
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad MemAvailable line %q", sc.Text())
		}
		return n * 1024, nil
	}
	return 0, errors.New("no MemAvailable line (kernel older than 3.14?)")
}

// ParsePortRange parses net.ipv4.ip_local_port_range, "32768	60999": the
// first and last port the kernel picks ephemeral ports from.
func ParsePortRange(v string) (lo, hi int, err error) {
	f := strings.Fields(v)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("want two ports, got %q", v)
	}
	if lo, err = strconv.Atoi(f[0]); err != nil {
		return 0, 0, fmt.Errorf("bad port %q", f[0])
	}
	if hi, err = strconv.Atoi(f[1]); err != nil {
		return 0, 0, fmt.Errorf("bad port %q", f[1])
	}
	if lo < 1 || hi > MaxPort || hi < lo {
		return 0, 0, fmt.Errorf("bad range %q", v)
	}
	return lo, hi, nil
}

// Assume returns the facts as they will be once the sysctls in want are
// applied (what preflight judges under --tune). Values that do not parse
// leave the read fact as it was; Apply reports them.
func (h HostFacts) Assume(want map[string]string) HostFacts {
	if v, ok := want[PortRangeKey]; ok {
		if lo, hi, err := ParsePortRange(v); err == nil {
			h.PortRangeLow, h.PortRangeHigh = lo, hi
		}
	}
	if v, ok := want[ReservedPortsKey]; ok {
		if r, err := ParsePortList(v); err == nil {
			h.ReservedPorts, h.ReservedKnown = r, true
		}
	}
	for key, dst := range map[string]*int64{"fs.file-max": &h.FileMax, "fs.nr_open": &h.NrOpen} {
		if n, err := strconv.ParseInt(strings.TrimSpace(want[key]), 10, 64); err == nil {
			*dst = n
		}
	}
	if n, err := strconv.Atoi(strings.TrimSpace(want["net.core.somaxconn"])); err == nil {
		h.Somaxconn = n
	}
	return h
}
