package procstat

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// ProcessCPUTime returns the CPU time (user + system, every thread, exited
// ones included) a process has used, read from its CPU-time clock
// (clock_gettime on the clock clock_getcpuclockid(3) would return): exact to
// the nanosecond, where /proc/<pid>/stat counts 10ms ticks. pid 0 is the
// calling process. A process that is gone yields an error wrapping
// ErrExited.
func ProcessCPUTime(pid int) (time.Duration, error) {
	// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) from the kernel's
	// posix-timers.h: the pid inverted and shifted, clock type 2.
	clock := int32((^pid)<<3 | 2)
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		if err == unix.EINVAL || err == unix.ESRCH {
			return 0, fmt.Errorf("procstat: pid %d: %w (%w)", pid, ErrExited, err)
		}
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}
