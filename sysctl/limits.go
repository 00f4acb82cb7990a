package sysctl

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// NoFile returns this process's RLIMIT_NOFILE soft and hard limits, or 0, 0
// if they cannot be read.
func NoFile() (soft, hard uint64) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0
	}
	return r.Cur, r.Max
}

// RaiseNoFile raises this process's soft RLIMIT_NOFILE to its hard limit and
// returns the limits in force afterwards. Processes started afterwards
// inherit them.
//
// It calls setrlimit even when the soft limit already equals the hard one:
// the Go runtime raises its own soft limit at start-up but puts the original
// back in every child it execs, unless the program has set RLIMIT_NOFILE
// itself. Setting it here is what makes the servers and client shards
// inherit the raised limit.
func RaiseNoFile() (soft, hard uint64, err error) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
	}
	r.Cur = r.Max
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, fmt.Errorf("setrlimit(RLIMIT_NOFILE, %d): %w", r.Max, err)
	}
	soft, hard = NoFile()
	return soft, hard, nil
}

// SetNoFile sets this process's RLIMIT_NOFILE for host.nofile: the soft
// limit becomes n, and the hard limit too when n is above it (which needs
// CAP_SYS_RESOURCE and n ≤ fs.nr_open). A lower n lowers only the soft
// limit. Children inherit the result; it returns the limits in force
// afterwards.
func SetNoFile(n uint64) (soft, hard uint64, err error) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
	}
	old := r.Max
	r.Cur = n
	if n > r.Max {
		r.Max = n
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		if n > old {
			return 0, 0, fmt.Errorf("raising RLIMIT_NOFILE to %d above the hard limit %d: %w (needs root/CAP_SYS_RESOURCE and fs.nr_open ≥ %d; or raise it before starting: ulimit -Hn / limits.conf)", n, old, err, n)
		}
		return 0, 0, fmt.Errorf("setrlimit(RLIMIT_NOFILE, %d): %w", n, err)
	}
	soft, hard = NoFile()
	return soft, hard, nil
}
