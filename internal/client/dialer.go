package client

import (
	"crypto/tls"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/wstls"
)

// A dialer opens WebSocket connections on a loop: the socket and its
// TCP connect, TLS (secure.go), the upgrade request and its response,
// with retries, a deadline per attempt, and the handshake's timings. A
// connect phase's run is a dialer and little else (dialRun); a run that
// opens connections while it runs (open arrivals, churn, reconnects)
// owns one too. Each connection in its handshake points at its dialer
// (connExt.dialer), so the loop's handshake steps reach the right one
// whatever kind is running, and several dialers may work at once.

// dialHooks are what the run owning a dialer is told of its connections.
type dialHooks interface {
	// dialed: connection idx finished its handshake at now and is open
	// (on l.open); bytes that came with the response are fed after it.
	dialed(l *loop, c *conn, idx int64, now int64)
	// gaveUp: connection idx failed its last allowed attempt.
	gaveUp(l *loop, idx int64, reason Reason)
}

// dialer is the handshakes in progress of one run on one loop.
type dialer struct {
	owner    dialHooks
	timeout  int64 // per attempt, ns
	retries  int   // extra attempts per connection
	req      func(idx int64, target int) *upgradeRequest
	inflight []*conn // attempts in progress; conn.ext.slot is the index
	part     ConnectResult

	sub, ext, ver string           // negotiated subprotocols, extensions, TLS versions seen (sets)
	group         string           // key exchange groups seen (a set)
	lastExt       pmdeflate.Params // the last extension added to ext
	haveExt       bool
	lastVer       uint16
	lastGroup     tls.CurveID
}

// init readies d for owner: timeout per attempt (ns), retries, and req
// (nil = every connection sends its target's upgrade request; a nil
// request from it fails the attempt as ReasonTooLong).
func (d *dialer) init(owner dialHooks, timeout int64, retries int, req func(idx int64, target int) *upgradeRequest) {
	*d = dialer{owner: owner, timeout: timeout, retries: retries, req: req,
		part: ConnectResult{Latency: NewHist(), TCP: NewHist(), TLS: NewHist(), Upgrade: NewHist(), Greeting: NewHist()}}
}

// result returns what d measured, its negotiated sets filled in.
func (d *dialer) result() *ConnectResult {
	d.part.Subprotocol, d.part.Extensions, d.part.TLSVersion, d.part.TLSGroup = d.sub, d.ext, d.ver, d.group
	return &d.part
}

// dial opens a socket for connection idx and starts its connect();
// failures that happen at once are retried at once. tries is the number
// of attempts that already failed.
func (l *loop) dial(d *dialer, idx int64, tries int) {
	for {
		reason := l.tryConnect(d, idx, tries)
		if reason == "" {
			return
		}
		if !d.failure(reason, tries, false) {
			l.gaveUp(d, idx, reason, connectReasonOf(reason, stConnecting))
			return
		}
		tries++
	}
}

// failure records a failed attempt and reports whether to retry it: a
// refusal (refusal.go) never is.
func (d *dialer) failure(reason Reason, tries int, refused bool) bool {
	d.part.Errors.add(reason)
	if tries < d.retries && !refused {
		d.part.Retried++
		return true
	}
	d.part.Failed++
	return false
}

// tryConnect creates the socket and calls connect(). It returns the failure
// reason, or "" when the attempt is in flight.
func (l *loop) tryConnect(d *dialer, idx int64, tries int) Reason {
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
		return Reason("socket: " + errnoText(err))
	}
	if l.cl.opts.NoDelay {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			unix.Close(fd)
			return Reason("setsockopt: " + errnoText(err))
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
			return Reason("bind: " + errnoText(err))
		}
	}
	started := l.now()
	if err := unix.Connect(fd, sa); err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		return Reason("connect: " + errnoText(err))
	}
	c := &conn{fd: int32(fd), state: stConnecting}
	if err := l.register(c, evOut); err != nil {
		unix.Close(fd)
		return Reason("epoll_ctl: " + errnoText(err))
	}
	x := l.getExt(c)
	x.index = idx
	x.tries = tries
	x.target = t
	x.started = started
	x.deadline = started + d.timeout
	x.dialer = d
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
		l.attemptFailed(c, Reason("getsockopt: "+errnoText(err)))
		return
	}
	if soerr != 0 {
		l.attemptFailed(c, Reason("connect: "+unix.Errno(soerr).Error()))
		return
	}
	c.ext.tcpAt = l.now()
	if t := &l.cl.targets[c.ext.target]; t.tls != nil {
		l.startTLS(c, t)
		return
	}
	c.state = stSending
	l.sendRequest(c)
}

