package client

// Issue 13 item 3 asks whether io_uring would cost the client less CPU per
// message than its one raw write(2) (and one read(2) after epoll_wait) per
// message and connection. These benchmarks answer it on the host at hand,
// without a module: the rings are set up with raw system calls.
//
// Fixture: K TCP loopback pairs made without goroutines (connect, accept
// in this thread); "cli" ends play the client's sockets (non-blocking,
// TCP_NODELAY, as the client's), "peer" ends the server's. Everything runs
// in the benchmark's locked OS thread: on loopback the receive side of a
// write (softirq, socket wake-up) is charged to the writer anyway, and the
// peer work is the same code for every variant (one read(2) of each
// written peer, or one write(2) to each peer that must send), so the
// differences between variants are the differences of the client's side.
//
// Metrics, per 1 KiB message: cpu-ns/msg is the process CPU time
// (CLOCK_PROCESS_CPUTIME_ID: getrusage(RUSAGE_SELF) in ns, io-wq workers
// included) of the whole loop, peer work included; wr-, rd- and
// peer-cpu-ns/msg are the benchmark thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID: getrusage(RUSAGE_THREAD) in ns) of one phase.
//
//	go test ./internal/client -run XXX -bench 'Uring|WriteBatch' -benchtime 2s -count 5
//
// Found (Linux 6.18, Firecracker, 2 vCPUs, shared host, December 2026;
// medians of 13 interleaved runs): io_uring sends of a batch with one
// io_uring_enter cost 0.88x (B=16), 0.83x (B=64), 0.71x (B=256) the write
// phase of one write(2) per message, i.e. 190, 235, 455 ns less per
// message (range 80-1200 ns: the gap widens when the host is busy); with
// the peers' work, under 0.2 µs of about 2.5 µs. perf shows the saving is
// do_syscall_64, fdget_pos, vfs_write and the user-side stub, partly
// spent again in io_issue_sqe and sock_from_file. Registered files add
// nothing measurable. Receiving with one io_uring recv armed per
// connection costs the same as epoll_wait plus one read(2) per ready
// connection (0.98-1.00x). Against the client's 4-8 µs per message at
// 1,000 connections x 100 msg/s that is 2-6%, all of it on the send side.

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	uringK    = 1000 // connection pairs
	uringMsg  = 1024 // bytes per message
	uringRing = 1024 // SQ entries: room for one recv armed per connection
	uringTry  = 1000 // bound on the polls for a batch's completions
)

var uringBatches = []int{16, 64, 256}

// io_uring ABI (include/uapi/linux/io_uring.h).
const (
	uringOpWrite = 23
	uringOpSend  = 26
	uringOpRecv  = 27

	sqeFixedFile     = 1 << 0
	enterGetEvents   = 1 << 0
	featSingleMmap   = 1 << 0
	setupSubmitAll   = 1 << 7
	setupSingleIssue = 1 << 12
	setupDeferTask   = 1 << 13
	registerFiles    = 2
	offSQRing        = 0
	offCQRing        = 0x8000000
	offSQEs          = 0x10000000
)

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  struct {
		head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
		userAddr                                                        uint64
	}
	cqOff struct {
		head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
		userAddr                                                        uint64
	}
}

type uringSQE struct {
	opcode, flags uint8
	ioprio        uint16
	fd            int32
	off, addr     uint64
	len, opFlags  uint32
	userData      uint64
	bufIndex      uint16
	personality   uint16
	spliceFDIn    int32
	addr3, pad2   uint64
}

type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// uring is a minimal io_uring: one submitter, no SQ polling.
type uring struct {
	fd              int
	maps            [][]byte
	sqTail, cqHead  *uint32
	sqHead, cqTail  *uint32
	sqMask, cqMask  uint32
	sqEntries       uint32
	sqes            []uringSQE
	cqes            []uringCQE
	tail, submitted uint32
}

