package client

import (
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Batched reads: how a paced sender's loop takes its echoes.
//
// A loop that wakes for every echo pays a context switch per message: at
// 1,000 connections × 100 msg/s the switch back in after epoll_pwait2 was
// the largest single item of the client's profile (15%), although the
// sends already shared wake-ups (pacedWake). With batched reads the loop
// of a paced phase sleeps through echo arrivals until its next send
// window (at most rawWaitMax away) and then reads everything that came,
// together with the sends: one wake-up per window instead of one per echo.
//
// The latency of an echo read late must still end when it arrived, not when
// it was read. The connections of such a phase therefore carry kernel
// receive timestamps (SO_TIMESTAMPNS): the kernel notes the time each
// segment reached the socket, and a recvmsg returns the time of the last
// segment it read. Several echoes of one connection read together get
// that last time: an earlier one's latency is then overstated by at most
// the window, never understated. (At 10–100 msg/s per connection and a
// window of ≤ 1 ms, two echoes of one connection rarely share a read.)
//
// The alternative the issue named, a busy-poll window after each send
// batch, burns the CPU the batching saves: docs/results.md, "Client cost", has both.

// rxStamps is a loop's scratch space for stamped reads.
type rxStamps struct {
	msg unix.Msghdr
	iov unix.Iovec
	oob [64]byte // room for a cmsghdr + a timespec, with margin
	// off converts the kernel's CLOCK_REALTIME stamps to the loop clock:
	// loop clock = stamp − off. Renewed at every wake-up of a batching
	// loop, so a wall-clock step or slew moves stamps for one window at
	// most.
	off int64
}

// calibrate renews the wall-to-loop clock offset.
func (s *rxStamps) calibrate(epoch time.Time) {
	t := time.Now()
	s.off = t.UnixNano() - int64(t.Sub(epoch))
}

// StampReads turns kernel receive timestamps on or off for c. It returns
// false if the kernel refused (c's flag is then left as it was).
func StampReads(c *Conn, on bool) bool {
	v := 0
	if on {
		v = 1
	}
	if unix.SetsockoptInt(int(c.fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, v) != nil {
		return false
	}
	c.Flags &^= fStamp
	if on {
		c.Flags |= fStamp
	}
	return true
}

// batchReads makes the loop's reads batched (see above) for the paced
// phase that starts on it: conns get receive timestamps, and sleeps up to
// rawWaitMax ignore arrivals. It returns false, changing nothing, where
// the kernel refuses timestamps: the phase then runs with prompt reads.
func (l *Loop) batchReads(conns []*Conn) bool {
	for i, c := range conns {
		if !StampReads(c, true) {
			for _, d := range conns[:i] {
				StampReads(d, false)
			}
			return false
		}
	}
	l.batching = true
	l.rxs.calibrate(l.epoch)
	return true
}

// promptReads ends batched reads: the loop wakes for each arrival again
// and its connections lose their timestamps (the flag on each says which
// have them; a closed one has no flags).
func (l *Loop) promptReads() {
	l.batching = false
	for _, c := range l.open {
		if c.Flags&fStamp != 0 {
			StampReads(c, false)
		}
	}
}

// read reads from c's socket. On a stamped connection it returns, with the
// data, the loop clock the last byte arrived at (at most the read's own
// time); otherwise the read's own time.
func (l *Loop) read(c *Conn, b []byte) (int, int64, syscall.Errno) {
	if c.Flags&fStamp == 0 {
		n, e := rawRead(c.fd, b)
		if e != 0 || n == 0 {
			return n, 0, e
		}
		return n, l.Now(), 0
	}
	s := &l.rxs
	s.iov.Base = unsafe.SliceData(b)
	s.iov.SetLen(len(b))
	s.msg.Iov = &s.iov
	s.msg.Iovlen = 1
	s.msg.Control = &s.oob[0]
	s.msg.SetControllen(len(s.oob))
	r, _, e := syscall.RawSyscall(unix.SYS_RECVMSG, uintptr(c.fd), uintptr(unsafe.Pointer(&s.msg)), 0)
	if e != 0 || r == 0 {
		return int(r), 0, e
	}
	at := l.Now()
	if k, ok := s.stamp(); ok && k-s.off < at {
		at = k - s.off
	}
	return int(r), at, 0
}

// stamp returns the receive timestamp (CLOCK_REALTIME ns) of the last
// recvmsg, if it carried one.
func (s *rxStamps) stamp() (int64, bool) {
	n := int(s.msg.Controllen)
	b := s.oob[:min(n, len(s.oob))]
	hdr := unix.CmsgSpace(0)
	for len(b) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < hdr || l > len(b) {
			return 0, false
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= unix.CmsgLen(int(unsafe.Sizeof(unix.Timespec{}))) {
			ts := (*unix.Timespec)(unsafe.Pointer(&b[unix.CmsgLen(0)]))
			return ts.Nano(), true
		}
		b = b[min(len(b), unix.CmsgSpace(l-unix.CmsgLen(0))):]
	}
	return 0, false
}

// sleep sleeps ns (> 0) without telling the scheduler (as a raw epoll wait
// of the same length would; see rawWaitMax).
func (l *Loop) sleep(ns int64) {
	l.ts = unix.NsecToTimespec(ns)
	// EINTR just ends the sleep early: the loop recomputes its wake-up.
	syscall.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, 0, uintptr(unsafe.Pointer(&l.ts)), 0, 0, 0)
}
