package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/wstls"

	"github.com/wsplan/wsplan/internal/proto"
)

// Defaults applied by New and the phases.
const (
	// DefaultPath is the upgrade request path when Options.Path is empty.
	DefaultPath = "/ws"
	// DefaultLoops is the number of event loops when Options.Loops is 0.
	DefaultLoops = 1
)

// ErrClosed is returned by phases started (or running) when Close is called.
var ErrClosed = errors.New("client: closed")

// Client is a load-generating WebSocket client: Options.Loops event loops,
// each a goroutine locked to an OS thread with its own epoll fd, owning the
// connections it opened. Phases (Run, or a kind's typed wrapper such as
// Echo) run one at a time; Conns and Close may be called from any
// goroutine. Call Close to stop the loops.
type Client struct {
	opts       Options
	offer      offer
	targets    []target
	src4, src6 []unix.Sockaddr
	loops      []*Loop
	conns      atomic.Int64
	proto      proto.Protocol // nil = raw messages

	phaseMu sync.Mutex // serialises phases

	rcMu     sync.Mutex
	rcLast   ReconnectStats // the last phase's reconnects (Reconnects)
	phase    int64          // id of the last phase started; guarded by phaseMu
	NextConn int64          // number of the next connection; guarded by phaseMu

	closeOnce sync.Once
	closed    atomic.Bool
}

// target is one resolved server address.
type target struct {
	addr string
	sa   unix.Sockaddr
	Req  UpgradeRequest
	tls  *tls.Config // nil = plain; shared by the target's connections (and its session cache)
}

// New validates opts, resolves the targets and starts the event loops.
func New(opts Options) (*Client, error) {
	if opts.Path == "" {
		opts.Path = DefaultPath
	}
	if opts.Loops == 0 {
		opts.Loops = DefaultLoops
	}
	if opts.Loops < 0 {
		return nil, fmt.Errorf("client: loops must be >= 0, got %d", opts.Loops)
	}
	if !strings.HasPrefix(opts.Path, "/") || strings.ContainsAny(opts.Path, " \r\n") {
		return nil, fmt.Errorf("client: path %q must start with / and contain no spaces or line breaks", opts.Path)
	}
	if len(opts.Targets) == 0 {
		return nil, errors.New("client: targets is empty: give at least one host:port")
	}
	proto, err := makeProtocol(opts.Protocol)
	if err != nil {
		return nil, err
	}
	opts.Subprotocols = offeredSubprotocols(opts.Subprotocols, proto)
	c := &Client{opts: opts, offer: offer{subprotocols: opts.Subprotocols, compression: opts.Compression}, proto: proto}
	if p := opts.Compression; p != nil {
		if errs := p.Validate(); len(errs) > 0 {
			return nil, fmt.Errorf("client: compression: %w", errors.Join(errs...))
		}
	}
	for i, s := range opts.SourceAddrs {
		ip, err := parseIP(s)
		if err != nil {
			return nil, fmt.Errorf("client: source_addrs[%d] %q: %w", i, s, err)
		}
		if v4 := ip.To4(); v4 != nil {
			c.src4 = append(c.src4, &unix.SockaddrInet4{Addr: [4]byte(v4)})
		} else {
			c.src6 = append(c.src6, &unix.SockaddrInet6{Addr: [16]byte(ip.To16()), ZoneId: zoneID(s)})
		}
	}
	for i, t := range opts.Targets {
		tg, err := c.target(i, t)
		if err != nil {
			return nil, err
		}
		c.targets = append(c.targets, tg)
	}
	var rcp *Reconnect
	if opts.Reconnect != nil {
		p := *opts.Reconnect
		if err := p.Check(); err != nil {
			return nil, err
		}
		if p.Policy != ReconnectNone {
			rcp = &p
		}
	}
	for i := 0; i < opts.Loops; i++ {
		l, err := newLoop(c, i)
		if err != nil {
			for _, l := range c.loops {
				l.shutdown()
			}
			return nil, err
		}
		if rcp != nil {
			l.rc = newReconnector(*rcp, i, opts.Loops)
		}
		c.loops = append(c.loops, l)
	}
	loopsAlive.Add(int32(len(c.loops))) // before any starts: see rawWaits
	for _, l := range c.loops {
		go l.run()
	}
	return c, nil
}

