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
	Dialed(l *Loop, c *Conn, idx int64, now int64)
	// gaveUp: connection idx failed its last allowed attempt.
	GaveUp(l *Loop, idx int64, reason Reason)
}

// Dialer is the handshakes in progress of one run on one loop.
type Dialer struct {
	owner    dialHooks
	timeout  int64 // per attempt, ns
	retries  int   // extra attempts per connection
	req      func(idx int64, target int) *UpgradeRequest
	Inflight []*Conn // attempts in progress; conn.ext.slot is the index
	Part     ConnectResult

	sub, ext, ver string           // negotiated subprotocols, extensions, TLS versions seen (sets)
	group         string           // key exchange groups seen (a set)
	lastExt       pmdeflate.Params // the last extension added to ext
	haveExt       bool
	lastVer       uint16
	lastGroup     tls.CurveID
}

// Init readies d for owner: timeout per attempt (ns), retries, and req
// (nil = every connection sends its target's upgrade request; a nil
// request from it fails the attempt as ReasonTooLong).
func (d *Dialer) Init(owner dialHooks, timeout int64, retries int, req func(idx int64, target int) *UpgradeRequest) {
	*d = Dialer{owner: owner, timeout: timeout, retries: retries, req: req,
		Part: ConnectResult{Latency: NewHist(), TCP: NewHist(), TLS: NewHist(), Upgrade: NewHist(), Greeting: NewHist()}}
}

// Result returns what d measured, its negotiated sets filled in.
func (d *Dialer) Result() *ConnectResult {
	d.Part.Subprotocol, d.Part.Extensions, d.Part.TLSVersion, d.Part.TLSGroup = d.sub, d.ext, d.ver, d.group
	return &d.Part
}

// Dial opens a socket for connection idx and starts its connect();
// failures that happen at once are retried at once. tries is the number
// of attempts that already failed.
func (l *Loop) Dial(d *Dialer, idx int64, tries int) {
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
func (d *Dialer) failure(reason Reason, tries int, refused bool) bool {
	d.Part.Errors.Add(reason)
	if tries < d.retries && !refused {
		d.Part.Retried++
		return true
	}
	d.Part.Failed++
	return false
}

// tryConnect creates the socket and calls connect(). It returns the failure
// reason, or "" when the attempt is in flight.
func (l *Loop) tryConnect(d *Dialer, idx int64, tries int) Reason {
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
		return Reason("socket: " + ErrnoText(err))
	}
	if l.cl.opts.NoDelay {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			unix.Close(fd)
			return Reason("setsockopt: " + ErrnoText(err))
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
			return Reason("bind: " + ErrnoText(err))
		}
	}
	started := l.Now()
	if err := unix.Connect(fd, sa); err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		return Reason("connect: " + ErrnoText(err))
	}
	c := &Conn{fd: int32(fd), state: stConnecting}
	if err := l.register(c, evOut); err != nil {
		unix.Close(fd)
		return Reason("epoll_ctl: " + ErrnoText(err))
	}
	x := l.GetExt(c)
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
	x.slot = len(d.Inflight)
	d.Inflight = append(d.Inflight, c)
	return ""
}

// onConnected runs when a connecting socket becomes writable (or fails).
func (l *Loop) onConnected(c *Conn) {
	soerr, err := unix.GetsockoptInt(int(c.fd), unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		l.attemptFailed(c, Reason("getsockopt: "+ErrnoText(err)))
		return
	}
	if soerr != 0 {
		l.attemptFailed(c, Reason("connect: "+unix.Errno(soerr).Error()))
		return
	}
	c.ext.tcpAt = l.Now()
	if t := &l.cl.targets[c.ext.target]; t.tls != nil {
		l.startTLS(c, t)
		return
	}
	c.state = stSending
	l.sendRequest(c)
}

// sendRequest writes (the rest of) the upgrade request.
func (l *Loop) sendRequest(c *Conn) {
	x := c.ext
	req := &l.cl.targets[x.target].Req
	if d := x.dialer; d.req != nil {
		if req = d.req(x.index, x.target); req == nil {
			l.attemptFailed(c, ReasonTooLong)
			return
		}
	}
	l.cbuf = append(l.cbuf[:0], req.buf...)
	copy(l.cbuf[req.keyOff:], x.key[:])
	n, e := l.Write(c, l.cbuf[x.written:])
	if e != 0 {
		if !WouldBlock(e) {
			l.attemptFailed(c, Reason("write: "+e.Error()))
		}
		return
	}
	x.written += n
	if x.written < len(l.cbuf) {
		return // EPOLLOUT is still registered
	}
	if c.Flags&FlagWantOut == 0 && (c.Sec == nil || c.Sec.tls == nil) { // TLS waits for input since its handshake began
		if err := EpollCtl(l.EpollFD, unix.EPOLL_CTL_MOD, c.fd, c.gen, EvIn); err != nil {
			l.attemptFailed(c, Reason("epoll_ctl: "+ErrnoText(err)))
			return
		}
	}
	c.state = stReceiving
}

// readResponse reads the upgrade response; bytes after its head are the
// start of the frame stream. A response that is not complete after a read
// shorter than the buffer waits for the next EPOLLIN edge.
func (l *Loop) readResponse(c *Conn) {
	if c.Sec != nil && c.Sec.tls != nil {
		l.readSealed(c)
		return
	}
	n, e := rawRead(c.fd, l.rbuf)
	if e != 0 {
		if !WouldBlock(e) {
			l.attemptFailed(c, Reason("read: "+e.Error()))
		}
		return
	}
	if n == 0 {
		l.attemptFailed(c, ReasonHandshakeEOF)
		return
	}
	l.responseBytes(c, l.rbuf[:n])
	if n == len(l.rbuf) && c.state == StateOpen {
		l.ReadFrames(c) // the socket may hold more, and no new edge would say so
	}
}