// openUring sets up a ring for the calling (locked) thread, with fds
// registered as fixed files (index i = fds[i]); it skips b where the kernel
// has no io_uring or forbids it.
func openUring(b *testing.B, fds []int32) *uring {
	b.Helper()
	var p uringParams
	var fd uintptr
	var e syscall.Errno
	// Completions run in the submitter's io_uring_enter (Linux 6.1+),
	// else wherever the kernel runs task work.
	for _, f := range []uint32{setupSingleIssue | setupDeferTask, setupSubmitAll, 0} {
		p = uringParams{flags: f}
		fd, _, e = syscall.RawSyscall(unix.SYS_IO_URING_SETUP, uringRing, uintptr(unsafe.Pointer(&p)), 0)
		if e != syscall.EINVAL {
			break
		}
	}
	if e != 0 {
		b.Skipf("io_uring unavailable: io_uring_setup: %v", e)
	}
	u := &uring{fd: int(fd)}
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(uringCQE{})))
	if p.features&featSingleMmap != 0 {
		sqSize = max(sqSize, cqSize)
	}
	mmap := func(off int64, size int) []byte {
		m, err := unix.Mmap(u.fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			u.close()
			b.Fatalf("io_uring mmap: %v", err)
		}
		u.maps = append(u.maps, m)
		return m
	}
	sq := mmap(offSQRing, sqSize)
	cq := sq
	if p.features&featSingleMmap == 0 {
		cq = mmap(offCQRing, cqSize)
	}
	sqeMem := mmap(offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(uringSQE{})))
	u32 := func(m []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }
	u.sqHead, u.sqTail = u32(sq, p.sqOff.head), u32(sq, p.sqOff.tail)
	u.sqMask, u.sqEntries = *u32(sq, p.sqOff.ringMask), p.sqEntries
	u.cqHead, u.cqTail, u.cqMask = u32(cq, p.cqOff.head), u32(cq, p.cqOff.tail), *u32(cq, p.cqOff.ringMask)
	u.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&sqeMem[0])), p.sqEntries)
	u.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&cq[p.cqOff.cqes])), p.cqEntries)
	array := unsafe.Slice(u32(sq, p.sqOff.array), p.sqEntries)
	for i := range array {
		array[i] = uint32(i) // SQE i sits in slot i: fill in ring order
	}
	u.tail = atomic.LoadUint32(u.sqTail)
	u.submitted = u.tail
	_, _, e = syscall.RawSyscall6(unix.SYS_IO_URING_REGISTER, fd, registerFiles, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), 0, 0)
	if e != 0 {
		u.close()
		b.Fatalf("io_uring register files: %v", e)
	}
	return u
}

func (u *uring) close() {
	for _, m := range u.maps {
		_ = unix.Munmap(m) // nothing to do about a failure in a benchmark's clean-up
	}
	_ = unix.Close(u.fd)
}

// next returns a zeroed SQE to fill, or nil when the SQ is full.
func (u *uring) next() *uringSQE {
	if u.tail-atomic.LoadUint32(u.sqHead) >= u.sqEntries {
		return nil
	}
	s := &u.sqes[u.tail&u.sqMask]
	*s = uringSQE{}
	u.tail++
	return s
}

// enter submits the queued SQEs and runs pending completions (deferred
// task work) without waiting: one io_uring_enter.
func (u *uring) enter() syscall.Errno {
	atomic.StoreUint32(u.sqTail, u.tail)
	r, _, e := syscall.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), uintptr(u.tail-u.submitted), 0, enterGetEvents, 0, 0)
	if e != 0 {
		return e
	}
	u.submitted += uint32(r)
	return 0
}

// reap moves up to len(dst) completions into dst.
func (u *uring) reap(dst []uringCQE) int {
	head := *u.cqHead
	tail := atomic.LoadUint32(u.cqTail)
	n := 0
	for ; head != tail && n < len(dst); head++ {
		dst[n] = u.cqes[head&u.cqMask]
		n++
	}
	atomic.StoreUint32(u.cqHead, head)
	return n
}

// tcpPairs is the fixture: cli[i] and peer[i] are the ends of one TCP
// loopback connection, both non-blocking.
type tcpPairs struct{ cli, peer []int32 }

func newTCPPairs(b testing.TB, k int) *tcpPairs {
	b.Helper()
	p := &tcpPairs{}
	fail := func(what string, err error) {
		p.close()
		b.Fatalf("fixture: %s: %v", what, err)
	}
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fail("socket", err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		fail("bind", err)
	}
	if err := unix.Listen(ln, 256); err != nil {
		fail("listen", err)
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		fail("getsockname", err)
	}
	byPort := make(map[int]int32, 256)
	for len(p.cli) < k {
		n := min(128, k-len(p.cli)) // within the listen backlog
		clear(byPort)
		for range n {
			c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				fail("socket", err)
			}
			if err := unix.Connect(c, sa); err != nil {
				_ = unix.Close(c) // failing anyway
				fail("connect", err)
			}
			local, err := unix.Getsockname(c)
			if err != nil {
				_ = unix.Close(c) // failing anyway
				fail("getsockname", err)
			}
			byPort[local.(*unix.SockaddrInet4).Port] = int32(c)
		}
		for range n {
			a, from, err := unix.Accept4(ln, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			if err != nil {
				fail("accept", err)
			}
			c, ok := byPort[from.(*unix.SockaddrInet4).Port]
			if !ok {
				_ = unix.Close(a) // failing anyway
				fail("accept", fmt.Errorf("unknown peer %v", from))
			}
			p.cli, p.peer = append(p.cli, c), append(p.peer, int32(a))
			for _, opt := range []error{
				unix.SetNonblock(int(c), true),
				unix.SetsockoptInt(int(c), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1),
				unix.SetsockoptInt(int(a), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1),
				// Closing resets the connection: thousands of pairs per run
				// leave no TIME_WAIT behind.
				unix.SetsockoptLinger(int(c), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1}),
			} {
				if opt != nil {
					fail("setsockopt", opt)
				}
			}
		}
	}
	return p
}

