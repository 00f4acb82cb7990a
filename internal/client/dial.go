package client

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"
)

// dialJob is one loop's share of a connect phase.
type dialJob struct {
	phase   int64
	n       int   // connections to open here
	first   int64 // connection number of the first; the k-th is first+k*stride
	stride  int64
	conc    int   // attempts in flight here at most
	timeout int64 // per attempt, ns
	retries int
	pr      *Progress
}

// connectPart is one loop's share of a ConnectResult.
type connectPart struct {
	success, failed, retried int64
	errors                   map[string]int64
	hist                     *hdrhistogram.Histogram
}

// count adds one failure with reason.
func (p *connectPart) count(reason string) {
	if p.errors == nil {
		p.errors = make(map[string]int64)
	}
	p.errors[reason]++
}

// dialRun is a connect phase running in a loop.
type dialRun struct {
	job       dialJob
	started   int     // connections begun
	inflight  []*conn // attempts in progress; conn.ext.slot is the index
	part      connectPart
	unflushed int64 // finished connections not yet added to Progress
}

// dialStart begins a connect phase in this loop.
func (l *loop) dialStart(job *dialJob) {
	l.dial = &dialRun{job: *job, part: connectPart{hist: NewHistogram()}}
	l.setTick(time.Duration(job.timeout / 10))
	l.dialFill()
}

// dialFill starts attempts until the concurrency or the count is reached,
// and ends the phase when nothing is left.
func (l *loop) dialFill() {
	d := l.dial
	for len(d.inflight) < d.job.conc && d.started < d.job.n {
		idx := d.job.first + int64(d.started)*d.job.stride
		d.started++
		l.startAttempt(idx, 0)
		if l.dial != d {
			return
		}
	}
	if d.started == d.job.n && len(d.inflight) == 0 {
		l.dialFinish(false)
	}
}

// startAttempt opens a socket for connection idx and starts connect();
// failures that happen at once are retried at once.
func (l *loop) startAttempt(idx int64, tries int) {
	d := l.dial
	for {
		reason := l.tryConnect(idx, tries)
		if reason == "" {
			return
		}
		if !d.failure(reason, tries) {
			return
		}
		tries++
	}
}

// failure records a failed attempt and reports whether to retry it.
func (d *dialRun) failure(reason string, tries int) bool {
	d.part.count(reason)
	if tries < d.job.retries {
		d.part.retried++
		return true
	}
	d.part.failed++
	d.progress(1)
	return false
}

// progress publishes finished connections in batches.
func (d *dialRun) progress(n int64) {
	d.unflushed += n
	if d.job.pr != nil && d.unflushed >= progressBatch {
		d.job.pr.Done.Add(d.unflushed)
		d.unflushed = 0
	}
}

// tryConnect creates the socket and calls connect(). It returns the failure
// reason, or "" when the attempt is in flight.
func (l *loop) tryConnect(idx int64, tries int) string {
	d := l.dial
	t := int(idx % int64(len(l.targets)))
	sa := l.targets[t]
	family := unix.AF_INET
	srcs := l.src4
	if _, ok := sa.(*unix.SockaddrInet6); ok {
		family = unix.AF_INET6
		srcs = l.src6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "socket: " + errnoText(err)
	}
	if l.cl.opts.NoDelay {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			unix.Close(fd)
			return "setsockopt: " + errnoText(err)
		}
	}
	if len(srcs) > 0 {
		// Let connect() pick the port, so that a source IP's ports are
		// shared across targets (the 4-tuple must be unique, not the
		// port). Older kernels lack it; binding still works without.
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
		// The k-th connection to a target binds source k (mod the number
		// of sources of its family).
		k := idx / int64(len(l.targets))
		if err := unix.Bind(fd, srcs[k%int64(len(srcs))]); err != nil {
			unix.Close(fd)
			return "bind: " + errnoText(err)
		}
	}
	started := l.now()
	if err := unix.Connect(fd, sa); err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		return "connect: " + errnoText(err)
	}
	c := &conn{fd: int32(fd), state: stConnecting}
	if err := l.register(c, evOut); err != nil {
		unix.Close(fd)
		return "epoll_ctl: " + errnoText(err)
	}
	x := l.getExt(c)
	x.index = idx
	x.tries = tries
	x.target = t
	x.started = started
	x.deadline = started + d.job.timeout
	var raw [16]byte
	for i := 0; i < 2; i++ {
		v := l.rng.Uint64()
		for j := 0; j < 8; j++ {
			raw[8*i+j] = byte(v >> (8 * j))
		}
	}
	encodeKey(&x.key, raw)
	x.slot = len(d.inflight)
	d.inflight = append(d.inflight, c)
	return ""
}

