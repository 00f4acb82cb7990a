package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/wstls"
)

func init() {
	Register(Kind{Name: "connect", NewParams: func() Params { return &ConnectParams{} }, NewResult: func() Result { return &ConnectResult{} }})
}

// ConnectParams configure a connect phase.
type ConnectParams struct {
	Connections int           `json:"connections"` // to open, > 0
	Concurrency int           `json:"concurrency"` // handshakes in progress at once, > 0
	Timeout     time.Duration `json:"timeout"`     // per attempt (TCP connect + upgrade), > 0
	Retries     int           `json:"retries"`     // extra attempts per connection after a failure
}

// ConnectResult is what a connect phase measured.
type ConnectResult struct {
	Total   int64         `json:"total"`   // connections asked for
	Success int64         `json:"success"` // open at the end
	Failed  int64         `json:"failed"`  // gave up after all retries
	Retried int64         `json:"retried"` // attempts that failed and were retried
	Used    time.Duration `json:"used"`    // wall time of the phase
	Latency Hist          `json:"latency"` // successful handshakes: TCP connect start to 101 response, ns
	TCP     Hist          `json:"tcp"`     // successful handshakes: TCP connect, ns
	TLS     Hist          `json:"tls"`     // successful handshakes: TLS handshake, ns; empty on plain connections
	Upgrade Hist          `json:"upgrade"` // successful handshakes: upgrade request to 101 response, ns
	// TLSResumed counts TLS handshakes that resumed a session.
	TLSResumed int64 `json:"tls_resumed"`
	// Subprotocol, Extensions and TLSVersion are what the server agreed
	// to: the negotiated subprotocol, permessage-deflate's parameters
	// (pmdeflate.Params.String) and the TLS version ("TLS 1.3"); "" =
	// none. Should connections differ, the values are joined with " | ".
	Subprotocol string     `json:"subprotocol,omitempty"`
	Extensions  string     `json:"extensions,omitempty"`
	TLSVersion  string     `json:"tls_version,omitempty"`
	Errors      Reasons    `json:"errors"`  // failure reason -> count, over every failed attempt (retried or not)
	Stopped     StopReason `json:"stopped"` // StopCanceled, StopClosed; "" = it ran to its end
}

// Kind implements Params.
func (p *ConnectParams) Kind() string { return "connect" }

// Validate implements Params.
func (p *ConnectParams) Validate() error {
	var errs []error
	if p.Connections <= 0 {
		errs = append(errs, fmt.Errorf("connections must be > 0, got %d", p.Connections))
	}
	if p.Concurrency <= 0 {
		errs = append(errs, fmt.Errorf("concurrency must be > 0, got %d", p.Concurrency))
	}
	if p.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout must be > 0, got %v", p.Timeout))
	}
	if p.Retries < 0 {
		errs = append(errs, fmt.Errorf("retries must be >= 0, got %d", p.Retries))
	}
	if len(errs) > 0 {
		return fmt.Errorf("client: connect: %w", errors.Join(errs...))
	}
	return nil
}

// Split implements Params: connections and concurrency split evenly over
// the first min(parts, concurrency, connections) parts (a connect phase
// opens connections where there were none) — unless every weight is > 0
// and they differ (remote shards' client.weights): then both split in
// proportion to the weights, each part with connections getting at least
// 1 of concurrency.
func (p *ConnectParams) Split(weights []int) []Params {
	out := make([]Params, len(weights))
	if weighted(weights) {
		conns := splitInt64(int64(p.Connections), weights)
		conc := splitInt64(int64(p.Concurrency), weights)
		for j := range out {
			if conns[j] == 0 {
				continue
			}
			q := *p
			q.Connections, q.Concurrency = int(conns[j]), int(min(max(conc[j], 1), conns[j]))
			out[j] = &q
		}
		return out
	}
	m := min(len(weights), p.Concurrency, p.Connections)
	for j := 0; j < m; j++ {
		q := *p
		q.Connections, q.Concurrency = share(p.Connections, m, j), share(p.Concurrency, m, j)
		out[j] = &q
	}
	return out
}