// tlsConfig returns the TLS configuration for server name name: one per
// name, so that targets with the same name share a session cache.
func (c *Client) tlsConfig(o *TLSOptions, name string) (*tls.Config, error) {
	for _, t := range c.targets {
		if t.tls != nil && t.tls.ServerName == name {
			return t.tls, nil
		}
	}
	co := *o
	co.ServerName = name
	return wstls.ClientConfig(co)
}

// hostOnly returns the host of a Host header value, without port or
// IPv6 brackets.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// parseIP parses an IP literal, with an optional %zone for IPv6.
func parseIP(s string) (net.IP, error) {
	host, _, _ := strings.Cut(s, "%")
	ip := net.ParseIP(strings.Trim(host, "[]"))
	if ip == nil {
		return nil, errors.New("not an IP literal")
	}
	return ip, nil
}

// zoneID returns the interface index of an IPv6 literal's %zone, or 0.
func zoneID(s string) uint32 {
	_, zone, ok := strings.Cut(strings.Trim(s, "[]"), "%")
	if !ok {
		return 0
	}
	ifi, err := net.InterfaceByName(zone)
	if err != nil {
		return 0
	}
	return uint32(ifi.Index)
}

// cloneSockaddr copies an IPv4/IPv6 socket address.
func cloneSockaddr(sa unix.Sockaddr) unix.Sockaddr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &unix.SockaddrInet4{Port: a.Port, Addr: a.Addr}
	case *unix.SockaddrInet6:
		return &unix.SockaddrInet6{Port: a.Port, ZoneId: a.ZoneId, Addr: a.Addr}
	}
	return sa
}

// target resolves Options.Targets[i] (t) and makes its upgrade request and
// TLS config. Call it after the source addresses are parsed: a target
// needs one of its family when there are any.
func (c *Client) target(i int, t string) (target, error) {
	opts := &c.opts
	a, err := net.ResolveTCPAddr("tcp", t)
	if err != nil {
		return target{}, fmt.Errorf("client: targets[%d] %q: %w", i, t, err)
	}
	var sa unix.Sockaddr
	if v4 := a.IP.To4(); v4 != nil {
		sa = &unix.SockaddrInet4{Port: a.Port, Addr: [4]byte(v4)}
		if len(opts.SourceAddrs) > 0 && len(c.src4) == 0 {
			return target{}, fmt.Errorf("client: targets[%d] %q is IPv4 but source_addrs has no IPv4 address: add one or leave source_addrs empty", i, t)
		}
	} else {
		sa6 := &unix.SockaddrInet6{Port: a.Port, Addr: [16]byte(a.IP.To16())}
		if a.Zone != "" {
			if ifi, err := net.InterfaceByName(a.Zone); err == nil {
				sa6.ZoneId = uint32(ifi.Index)
			}
		}
		sa = sa6
		if len(opts.SourceAddrs) > 0 && len(c.src6) == 0 {
			return target{}, fmt.Errorf("client: targets[%d] %q is IPv6 but source_addrs has no IPv6 address: add one or leave source_addrs empty", i, t)
		}
	}
	spec := requestSpec{host: t, uri: opts.Path, origin: opts.Origin, subprotocols: opts.Subprotocols, headers: opts.Headers}
	if i < len(opts.Hosts) && opts.Hosts[i] != "" {
		spec.host = opts.Hosts[i]
	}
	if i < len(opts.RequestURIs) && opts.RequestURIs[i] != "" {
		spec.uri = opts.RequestURIs[i]
	}
	if opts.Compression != nil {
		spec.extensions = pmdeflate.Offer(*opts.Compression)
	}
	tg := target{addr: t, sa: sa, Req: newUpgradeRequest(spec)}
	if o := opts.TLS; o != nil {
		name := o.ServerName
		if name == "" {
			name = hostOnly(spec.host)
		}
		cfg, err := c.tlsConfig(o, name)
		if err != nil {
			return target{}, fmt.Errorf("client: targets[%d] %q: %w", i, t, err)
		}
		tg.tls = cfg
	}
	return tg, nil
}

// Conns returns the number of open WebSocket connections.
func (c *Client) Conns() int { return int(c.conns.Load()) }

// Close closes every connection (sending a close frame, code 1000, where
// the socket takes it), stops the event loops and waits for them to exit.
// A phase running meanwhile ends with Stopped "closed" and ErrClosed.
// Close is idempotent and always returns nil.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		for _, l := range c.loops {
			l.post(command{kind: cmdClose})
		}
		for _, l := range c.loops {
			<-l.done
		}
		forgetClient(c) // e.g. a broadcast phase cut short before its close step
	})
	return nil
}

