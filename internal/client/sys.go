package client

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawRead reads from a non-blocking fd without telling the scheduler: the
// call never blocks, and skipping entersyscall/exitsyscall saves about 2 µs
// per message on this kind of host (CLIENT-NOTES.md). len(b) must be > 0.
func rawRead(fd int32, b []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// rawWrite is rawRead's counterpart for writes. len(b) must be > 0.
func rawWrite(fd int32, b []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// WouldBlock reports whether a non-blocking call found nothing to do.
func WouldBlock(e syscall.Errno) bool {
	return e == syscall.EAGAIN || e == syscall.EINTR
}

// EpollCtl registers or changes fd in epfd with the connection's generation
// in the event data, so that an event fetched before fd was closed and
// reused is recognised as stale.
func EpollCtl(epfd, op int, fd int32, gen uint32, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: fd, Pad: int32(gen)}
	return unix.EpollCtl(epfd, op, int(fd), &ev)
}

// ErrnoText is the short reason text of a system error, for Errors maps.
func ErrnoText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// rawWaitMax is the longest wait in which a batching loop sleeps through
// arrivals (loop.sleep) before its next send window.
const rawWaitMax = int64(time.Millisecond)

// Every epoll wait is a raw system call (rawWaits: where the process has
// a P to spare beside its loops, as wsplan gives it: GOMAXPROCS =
// Loops+1): the scheduler is not told, the loop keeps its P. A wait announced to it costs more than the wait: the runtime's
// sysmon sees a goroutine that has not been rescheduled for 10 ms (a loop
// never is) in a system call, takes its P at once, and each such retake
// sets sysmon back to polling every 20 µs — 38% of the client's CPU
// samples in plans/brokers.yaml's gws row (perf), whose loops sleep 25 ms
// between publishes; raw waits cut that row's client CPU per million
// deliveries from 18 to 11 s. A stop-the-world does not wait for a raw
// wait: the runtime's preemption signal ends it (EINTR) and the loop stops
// at its next safe point (TestRawWaitStopTheWorld). rawWaitCap bounds each
// wait for a process run without asynchronous preemption
// (GODEBUG=asyncpreemptoff=1), where the world waits for the wait's end.
const rawWaitCap = int64(100 * time.Millisecond)

// loopsAlive counts the event loops of every client in this process.
var loopsAlive atomic.Int32

// rawWaits reports whether a loop starting now may make its long waits
// raw: only while the loops leave the rest of the process a P (a test
// running an in-process server beside a client of GOMAXPROCS loops would
// otherwise get the CPU only when sysmon preempts a loop, every 10 ms).
// Where it may not, a wait longer than rawWaitMax is announced, as every
// wait of a goroutine should be.
func rawWaits() bool { return runtime.GOMAXPROCS(0) > int(loopsAlive.Load()) }

// noPwait2 is set once epoll_pwait2 turned out to be missing (Linux < 5.11).
var noPwait2 atomic.Bool

// epollWait waits for events on epfd for at most timeout ns (< 0: no
// limit); raw (rawWaits), as a raw system call of at most rawWaitCap (the
// caller then finds nothing and waits again), else raw only up to
// rawWaitMax. It uses epoll_pwait2, whose timeout has nanosecond precision, so
// that paced sends leave on time; where the kernel lacks it, epoll_wait
// with the timeout rounded up to whole milliseconds.
// ts is scratch space for the timeout, owned by the caller (so that it
// does not escape to the heap at every call).
func epollWait(epfd int, events []unix.EpollEvent, timeout int64, raw bool, ts *unix.Timespec) (int, error) {
	if !noPwait2.Load() {
		call := syscall.Syscall6
		switch {
		case raw && (timeout < 0 || timeout > rawWaitCap):
			timeout = rawWaitCap // see rawWaitCap
			call = syscall.RawSyscall6
		case raw || timeout >= 0 && timeout <= rawWaitMax:
			call = syscall.RawSyscall6
		}
		var tsp unsafe.Pointer
		if timeout >= 0 {
			*ts = unix.NsecToTimespec(timeout)
			tsp = unsafe.Pointer(ts)
		}
		r, _, e := call(unix.SYS_EPOLL_PWAIT2, uintptr(epfd), uintptr(unsafe.Pointer(unsafe.SliceData(events))), uintptr(len(events)), uintptr(tsp), 0, 0)
		if e == 0 {
			return int(r), nil
		}
		if e != syscall.ENOSYS {
			return 0, e
		}
		noPwait2.Store(true)
	}
	ms := -1
	if timeout >= 0 {
		ms = int((timeout + int64(time.Millisecond) - 1) / int64(time.Millisecond))
	}
	return unix.EpollWait(epfd, events, ms)
}

// preciseTimers sets the calling thread's timer slack to 1 ns and returns
// the function that restores it. Linux lets a normal thread's timed sleeps
// (epoll_pwait2, clock_nanosleep) end up to its timer slack late, 50 µs by
// default, to coalesce wake-ups; a paced loop has its own, bounded slack
// (pacedWake), so the kernel's would only add unmeasured lateness to every
// paced send. The caller must be locked to its thread.
func preciseTimers() (restore func()) {
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || old <= 1 {
		return func() {}
	}
	if unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) != nil {
		return func() {}
	}
	return func() { _ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0) }
}