// Merge implements Result.
func (r *ConnectResult) Merge(other Result) {
	o := other.(*ConnectResult)
	r.Total += o.Total
	r.Success += o.Success
	r.Failed += o.Failed
	r.Retried += o.Retried
	r.Used = max(r.Used, o.Used)
	r.Latency.add(o.Latency)
	r.TCP.add(o.TCP)
	r.TLS.add(o.TLS)
	r.Upgrade.add(o.Upgrade)
	r.TLSResumed += o.TLSResumed
	r.Subprotocol = mergeSet(r.Subprotocol, o.Subprotocol)
	r.Extensions = mergeSet(r.Extensions, o.Extensions)
	r.TLSVersion = mergeSet(r.TLSVersion, o.TLSVersion)
	r.Errors.merge(o.Errors)
	r.Stopped = MergeStop(r.Stopped, o.Stopped)
}

// Stop implements Result.
func (r *ConnectResult) Stop() StopReason { return r.Stopped }

// start implements Params.
func (p *ConnectParams) start(ph *phaseEnv) (*phasePlan, error) {
	c := ph.c
	if ph.pr != nil {
		ph.pr.Total.Store(int64(p.Connections))
		ph.pr.Done.Store(0)
	}
	parts := p.Split(ph.open)
	m := 0
	for _, q := range parts {
		if q != nil {
			m++
		}
	}
	plan := &phasePlan{starts: make([]func(*loop), len(parts))}
	for j, q := range parts {
		if q == nil {
			continue
		}
		q := q.(*ConnectParams)
		job := &dialJob{
			phase:   ph.id,
			n:       q.Connections,
			first:   c.next + int64(j),
			stride:  int64(m),
			conc:    q.Concurrency,
			timeout: int64(p.Timeout),
			retries: p.Retries,
			pr:      ph.pr,
		}
		plan.starts[j] = func(l *loop) { l.dialStart(job) }
	}
	c.next += int64(p.Connections)
	plan.done = func(res Result, why StopReason, wall time.Duration) StopReason {
		r := res.(*ConnectResult)
		r.Total = int64(p.Connections)
		r.Used = wall
		for _, h := range []*Hist{&r.Latency, &r.TCP, &r.TLS, &r.Upgrade} {
			if h.Histogram == nil {
				*h = NewHist()
			}
		}
		r.Stopped = why
		return why
	}
	return plan, nil
}

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
	// Hooks for a kind that opens connections of its own (broadcast); nil
	// = a plain connect phase. req returns connection idx's upgrade
	// request (else its target's); opened is told of each connection that
	// finished its handshake; done takes over when the dial ends here,
	// instead of reporting the connect result.
	req    func(idx int64, target int) *upgradeRequest
	opened func(c *conn, idx int64)
	done   func(l *loop, part *ConnectResult, stopped bool)
}

// dialRun is a connect phase running in a loop.
type dialRun struct {
	baseRun
	sub, ext, ver string           // negotiated subprotocols, extensions, TLS versions seen (sets)
	lastExt       pmdeflate.Params // the last extension added to ext
	haveExt       bool
	lastVer       uint16
	job           dialJob
	started       int     // connections begun
	inflight      []*conn // attempts in progress; conn.ext.slot is the index
	part          ConnectResult
	unflushed     int64 // finished connections not yet added to Progress
}

// dialStart begins a connect phase in this loop.
func (l *loop) dialStart(job *dialJob) {
	d := &dialRun{baseRun: baseRun{job.phase}, job: *job, part: ConnectResult{Latency: NewHist(), TCP: NewHist(), TLS: NewHist(), Upgrade: NewHist()}}
	l.ph = d
	l.setTick(time.Duration(job.timeout / 10))
	l.dialFill(d)
}

// dialFill starts attempts until the concurrency or the count is reached,
// and ends the phase when nothing is left.
func (l *loop) dialFill(d *dialRun) {
	for len(d.inflight) < d.job.conc && d.started < d.job.n {
		idx := d.job.first + int64(d.started)*d.job.stride
		d.started++
		l.startAttempt(d, idx, 0)
		if l.ph != d {
			return
		}
	}
	if d.started == d.job.n && len(d.inflight) == 0 {
		d.finish(l, false, 0)
	}
}