// sendRequest writes (the rest of) the upgrade request.
func (l *loop) sendRequest(c *conn) {
	x := c.ext
	req := &l.cl.targets[x.target].req
	if d := x.dialer; d.req != nil {
		if req = d.req(x.index, x.target); req == nil {
			l.attemptFailed(c, ReasonTooLong)
			return
		}
	}
	l.cbuf = append(l.cbuf[:0], req.buf...)
	copy(l.cbuf[req.keyOff:], x.key[:])
	n, e := l.write(c, l.cbuf[x.written:])
	if e != 0 {
		if !wouldBlock(e) {
			l.attemptFailed(c, Reason("write: "+e.Error()))
		}
		return
	}
	x.written += n
	if x.written < len(l.cbuf) {
		return // EPOLLOUT is still registered
	}
	if c.flags&fWantOut == 0 && (c.sec == nil || c.sec.tls == nil) { // TLS waits for input since its handshake began
		if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, c.gen, evIn); err != nil {
			l.attemptFailed(c, Reason("epoll_ctl: "+errnoText(err)))
			return
		}
	}
	c.state = stReceiving
}

// readResponse reads the upgrade response; bytes after its head are the
// start of the frame stream. A response that is not complete after a read
// shorter than the buffer waits for the next EPOLLIN edge.
func (l *loop) readResponse(c *conn) {
	if c.sec != nil && c.sec.tls != nil {
		l.readSealed(c)
		return
	}
	n, e := rawRead(c.fd, l.rbuf)
	if e != 0 {
		if !wouldBlock(e) {
			l.attemptFailed(c, Reason("read: "+e.Error()))
		}
		return
	}
	if n == 0 {
		l.attemptFailed(c, ReasonHandshakeEOF)
		return
	}
	l.responseBytes(c, l.rbuf[:n])
	if n == len(l.rbuf) && c.state == stOpen {
		l.readFrames(c) // the socket may hold more, and no new edge would say so
	}
}

// responseBytes takes the next bytes of c's upgrade response (plaintext)
// and, once its head is complete, checks it and opens the connection; the
// bytes after the head are the start of the frame stream.
func (l *loop) responseBytes(c *conn, b []byte) {
	x := c.ext
	x.pend = append(x.pend, b...)
	end := responseEnd(x.pend)
	if end == 0 {
		if len(x.pend) > maxResponse {
			l.attemptFailed(c, Reason(errResponseTooBig.Error()))
		}
		return
	}
	neg, err := checkResponse(x.pend[:end], x.key[:], &l.cl.offer)
	if err != nil {
		reason := Reason(err.Error())
		if code, _, serr := responseStatus(x.pend[:end]); serr == nil && refusedStatus(code) {
			reason = refuse(c, reason)
		}
		l.attemptFailed(c, reason)
		return
	}
	now := l.now()
	d := x.dialer
	d.opened(l, c, neg, now)
	if neg.deflate {
		if c.sec == nil {
			c.sec = &connSec{}
		}
		c.sec.deflate = true
		c.sec.bits = uint8(neg.params.ClientMaxWindowBits)
		if c.sec.bits == 0 {
			c.sec.bits = pmdeflate.MaxWindowBits
		}
		c.sec.dec.Init(&l.inflater, neg.params, maxPayload)
		c.dec.deflate = true
	}
	rest := copy(l.rbuf, x.pend[end:])
	x.pend = x.pend[:0]
	open, fail := l.startGreeting(c, now)
	switch {
	case fail != "":
		l.attemptFailed(c, fail)
		return
	case open:
		l.established(c, now)
	}
	if rest > 0 && c.state >= stGreeting {
		l.feed(c, l.rbuf[:rest], now)
	}
}

// greeted ends a protocol's handshake on c (protocol.go): the connection
// is open.
func (l *loop) greeted(c *conn, now int64) {
	x := c.ext
	if x.upAt > 0 {
		record(x.dialer.part.Greeting.Histogram, now-x.upAt)
	}
	l.established(c, now)
}