// Connect opens p.Connections connections, at most p.Concurrency
// handshakes at a time, spread evenly over the loops (and round-robin over
// Options.Targets and Options.SourceAddrs). It may be called again: the
// connections accumulate.
//
// Progress counts connections finished (opened or given up). If ctx is
// canceled the handshakes in flight are abandoned (neither Success nor
// Failed), and the partial result is returned with ctx.Err(); Stopped says
// why. Errors counts every failed attempt by reason, retried or not, so its
// sum is Failed + Retried (plus, in Failed, connections that opened and
// were closed by the server before the phase ended).
func (c *Client) Connect(ctx context.Context, p ConnectParams, pr *Progress) (ConnectResult, error) {
	return RunAs[ConnectResult](c, ctx, &p, pr)
}

// Share is part j of n split into m nearly equal parts.
func Share(n, m, j int) int {
	s := n / m
	if j < n%m {
		s++
	}
	return s
}

// stopErr is the error a phase returns for its stop reason.
func stopErr(ctx context.Context, why StopReason) error {
	switch why {
	case StopCanceled:
		return ctx.Err()
	case StopClosed:
		return ErrClosed
	}
	return nil
}

// collect waits for the posted loops' results; on ctx cancellation or the
// deadline it stops the phase and keeps collecting (loops answer a stop at
// once). why is the stop reason, "" if the phase ran to its end.
func (c *Client) collect(ctx context.Context, deadline time.Duration, posted []*Loop) (results []phaseResult, why StopReason) {
	phase := c.phase
	var timeout <-chan time.Time
	if deadline > 0 {
		t := time.NewTimer(deadline)
		defer t.Stop()
		timeout = t.C
	}
	done := ctx.Done()
	stop := func(reason StopReason) {
		if why == "" {
			why = reason
		}
		for _, l := range posted {
			l.post(command{kind: cmdStop, phase: phase})
		}
	}
	for _, l := range posted {
		for got := false; !got; {
			select {
			case r := <-l.results:
				if r.phase == phase {
					results = append(results, r)
					got = true
				}
			case <-l.done:
				select {
				case r := <-l.results:
					if r.phase == phase {
						results = append(results, r)
					}
				default:
				}
				got = true
				if why == "" {
					why = StopClosed
				}
			case <-done:
				done = nil
				stop(StopCanceled)
			case <-timeout:
				timeout = nil
				stop(StopDeadline)
			}
		}
	}
	if why == "" && c.closed.Load() {
		// Close raced with the phase: it stopped the loops (or they
		// refused the phase) before the phase could end by itself.
		cut := len(results) < len(posted) || len(posted) == 0
		for _, r := range results {
			cut = cut || r.stopped
		}
		if cut {
			why = StopClosed
		}
	}
	return results, why
}

// Distribute splits n slots over parts (loops or shards) in proportion to
// their open connections, never giving a part more than it has.
func Distribute(n int, open []int) []int {
	total := 0
	for _, o := range open {
		total += o
	}
	slots := make([]int, len(open))
	if total == 0 {
		return slots
	}
	left := n
	for i, o := range open {
		slots[i] = min(o, n*o/total)
		left -= slots[i]
	}
	for left > 0 {
		moved := false
		for i := range slots {
			if left > 0 && slots[i] < open[i] {
				slots[i]++
				left--
				moved = true
			}
		}
		if !moved {
			break
		}
	}
	return slots
}

// SplitInt64 divides n into parts proportional to weights (equal when all
// are 0).
func SplitInt64(n int64, weights []int) []int64 {
	out := make([]int64, len(weights))
	if len(out) == 0 {
		return out
	}
	var total int64
	for _, w := range weights {
		total += int64(w)
	}
	if total == 0 {
		for i := range out {
			out[i] = n / int64(len(out))
			if int64(i) < n%int64(len(out)) {
				out[i]++
			}
		}
		return out
	}
	var given int64
	for i, w := range weights {
		out[i] = n * int64(w) / total
		given += out[i]
	}
	for i := 0; given < n; i = (i + 1) % len(out) {
		if weights[i] > 0 {
			out[i]++
			given++
		}
	}
	return out
}