// responseBytes takes the next bytes of c's upgrade response (plaintext)
// and, once its head is complete, checks it and opens the connection; the
// bytes after the head are the start of the frame stream.
func (l *Loop) responseBytes(c *Conn, b []byte) {
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
	now := l.Now()
	d := x.dialer
	d.opened(l, c, neg, now)
	if neg.deflate {
		if c.Sec == nil {
			c.Sec = &connSec{}
		}
		c.Sec.Deflate = true
		c.Sec.WindowBits = uint8(neg.params.ClientMaxWindowBits)
		if c.Sec.WindowBits == 0 {
			c.Sec.WindowBits = pmdeflate.MaxWindowBits
		}
		c.Sec.dec.Init(&l.inflater, neg.params, maxPayload)
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
func (l *Loop) greeted(c *Conn, now int64) {
	x := c.ext
	if x.upAt > 0 {
		Record(x.dialer.Part.Greeting.Histogram, now-x.upAt)
	}
	l.established(c, now)
}

// established puts c, whose handshake (and protocol greeting) is done, on
// the open list and tells its dialer's owner. It records the connect
// latency, dial start to open, whichever way c got here: a raw
// connection's 101, a protocol's greeting, or a protocol without one
// (JSON-RPC) open at its 101.
func (l *Loop) established(c *Conn, now int64) {
	x := c.ext
	d, idx := x.dialer, x.index
	Record(d.Part.Latency.Histogram, now-x.started)
	d.removeInflight(c)
	d.Part.Success++
	l.counts.opened.Add(1)
	x.dialer = nil
	c.state = StateOpen
	if x.idle() {
		l.putExt(c)
	}
	l.addOpen(c)
	d.owner.Dialed(l, c, idx, now)
}

// opened records the timings and negotiated options of a handshake that
// succeeded at now.
func (d *Dialer) opened(l *Loop, c *Conn, neg negotiated, now int64) {
	x := c.ext
	x.upAt = now
	Record(d.Part.TCP.Histogram, x.tcpAt-x.started)
	up := x.tcpAt
	if x.tlsAt > 0 {
		Record(d.Part.TLS.Histogram, x.tlsAt-x.tcpAt)
		up = x.tlsAt
	}
	Record(d.Part.Upgrade.Histogram, now-up)
	if neg.subprotocol >= 0 {
		d.sub = mergeSet(d.sub, l.cl.opts.Subprotocols[neg.subprotocol])
	}
	if neg.deflate && (!d.haveExt || neg.params != d.lastExt) {
		d.haveExt, d.lastExt = true, neg.params
		d.ext = mergeSet(d.ext, neg.params.String())
	}
}

// tlsDone records an established TLS session.
func (d *Dialer) tlsDone(st wstls.State) {
	if st.DidResume {
		d.Part.TLSResumed++
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
func (d *Dialer) removeInflight(c *Conn) {
	i := c.ext.slot
	last := d.Inflight[len(d.Inflight)-1]
	d.Inflight[i] = last
	last.ext.slot = i
	d.Inflight[len(d.Inflight)-1] = nil
	d.Inflight = d.Inflight[:len(d.Inflight)-1]
}

// attemptFailed closes a failed attempt and retries it if allowed, or
// tells the owner it gave up.
func (l *Loop) attemptFailed(c *Conn, reason Reason) {
	l.attemptFailedAs(c, reason, connectReasonOf(reason, c.state))
}

// attemptFailedAs is attemptFailed with the live metrics' reason given.
func (l *Loop) attemptFailedAs(c *Conn, reason Reason, why ConnectReason) {
	x := c.ext
	d, idx, tries, refused := x.dialer, x.index, x.tries, x.refused
	d.removeInflight(c)
	l.CloseFD(c)
	if d.failure(reason, tries, refused) {
		l.Dial(d, idx, tries+1)
		return
	}
	l.gaveUp(d, idx, reason, why)
}

// gaveUp counts connection idx given up for why (Live reads it) and
// tells d's owner.
func (l *Loop) gaveUp(d *Dialer, idx int64, reason Reason, why ConnectReason) {
	l.counts.failed[why].Add(1)
	d.owner.GaveUp(l, idx, reason)
}

// Tick fails attempts past their deadline; the owning run calls it from
// its own tick.
func (d *Dialer) Tick(l *Loop, now int64) {
	for i := len(d.Inflight) - 1; i >= 0; i-- {
		if i >= len(d.Inflight) {
			continue
		}
		if c := d.Inflight[i]; now >= c.ext.deadline {
			reason := ReasonTimeout
			if s := ProtoOf(c); s != nil && c.state == stGreeting {
				reason = Reason(l.cl.proto.Waiting(s)) // the protocol's own reason
			}
			l.attemptFailedAs(c, reason, ConnectTimeout)
		}
	}
}

// Abandon closes the attempts in progress, counted neither as opened nor
// as failed (a run cut short).
func (d *Dialer) Abandon(l *Loop) {
	for _, c := range d.Inflight {
		l.CloseFD(c)
	}
	d.Inflight = nil
}