// established puts c, whose handshake (and protocol greeting) is done, on
// the open list and tells its dialer's owner. It records the connect
// latency, dial start to open, whichever way c got here: a raw
// connection's 101, a protocol's greeting, or a protocol without one
// (JSON-RPC) open at its 101.
func (l *loop) established(c *conn, now int64) {
	x := c.ext
	d, idx := x.dialer, x.index
	record(d.part.Latency.Histogram, now-x.started)
	d.removeInflight(c)
	d.part.Success++
	l.counts.opened.Add(1)
	x.dialer = nil
	c.state = stOpen
	if x.idle() {
		l.putExt(c)
	}
	l.addOpen(c)
	d.owner.dialed(l, c, idx, now)
}

// opened records the timings and negotiated options of a handshake that
// succeeded at now.
func (d *dialer) opened(l *loop, c *conn, neg negotiated, now int64) {
	x := c.ext
	x.upAt = now
	record(d.part.TCP.Histogram, x.tcpAt-x.started)
	up := x.tcpAt
	if x.tlsAt > 0 {
		record(d.part.TLS.Histogram, x.tlsAt-x.tcpAt)
		up = x.tlsAt
	}
	record(d.part.Upgrade.Histogram, now-up)
	if neg.subprotocol >= 0 {
		d.sub = mergeSet(d.sub, l.cl.opts.Subprotocols[neg.subprotocol])
	}
	if neg.deflate && (!d.haveExt || neg.params != d.lastExt) {
		d.haveExt, d.lastExt = true, neg.params
		d.ext = mergeSet(d.ext, neg.params.String())
	}
}

// tlsDone records an established TLS session.
func (d *dialer) tlsDone(st wstls.State) {
	if st.DidResume {
		d.part.TLSResumed++
	}
	if st.Version != d.lastVer {
		d.lastVer = st.Version
		d.ver = mergeSet(d.ver, tls.VersionName(st.Version))
	}
	if st.Group != 0 && st.Group != d.lastGroup {
		d.lastGroup = st.Group
		d.group = mergeSet(d.group, wstls.GroupName(st.Group))
	}
}

// mergeSet is the union of two " | "-separated sets, sorted.
func mergeSet(a, b string) string {
	if a == b || b == "" {
		return a
	}
	if a == "" {
		return b
	}
	seen := map[string]bool{}
	for _, s := range []string{a, b} {
		for v := range strings.SplitSeq(s, " | ") {
			seen[v] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return strings.Join(out, " | ")
}

// removeInflight takes an attempt off the in-flight list.
func (d *dialer) removeInflight(c *conn) {
	i := c.ext.slot
	last := d.inflight[len(d.inflight)-1]
	d.inflight[i] = last
	last.ext.slot = i
	d.inflight[len(d.inflight)-1] = nil
	d.inflight = d.inflight[:len(d.inflight)-1]
}

// attemptFailed closes a failed attempt and retries it if allowed, or
// tells the owner it gave up.
func (l *loop) attemptFailed(c *conn, reason Reason) {
	l.attemptFailedAs(c, reason, connectReasonOf(reason, c.state))
}

// attemptFailedAs is attemptFailed with the live metrics' reason given.
func (l *loop) attemptFailedAs(c *conn, reason Reason, why ConnectReason) {
	x := c.ext
	d, idx, tries, refused := x.dialer, x.index, x.tries, x.refused
	d.removeInflight(c)
	l.closeFD(c)
	if d.failure(reason, tries, refused) {
		l.dial(d, idx, tries+1)
		return
	}
	l.gaveUp(d, idx, reason, why)
}

// gaveUp counts connection idx given up for why (Live reads it) and
// tells d's owner.
func (l *loop) gaveUp(d *dialer, idx int64, reason Reason, why ConnectReason) {
	l.counts.failed[why].Add(1)
	d.owner.gaveUp(l, idx, reason)
}

// tick fails attempts past their deadline; the owning run calls it from
// its own tick.
func (d *dialer) tick(l *loop, now int64) {
	for i := len(d.inflight) - 1; i >= 0; i-- {
		if i >= len(d.inflight) {
			continue
		}
		if c := d.inflight[i]; now >= c.ext.deadline {
			reason := ReasonTimeout
			if s := protoOf(c); s != nil && c.state == stGreeting {
				reason = Reason(l.cl.proto.Waiting(s)) // the protocol's own reason
			}
			l.attemptFailedAs(c, reason, ConnectTimeout)
		}
	}
}

// abandon closes the attempts in progress, counted neither as opened nor
// as failed (a run cut short).
func (d *dialer) abandon(l *loop) {
	for _, c := range d.inflight {
		l.closeFD(c)
	}
	d.inflight = nil
}
