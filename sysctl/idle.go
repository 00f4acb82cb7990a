package sysctl

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Idle polling (host.idle_poll). Waking a thread that sleeps on an idle CPU
// costs the waker an interrupt to that CPU. On bare metal an idle CPU waits
// in mwait and is woken by a write, without one; in a virtual machine whose
// idle CPUs halt, every such wake-up is an interrupt and a VM exit, paid by
// whichever side wrote the message (on loopback, the load generator wakes
// the server for every message it sends). KVM guests have the haltpoll
// cpuidle driver, which can poll for a while before it halts: a wake-up that
// comes within the window needs no interrupt. Its window is the module
// parameter below, 0 (never poll) on many cloud images.

// SysRoot is where the kernel exposes devices and module parameters.
const SysRoot = "/sys"

// SysLabel is what messages print before a key under /sys (FS.Label).
const SysLabel = "/sys/"

// SysFS is the FS for keys under /sys (paths such as HaltPollKey), rooted
// at root, default SysRoot (tests pass a temporary directory).
func SysFS(root string) FS {
	if root == "" {
		root = SysRoot
	}
	return FS{Root: root, Label: SysLabel}
}

// The /sys keys idle polling reads and writes.
const (
	CPUIdleDriverKey = "devices/system/cpu/cpuidle/current_driver"
	HaltPollKey      = "module/haltpoll/parameters/guest_halt_poll_ns"
)

// ErrNoHaltPoll: host.idle_poll cannot be applied, since the host's cpuidle
// driver is not haltpoll (bare metal, another hypervisor, or a guest booted
// without it).
var ErrNoHaltPoll = errors.New("the cpuidle driver is not haltpoll, so idle polling cannot be set here")

// Idle is how idle CPUs wait on this host, as ReadIdle found it.
type Idle struct {
	Driver string // the cpuidle driver, e.g. "haltpoll"; "" when it could not be read
	Poll   int64  // haltpoll's window in ns; -1 when not haltpoll or unreadable
	err    error  // why Driver could not be read
}

// ReadIdle reads the cpuidle driver and, for haltpoll, its poll window,
// through sys (SysFS).
func ReadIdle(sys FS) Idle {
	drv, err := sys.Get(CPUIdleDriverKey)
	i := Idle{Driver: drv, Poll: -1, err: err}
	if err == nil && drv == "haltpoll" {
		if v, err := sys.Get(HaltPollKey); err == nil {
			if ns, err := strconv.ParseInt(v, 10, 64); err == nil {
				i.Poll = ns
			}
		}
	}
	return i
}

// Keys returns the /sys keys, and their values, that make an idle CPU poll
// for up to d before it halts. Where the driver is not haltpoll it returns
// an error wrapping ErrNoHaltPoll that names the driver.
func (i Idle) Keys(d time.Duration) (map[string]string, error) {
	switch {
	case i.err != nil:
		return nil, fmt.Errorf("%w (reading it: %v)", ErrNoHaltPoll, i.err)
	case i.Driver != "haltpoll":
		return nil, fmt.Errorf("%w (this host's is %q)", ErrNoHaltPoll, i.Driver)
	}
	return map[string]string{HaltPollKey: strconv.FormatInt(d.Nanoseconds(), 10)}, nil
}

// HaltsAtOnce reports whether idle CPUs are haltpoll's and poll not at all
// before they halt: every wake-up of an idle CPU is then a VM exit.
func (i Idle) HaltsAtOnce() bool { return i.Driver == "haltpoll" && i.Poll == 0 }

// String describes how idle CPUs wait, for the run's header: the driver,
// and with haltpoll how long it polls before it halts, e.g. "haltpoll,
// polls up to 200µs before halting" or "haltpoll, halts at once (no
// polling)"; "" when the driver could not be read.
func (i Idle) String() string {
	switch {
	case i.Driver != "haltpoll" || i.Poll < 0:
		return i.Driver
	case i.Poll == 0:
		return i.Driver + ", halts at once (no polling)"
	}
	return fmt.Sprintf("%s, polls up to %v before halting", i.Driver, time.Duration(i.Poll))
}