func (p *tcpPairs) close() {
	for _, fds := range [][]int32{p.cli, p.peer} {
		for _, fd := range fds {
			_ = unix.Close(int(fd)) // nothing to do about a failure in a benchmark's clean-up
		}
	}
}

// cpuClock reads CPU-time clocks with raw system calls; ts is scratch
// space, so that reading allocates nothing.
type cpuClock struct{ ts unix.Timespec }

func (c *cpuClock) now(id int) int64 {
	_, _, _ = syscall.RawSyscall(unix.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&c.ts)), 0) // cannot fail for these clocks
	return c.ts.Nano()
}

// xfer holds one benchmark's buffers and state; its methods are the
// variants' per-batch work, on connections first, first+1, ... (mod K).
type xfer struct {
	b     *testing.B
	p     *tcpPairs
	u     *uring
	batch int
	msg   []byte     // the message written
	big   []byte     // peer drain buffer
	rbuf  []byte     // the client's read buffer (epoll variant)
	rbufs []byte     // one recv buffer per connection (io_uring variant)
	cqes  []uringCQE // reaped completions
	evs   []unix.EpollEvent
	epfd  int
	late  int // peer drains that found less than one message
}

func newXfer(b *testing.B, p *tcpPairs, batch int) *xfer {
	x := &xfer{b: b, p: p, batch: batch, epfd: -1,
		msg: make([]byte, uringMsg), big: make([]byte, 64<<10), rbuf: make([]byte, 64<<10),
		cqes: make([]uringCQE, uringRing), evs: make([]unix.EpollEvent, 512)}
	for i := range x.msg {
		x.msg[i] = byte(i)
	}
	return x
}

// rawWrites is the client today: one write(2) per message.
func (x *xfer) rawWrites(first int) {
	for j := range x.batch {
		i := (first + j) % uringK
		if n, e := rawWrite(x.p.cli[i], x.msg); n != uringMsg {
			x.b.Fatalf("write: %d bytes, %v", n, e)
		}
	}
}

// uringWrites queues the batch's writes as SQEs of op and submits them
// with one io_uring_enter, then reaps their completions.
func (x *xfer) uringWrites(first int, op uint8, fixed bool) {
	for j := range x.batch {
		i := (first + j) % uringK
		s := x.u.next()
		s.opcode, s.fd = op, x.p.cli[i]
		if fixed {
			s.flags, s.fd = sqeFixedFile, int32(i)
		}
		s.addr, s.len, s.userData = uint64(uintptr(unsafe.Pointer(&x.msg[0]))), uringMsg, uint64(i)
	}
	x.await(x.batch, false)
}

// await enters the ring until n completions came: writes must have
// written a whole message; recvs must have read one, and their connection
// is re-armed (the new SQE goes with the next io_uring_enter, as a loop's
// would).
func (x *xfer) await(n int, recv bool) {
	for try := 0; n > 0; try++ {
		if try == uringTry {
			x.b.Fatalf("io_uring: %d completions missing", n)
		}
		if e := x.u.enter(); e != 0 && e != syscall.EINTR {
			x.b.Fatalf("io_uring_enter: %v", e)
		}
		got := x.u.reap(x.cqes)
		for k := range got {
			c := &x.cqes[k]
			if c.res != uringMsg {
				x.b.Fatalf("io_uring op on connection %d: res %d", c.userData, c.res)
			}
			if recv {
				x.armRecv(int(c.userData))
			}
		}
		n -= got
	}
}

// drain reads what the batch wrote from the peer ends: one read(2) each.
func (x *xfer) drain(first int) {
	for j := range x.batch {
		i := (first + j) % uringK
		n, e := rawRead(x.p.peer[i], x.big)
		if e != 0 && !WouldBlock(e) {
			x.b.Fatalf("peer read: %v", e)
		}
		if n < uringMsg {
			x.late++ // caught up at the next drain of this peer, or by settle
		}
	}
}

