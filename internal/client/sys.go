package client

import (
	"syscall"
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

// wouldBlock reports whether a non-blocking call found nothing to do.
func wouldBlock(e syscall.Errno) bool {
	return e == syscall.EAGAIN || e == syscall.EINTR
}

// epollCtl registers or changes fd in epfd with the connection's generation
// in the event data, so that an event fetched before fd was closed and
// reused is recognised as stale.
func epollCtl(epfd, op int, fd int32, gen uint32, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: fd, Pad: int32(gen)}
	return unix.EpollCtl(epfd, op, int(fd), &ev)
}

// errnoText is the short reason text of a system error, for Errors maps.
func errnoText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}