// onConnected runs when a connecting socket becomes writable (or fails).
func (l *loop) onConnected(c *conn) {
	soerr, err := unix.GetsockoptInt(int(c.fd), unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		l.attemptFailed(c, "getsockopt: "+errnoText(err))
		return
	}
	if soerr != 0 {
		l.attemptFailed(c, "connect: "+unix.Errno(soerr).Error())
		return
	}
	c.state = stSending
	l.sendRequest(c)
}

// sendRequest writes (the rest of) the upgrade request.
func (l *loop) sendRequest(c *conn) {
	x := c.ext
	req := &l.cl.targets[x.target].req
	l.cbuf = append(l.cbuf[:0], req.buf...)
	copy(l.cbuf[req.keyOff:], x.key[:])
	n, e := rawWrite(c.fd, l.cbuf[x.written:])
	if e != 0 {
		if !wouldBlock(e) {
			l.attemptFailed(c, "write: "+e.Error())
		}
		return
	}
	x.written += n
	if x.written < len(l.cbuf) {
		return // EPOLLOUT is still registered
	}
	if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, c.gen, evIn); err != nil {
		l.attemptFailed(c, "epoll_ctl: "+errnoText(err))
		return
	}
	c.state = stReceiving
}

// readResponse reads the upgrade response; bytes after its head are the
// start of the frame stream. A response that is not complete after a read
// shorter than the buffer waits for the next EPOLLIN edge.
func (l *loop) readResponse(c *conn) {
	x := c.ext
	n, e := rawRead(c.fd, l.rbuf)
	if e != 0 {
		if !wouldBlock(e) {
			l.attemptFailed(c, "read: "+e.Error())
		}
		return
	}
	if n == 0 {
		l.attemptFailed(c, "handshake eof")
		return
	}
	x.pend = append(x.pend, l.rbuf[:n]...)
	end := responseEnd(x.pend)
	if end == 0 {
		if len(x.pend) > maxResponse {
			l.attemptFailed(c, errResponseTooBig.Error())
		}
		return
	}
	if err := checkResponse(x.pend[:end], x.key[:]); err != nil {
		l.attemptFailed(c, err.Error())
		return
	}
	now := l.now()
	d := l.dial
	record(d.part.hist, now-x.started)
	d.removeInflight(c)
	d.part.success++
	d.progress(1)
	rest := copy(l.rbuf, x.pend[end:])
	l.putExt(c)
	l.addOpen(c)
	c.flags |= fNew
	if rest > 0 {
		l.feed(c, l.rbuf[:rest], now)
	}
	if n == len(l.rbuf) && c.state == stOpen {
		l.readFrames(c) // the socket may hold more, and no new edge would say so
	}
	if l.dial == d {
		l.dialFill()
	}
}

// removeInflight takes an attempt off the in-flight list.
func (d *dialRun) removeInflight(c *conn) {
	i := c.ext.slot
	last := d.inflight[len(d.inflight)-1]
	d.inflight[i] = last
	last.ext.slot = i
	d.inflight[len(d.inflight)-1] = nil
	d.inflight = d.inflight[:len(d.inflight)-1]
}

// attemptFailed closes a failed attempt, retries it if allowed and tops up
// the attempts in flight.
func (l *loop) attemptFailed(c *conn, reason string) {
	d := l.dial
	x := c.ext
	idx, tries := x.index, x.tries
	d.removeInflight(c)
	l.closeFD(c)
	if d.failure(reason, tries) {
		l.startAttempt(idx, tries+1)
	}
	if l.dial == d {
		l.dialFill()
	}
}

// dialTick fails attempts past their deadline and publishes progress.
func (l *loop) dialTick(now int64) {
	d := l.dial
	for i := len(d.inflight) - 1; i >= 0 && l.dial == d; i-- {
		if i >= len(d.inflight) {
			continue
		}
		if c := d.inflight[i]; now >= c.ext.deadline {
			l.attemptFailed(c, "timeout")
		}
	}
	if l.dial == d && d.job.pr != nil && d.unflushed > 0 {
		d.job.pr.Done.Add(d.unflushed)
		d.unflushed = 0
	}
}

// dialFinish ends the connect phase here and reports this loop's share.
// stopped means it was cut short: attempts in flight are abandoned (not
// counted as failures).
func (l *loop) dialFinish(stopped bool) {
	d := l.dial
	l.dial = nil
	l.setTick(0)
	if stopped {
		for _, c := range d.inflight {
			l.closeFD(c)
		}
		d.inflight = nil
	}
	for _, c := range l.open {
		c.flags &^= fNew
	}
	if d.job.pr != nil && d.unflushed > 0 {
		d.job.pr.Done.Add(d.unflushed)
	}
	l.results <- phaseResult{phase: d.job.phase, dial: &d.part, stopped: stopped}
}
