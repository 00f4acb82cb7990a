//go:build !linux

package procstat

import (
	"errors"
	"time"
)

// ProcessCPUTime is only available on Linux; elsewhere it fails and the
// Sampler uses /proc/<pid>/stat alone.
func ProcessCPUTime(pid int) (time.Duration, error) {
	return 0, errors.New("procstat: process CPU clocks need Linux")
}
