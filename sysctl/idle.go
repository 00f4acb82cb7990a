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

// SysRoot is where the kernel exposes devices and module parameters; the FS
// for /sys uses it as its Root, with keys that are paths under it.
const SysRoot = "/sys"

// SysLabel is what messages print before a key under /sys (FS.Label).
const SysLabel = "/sys/"

// The /sys keys idle polling reads and writes.
const (
	CPUIdleDriverKey = "devices/system/cpu/cpuidle/current_driver"
	HaltPollKey      = "module/haltpoll/parameters/guest_halt_poll_ns"
)

// ErrNoHaltPoll: host.idle_poll cannot be applied, since the host's cpuidle
// driver is not haltpoll (bare metal, another hypervisor, or a guest booted
// without it).
var ErrNoHaltPoll = errors.New("the cpuidle driver is not haltpoll, so idle polling cannot be set here")

// IdlePoll returns the /sys keys, and their values, that make an idle CPU
// poll for up to d before it halts. It reads the cpuidle driver through sys
// and wraps ErrNoHaltPoll, naming the driver, where that is not haltpoll.
func IdlePoll(sys FS, d time.Duration) (map[string]string, error) {
	drv, err := sys.Get(CPUIdleDriverKey)
	if err != nil {
		return nil, fmt.Errorf("%w (reading it: %v)", ErrNoHaltPoll, err)
	}
	if drv != "haltpoll" {
		return nil, fmt.Errorf("%w (this host's is %q)", ErrNoHaltPoll, drv)
	}
	return map[string]string{HaltPollKey: strconv.FormatInt(d.Nanoseconds(), 10)}, nil
}

// HaltsAtOnce reports whether idle CPUs here are haltpoll's and poll not
// at all before they halt: every wake-up of an idle CPU is then a VM exit.
func HaltsAtOnce(sys FS) bool {
	drv, err := sys.Get(CPUIdleDriverKey)
	if err != nil || drv != "haltpoll" {
		return false
	}
	v, err := sys.Get(HaltPollKey)
	return err == nil && v == "0"
}

// CPUIdle describes how idle CPUs wait, for the run's header: the cpuidle
// driver, and with haltpoll how long it polls before it halts, e.g.
// "haltpoll, polls up to 200µs before halting" or "haltpoll, halts at once
// (no polling)". It is "" when the driver cannot be read.
func CPUIdle(sys FS) string {
	drv, err := sys.Get(CPUIdleDriverKey)
	if err != nil || drv == "" {
		return ""
	}
	if drv != "haltpoll" {
		return drv
	}
	v, err := sys.Get(HaltPollKey)
	ns, perr := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil || perr != nil:
		return drv
	case ns == 0:
		return drv + ", halts at once (no polling)"
	}
	return fmt.Sprintf("%s, polls up to %v before halting", drv, time.Duration(ns))
}