// settle reads every peer end dry, outside the timed loop.
func (x *xfer) settle() {
	for _, fd := range x.p.peer {
		for {
			n, e := rawRead(fd, x.big)
			if e != 0 || n == 0 {
				break
			}
		}
	}
}

// peerWrites makes the batch's peers send one message each: connections
// base+first, base+first+1, ... (mod span).
func (x *xfer) peerWrites(base, span, first int) {
	for j := range x.batch {
		i := base + (first+j)%span
		if n, e := rawWrite(x.p.peer[i], x.msg); n != uringMsg {
			x.b.Fatalf("peer write: %d bytes, %v", n, e)
		}
	}
}

// armRecv queues a recv of connection i into its own buffer.
func (x *xfer) armRecv(i int) {
	s := x.u.next()
	if s == nil {
		x.b.Fatal("io_uring: SQ full")
	}
	s.opcode, s.flags, s.fd = uringOpRecv, sqeFixedFile, int32(i)
	s.addr, s.len, s.userData = uint64(uintptr(unsafe.Pointer(&x.rbufs[i*2*uringMsg]))), 2*uringMsg, uint64(i)
}

// epollReads is the client today: epoll_wait, then one read(2) per ready
// connection, until n messages came.
func (x *xfer) epollReads(n int) {
	for try := 0; n > 0; try++ {
		if try == uringTry {
			x.b.Fatalf("epoll: %d messages missing", n)
		}
		r, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(x.epfd), uintptr(unsafe.Pointer(&x.evs[0])), uintptr(len(x.evs)), 0, 0, 0)
		if e != 0 && e != syscall.EINTR {
			x.b.Fatalf("epoll_wait: %v", e)
		}
		for k := range int(r) {
			got, e := rawRead(x.p.cli[x.evs[k].Fd], x.rbuf)
			if got != uringMsg {
				x.b.Fatalf("read: %d bytes, %v", got, e)
			}
			n--
		}
	}
}

type writeVariant struct {
	name  string
	op    uint8 // 0: raw write(2)
	fixed bool
}

var writeVariants = []writeVariant{
	{"raw", 0, false},
	{"uring-write", uringOpWrite, false},
	{"uring-send", uringOpSend, false},
	{"uring-send-fixed", uringOpSend, true},
}

// BenchmarkWriteBatch: batches of B messages, one per connection, written
// by each variant in turn (one variant per sub-benchmark), then drained.
func BenchmarkWriteBatch(b *testing.B) {
	p := newTCPPairs(b, uringK)
	defer p.close()
	for _, batch := range uringBatches {
		for _, v := range writeVariants {
			b.Run(fmt.Sprintf("B=%d/%s", batch, v.name), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				x := newXfer(b, p, batch)
				defer x.settle()
				if v.op != 0 {
					x.u = openUring(b, p.cli)
					defer x.u.close()
				}
				var clk cpuClock
				var wr int64
				b.ResetTimer()
				p0 := clk.now(unix.CLOCK_PROCESS_CPUTIME_ID)
				for i := range b.N {
					first := i * batch % uringK
					t0 := clk.now(unix.CLOCK_THREAD_CPUTIME_ID)
					if v.op == 0 {
						x.rawWrites(first)
					} else {
						x.uringWrites(first, v.op, v.fixed)
					}
					wr += clk.now(unix.CLOCK_THREAD_CPUTIME_ID) - t0
					x.drain(first)
				}
				total := clk.now(unix.CLOCK_PROCESS_CPUTIME_ID) - p0
				b.StopTimer()
				msgs := float64(b.N * batch)
				b.ReportMetric(float64(total)/msgs, "cpu-ns/msg")
				b.ReportMetric(float64(wr)/msgs, "wr-cpu-ns/msg")
				b.ReportMetric(float64(x.late)/msgs, "late/msg")
			})
		}
	}
}