// startAttempt opens a socket for connection idx and starts connect();
// failures that happen at once are retried at once.
func (l *loop) startAttempt(d *dialRun, idx int64, tries int) {
	for {
		reason := l.tryConnect(d, idx, tries)
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
func (d *dialRun) failure(reason Reason, tries int) bool {
	d.part.Errors.add(reason)
	if tries < d.job.retries {
		d.part.Retried++
		return true
	}
	d.part.Failed++
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
func (l *loop) tryConnect(d *dialRun, idx int64, tries int) Reason {
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
	if d, ok := l.ph.(*dialRun); ok && d.job.req != nil {
		req = d.job.req(x.index, x.target)
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
	if c.flags&fWantOut == 0 {
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
		l.attemptFailed(c, Reason(err.Error()))
		return
	}
	now := l.now()
	d := l.ph.(*dialRun)
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
	d.removeInflight(c)
	d.part.Success++
	d.progress(1)
	if d.job.opened != nil {
		d.job.opened(c, x.index)
	}
	rest := copy(l.rbuf, x.pend[end:])
	l.putExt(c)
	l.addOpen(c)
	c.flags |= fNew
	if rest > 0 {
		l.feed(c, l.rbuf[:rest], now)
	}
	if l.ph == d {
		l.dialFill(d)
	}
}

// opened records the timings and negotiated options of a handshake that
// succeeded at now.
func (d *dialRun) opened(l *loop, c *conn, neg negotiated, now int64) {
	x := c.ext
	record(d.part.Latency.Histogram, now-x.started)
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
func (d *dialRun) tlsDone(st wstls.State) {
	if st.DidResume {
		d.part.TLSResumed++
	}
	if st.Version != d.lastVer {
		d.lastVer = st.Version
		d.ver = mergeSet(d.ver, tls.VersionName(st.Version))
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
func (l *loop) attemptFailed(c *conn, reason Reason) {
	d := l.ph.(*dialRun) // handshakes run only in a connect phase
	x := c.ext
	idx, tries := x.index, x.tries
	d.removeInflight(c)
	l.closeFD(c)
	if d.failure(reason, tries) {
		l.startAttempt(d, idx, tries+1)
	}
	if l.ph == d {
		l.dialFill(d)
	}
}

// lost implements loopRun: a failed handshake, or a connection this phase
// opened that the server dropped before the phase ended.
func (d *dialRun) lost(l *loop, c *conn, flags uint8, reason Reason) {
	if c.state != stClosed {
		l.attemptFailed(c, reason)
		return
	}
	if flags&fNew != 0 {
		d.part.Success--
		d.part.Failed++
		d.part.Errors.add(reason)
	}
}

// tick implements loopRun: it fails attempts past their deadline and
// publishes progress.
func (d *dialRun) tick(l *loop, now int64) {
	for i := len(d.inflight) - 1; i >= 0 && l.ph == d; i-- {
		if i >= len(d.inflight) {
			continue
		}
		if c := d.inflight[i]; now >= c.ext.deadline {
			l.attemptFailed(c, ReasonTimeout)
		}
	}
	if l.ph == d && d.job.pr != nil && d.unflushed > 0 {
		d.job.pr.Done.Add(d.unflushed)
		d.unflushed = 0
	}
}

// finish implements loopRun: it ends the connect phase here and reports this loop's share.
// stopped means it was cut short: attempts in flight are abandoned (not
// counted as failures).
func (d *dialRun) finish(l *loop, stopped bool, _ int64) {
	l.ph = nil
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
	d.part.Subprotocol, d.part.Extensions, d.part.TLSVersion = d.sub, d.ext, d.ver
	if d.job.done != nil {
		d.job.done(l, &d.part, stopped)
		return
	}
	l.finished(d.job.phase, &d.part, stopped)
}

// weighted reports whether weights are all > 0 and not all equal.
func weighted(weights []int) bool {
	differ := false
	for _, w := range weights {
		if w <= 0 {
			return false
		}
		differ = differ || w != weights[0]
	}
	return differ
}