// BenchmarkUringVsWrite runs raw write(2) and io_uring sends (plain and
// with registered files) in every iteration, in rotating order, each on
// its own connections, so that a shared host's noise falls on all alike;
// it reports each one's write-phase thread CPU per message and the ratios.
func BenchmarkUringVsWrite(b *testing.B) {
	p := newTCPPairs(b, uringK)
	defer p.close()
	for _, batch := range uringBatches {
		b.Run(fmt.Sprintf("B=%d", batch), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			x := newXfer(b, p, batch)
			defer x.settle()
			x.u = openUring(b, p.cli)
			defer x.u.close()
			var clk cpuClock
			var wr [3]int64
			b.ResetTimer()
			for i := range b.N {
				for k := range 3 {
					v := (i + k) % 3
					first := (3*i + v) * batch % uringK
					t0 := clk.now(unix.CLOCK_THREAD_CPUTIME_ID)
					switch v {
					case 0:
						x.rawWrites(first)
					case 1:
						x.uringWrites(first, uringOpSend, false)
					case 2:
						x.uringWrites(first, uringOpSend, true)
					}
					wr[v] += clk.now(unix.CLOCK_THREAD_CPUTIME_ID) - t0
					x.drain(first)
				}
			}
			b.StopTimer()
			msgs := float64(b.N * batch)
			b.ReportMetric(float64(wr[0])/msgs, "raw-ns/msg")
			b.ReportMetric(float64(wr[1])/msgs, "send-ns/msg")
			b.ReportMetric(float64(wr[2])/msgs, "fixed-ns/msg")
			b.ReportMetric(float64(wr[1])/float64(wr[0]), "send/raw")
			b.ReportMetric(float64(wr[2])/float64(wr[0]), "fixed/raw")
		})
	}
}

// BenchmarkUringRead: B peers send one message each; the client side
// takes them either as today (epoll_wait, read(2) per ready connection;
// connections 0..K/2-1, edge-triggered) or from io_uring recvs kept armed
// on every connection (K/2..K-1, registered files, re-armed as reaped and
// submitted with the next enter). The two alternate in every iteration.
// rd-ns/msg is the client side's thread CPU; peer-ns/msg the peers'
// writes, which on loopback carry the wake-ups (epoll callback, or io_uring
// poll task work); cpu-ns/msg the process's, so that work done outside the
// thread (io-wq) would show as the difference.
func BenchmarkUringRead(b *testing.B) {
	p := newTCPPairs(b, uringK)
	defer p.close()
	const half = uringK / 2
	for _, batch := range uringBatches {
		b.Run(fmt.Sprintf("B=%d", batch), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			x := newXfer(b, p, batch)
			x.u = openUring(b, p.cli)
			defer x.u.close()
			epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
			if err != nil {
				b.Fatal(err)
			}
			defer unix.Close(epfd)
			x.epfd = epfd
			for i := range half {
				ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(i)}
				if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, int(p.cli[i]), &ev); err != nil {
					b.Fatal(err)
				}
			}
			x.rbufs = make([]byte, uringK*2*uringMsg)
			for i := half; i < uringK; i++ {
				x.armRecv(i)
			}
			if e := x.u.enter(); e != 0 {
				b.Fatalf("io_uring_enter: %v", e)
			}
			var clk cpuClock
			var rd, peer [2]int64
			b.ResetTimer()
			p0 := clk.now(unix.CLOCK_PROCESS_CPUTIME_ID)
			for i := range b.N {
				for k := range 2 {
					v := (i + k) % 2
					t0 := clk.now(unix.CLOCK_THREAD_CPUTIME_ID)
					x.peerWrites(v*half, half, i*batch%half)
					t1 := clk.now(unix.CLOCK_THREAD_CPUTIME_ID)
					if v == 0 {
						x.epollReads(x.batch)
					} else {
						x.await(x.batch, true)
					}
					t2 := clk.now(unix.CLOCK_THREAD_CPUTIME_ID)
					peer[v] += t1 - t0
					rd[v] += t2 - t1
				}
			}
			total := clk.now(unix.CLOCK_PROCESS_CPUTIME_ID) - p0
			b.StopTimer()
			msgs := float64(b.N * batch)
			b.ReportMetric(float64(rd[0])/msgs, "epoll-rd-ns/msg")
			b.ReportMetric(float64(rd[1])/msgs, "uring-rd-ns/msg")
			b.ReportMetric(float64(peer[0])/msgs, "epoll-peer-ns/msg")
			b.ReportMetric(float64(peer[1])/msgs, "uring-peer-ns/msg")
			b.ReportMetric(float64(rd[1]+peer[1])/float64(rd[0]+peer[0]), "uring/epoll")
			b.ReportMetric(float64(total)/(2*msgs), "cpu-ns/msg")
		})
	}
}

// BenchmarkUringSyscallFloor is the cost of the cheapest raw system call
// (getppid) on this host: the entry/exit overhead that batching saves at
// most, per message, on top of the per-call fd lookup.
func BenchmarkUringSyscallFloor(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var clk cpuClock
	p0 := clk.now(unix.CLOCK_THREAD_CPUTIME_ID)
	for range b.N {
		_, _, _ = syscall.RawSyscall(unix.SYS_GETPPID, 0, 0, 0) // cannot fail
	}
	b.ReportMetric(float64(clk.now(unix.CLOCK_THREAD_CPUTIME_ID)-p0)/float64(b.N), "cpu-ns/call")
}
