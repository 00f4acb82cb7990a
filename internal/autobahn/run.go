package autobahn

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Target names the server under test.
type Target struct {
	// URL is ws://host:port/path or wss://…; when set, Addr and Path are
	// taken from it.
	URL string
	// Addr is host:port, used when URL is empty.
	Addr string
	// Path is the request path when URL is empty; default "/".
	Path string
	// Header holds extra request headers for the opening handshake.
	Header http.Header
	// Dial opens the TCP connection; default a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLS is used for wss:// URLs; default: ServerName from the URL.
	TLS *tls.Config
}

// Options says which cases to run and how.
type Options struct {
	// Cases are case ids or globs ("1.*", "6.4.*", "2.10"); empty means
	// every implemented case. See Select.
	Cases []string
	// Exclude removes cases matching these ids or globs.
	Exclude []string
	// CaseTimeout bounds one case's wall time, connect and handshake
	// included; 0 = DefaultCaseTimeout, < 0 is an error. Cases end on
	// their own Autobahn timers (1-2 s for most; 10-100 s for 9.x and
	// 60-480 s for 12.x/13.x, which a working server beats by far); this
	// bounds them all. A case that hits it is FAILED.
	CaseTimeout time.Duration
	// Behavior says whether NON-STRICT passes (Lenient) or fails (Strict,
	// the default).
	Behavior Behavior
	// Parallel is how many cases run at once, each on its own connection;
	// 0 = 1 (cases one after another, as Autobahn runs them), < 0 is an
	// error.
	Parallel int
	// Selected, when set, is called once before the first case with the
	// number of cases selected.
	Selected func(n int)
	// Done, when set, is called with each case's result as soon as it has
	// its verdict, from the goroutine that ran it: concurrently when
	// Parallel > 1.
	Done func(r Result)
	// Gone, when set, is asked after a case that lost its connection (it
	// could not open one, or the server dropped TCP without a closing
	// handshake) whether the server itself is gone, its process exited,
	// waiting up to wait for the exit to show (given when the case could
	// not even connect). It returns why ("pid 123 exited"), "" while the
	// server runs. A gone server ends the run: cases not started, and
	// those cut short beside it, are counted NotRun, not FAILED; the case
	// that found it gone (with Parallel 1, the case during which it died)
	// keeps its verdict, with the death in Observed, or is NotRun too when
	// it could not connect. nil = never asked.
	Gone func(wait time.Duration) string
}

// GoneWait is how long Options.Gone may wait for a server that refused a
// connection to show its exit: a process's sockets close a moment before
// its exit can be seen.
const GoneWait = 500 * time.Millisecond

// droppedWait is how long Options.Gone may wait for a server that dropped
// a case's connection to show its exit: a killed process closes its
// sockets before its exit is visible in /proc, so asking at once can miss
// the death (the case is then FAILED for the drop). Short, because a live
// server that fails cases by dropping TCP pays it once per such case.
const droppedWait = 50 * time.Millisecond

// DefaultCaseTimeout is Options.CaseTimeout's default.
const DefaultCaseTimeout = 30 * time.Second

// Result is one case's outcome.
type Result struct {
	ID          string  `json:"id"`
	Description string  `json:"description"`
	Verdict     Verdict `json:"verdict"`
	// Pass says whether Verdict passes under the run's Behavior.
	Pass bool `json:"pass"`
	// Behavior and CloseBehavior are Autobahn's two raw fields
	// (behavior: OK, NON-STRICT, INFORMATIONAL, FAILED; behaviorClose:
	// OK, WRONG CODE, UNCLEAN, FAILED BY CLIENT, FAILED, INFORMATIONAL);
	// Verdict folds them into one.
	Behavior      Verdict `json:"behavior"`
	CloseBehavior string  `json:"close_behavior"`
	// RemoteCloseCode is the code of the server's close frame; 0 when it
	// sent none or one without a code.
	RemoteCloseCode int `json:"remote_close_code,omitempty"`
	// Observed says what the server did; set for every verdict but OK.
	Observed string        `json:"observed,omitempty"`
	Duration time.Duration `json:"duration"` // ns

	lost lostHow // how the case lost its connection, if it did
}

// lostHow says how a case lost its connection.
type lostHow uint8

const (
	keptConn    lostHow = iota
	noConn              // the opening handshake failed (refused, reset, …)
	droppedConn         // the server dropped TCP without a closing handshake
)

// Counts are the number of cases per verdict.
type Counts struct {
	Cases         int `json:"cases"`
	OK            int `json:"ok"`
	NonStrict     int `json:"non_strict"`
	Informational int `json:"informational"`
	Unimplemented int `json:"unimplemented"`
	Failed        int `json:"failed"`
}

// Report is the outcome of a run: counts, and every case in case-id order.
type Report struct {
	Behavior Behavior `json:"behavior"`
	Counts
	// Failing is the number of cases that do not pass under Behavior:
	// Failed, plus NonStrict when Behavior is Strict.
	Failing  int           `json:"failing"`
	Results  []Result      `json:"results"`
	Duration time.Duration `json:"duration"` // ns, wall time of the whole run
	// Interrupted says the caller's context ended the run early; cases
	// that did not finish are left out.
	Interrupted bool `json:"interrupted,omitempty"`
	// NotRun counts the cases selected but not run because the server
	// was gone (Options.Gone); ServerGone says why ("" = it was not).
	NotRun     int    `json:"not_run,omitempty"`
	ServerGone string `json:"server_gone,omitempty"`
}

// Pass reports whether every case passed under the report's Behavior.
func (r Report) Pass() bool { return r.Failing == 0 }

// Failures returns the results that do not pass under the report's
// Behavior, in case-id order: the rows of a "failed cases" table.
func (r Report) Failures() []Result {
	var out []Result
	for _, x := range r.Results {
		if !x.Pass {
			out = append(out, x)
		}
	}
	return out
}

// Run plays the selected cases against the target and returns the report.
// It returns an error only for bad options or target (an unknown case
// pattern, an unparsable URL); a server that cannot be reached fails each
// case with the dial error as the observed behavior. Cancelling ctx stops
// the run: cases not finished are left out of the report, which is then
// marked Interrupted.
func Run(ctx context.Context, t Target, o Options) (Report, error) {
	cases, err := Select(o.Cases, o.Exclude)
	if err != nil {
		return Report{}, err
	}
	ep, err := t.endpoint()
	if err != nil {
		return Report{}, err
	}
	if err := o.withDefaults(); err != nil {
		return Report{}, err
	}
	if o.Selected != nil {
		o.Selected(len(cases))
	}
	start := time.Now()
	results, gone := play(ctx, cases, ep, o)
	rep := Report{Behavior: o.Behavior, Duration: time.Since(start), ServerGone: gone}
	rep.tally(results)
	return rep, nil
}

// withDefaults checks o's bounds and fills in its zero defaults.
func (o *Options) withDefaults() error {
	switch {
	case o.CaseTimeout < 0:
		return fmt.Errorf("case timeout: must be >= 0, got %v", o.CaseTimeout)
	case o.Parallel < 0:
		return fmt.Errorf("parallel: must be >= 0, got %d", o.Parallel)
	case o.CaseTimeout == 0:
		o.CaseTimeout = DefaultCaseTimeout
	}
	switch o.Behavior {
	case "":
		o.Behavior = Strict
	case Strict, Lenient:
	default:
		return fmt.Errorf("behavior %q: must be %q or %q", o.Behavior, Strict, Lenient)
	}
	return nil
}

// play runs the cases, o.Parallel at a time, and returns their results by
// case (nil: not run, or cut short) and why the server was found gone
// ("" = it was not).
func play(ctx context.Context, cases []*Case, ep endpoint, o Options) ([]*Result, string) {
	results := make([]*Result, len(cases))
	runCtx, cut := context.WithCancel(ctx)
	defer cut()
	var gone goneOnce
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(max(o.Parallel, 1), len(cases)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := runCase(runCtx, cases[i], ep, o.CaseTimeout)
				if runCtx.Err() != nil {
					continue // cut short by the caller or a gone server: no verdict
				}
				if !gone.judge(&r, o.Gone, cut) {
					continue
				}
				r.Pass = o.Behavior.Passes(r.Verdict)
				results[i] = &r
				if o.Done != nil {
					o.Done(r)
				}
			}
		}()
	}
feed:
	for i := range cases {
		select {
		case next <- i:
		case <-runCtx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return results, gone.why
}

// tally adds the results to the report's counts and rows; a case with no
// result is not run (the server was gone) or interrupted.
func (rep *Report) tally(results []*Result) {
	for _, r := range results {
		switch {
		case r == nil && rep.ServerGone != "":
			rep.NotRun++
			continue
		case r == nil:
			rep.Interrupted = true
			continue
		}
		rep.Results = append(rep.Results, *r)
		rep.Cases++
		switch r.Verdict {
		case OK:
			rep.OK++
		case NonStrict:
			rep.NonStrict++
		case Informational:
			rep.Informational++
		case Unimplemented:
			rep.Unimplemented++
		default:
			rep.Failed++
		}
		if !r.Pass {
			rep.Failing++
		}
	}
}

// goneOnce decides, once, that the server is gone: cases that lost their
// connection ask Options.Gone, and the first to hear it is gone ends the
// run.
type goneOnce struct {
	mu  sync.Mutex
	why string
}

// judge reports whether r keeps its verdict. A case that lost its
// connection asks gone (when set) whether the server is gone; if it is,
// the run is cut (cut) and r keeps its verdict only if it had a
// connection that the server dropped, the death noted in Observed. A
// case that ends after the server was found gone has no verdict.
func (g *goneOnce) judge(r *Result, gone func(time.Duration) string, cut context.CancelFunc) bool {
	if gone == nil || r.lost == keptConn {
		return true
	}
	wait := droppedWait
	if r.lost == noConn {
		wait = GoneWait
	}
	why := gone(wait)
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.why != "":
		return false // another case found it gone first
	case why == "":
		return true
	}
	g.why = why
	cut()
	if r.lost == noConn {
		return false
	}
	r.Observed += "; the server's process exited during this case (" + why + ")"
	return true
}

// endpoint is a resolved Target.
type endpoint struct {
	addr, host, path string
	tls              *tls.Config
	header           http.Header
	dial             func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (t Target) endpoint() (endpoint, error) {
	ep := endpoint{addr: t.Addr, path: t.Path, header: t.Header, dial: t.Dial}
	if t.URL != "" {
		u, err := url.Parse(t.URL)
		if err != nil {
			return endpoint{}, fmt.Errorf("target url: %w", err)
		}
		port := u.Port()
		switch u.Scheme {
		case "ws":
			if port == "" {
				port = "80"
			}
		case "wss":
			if port == "" {
				port = "443"
			}
			ep.tls = t.TLS
			if ep.tls == nil {
				ep.tls = &tls.Config{}
			}
			if ep.tls.ServerName == "" {
				ep.tls = ep.tls.Clone()
				ep.tls.ServerName = u.Hostname()
			}
		default:
			return endpoint{}, fmt.Errorf("target url %q: scheme must be ws or wss", t.URL)
		}
		ep.addr = net.JoinHostPort(u.Hostname(), port)
		ep.host = u.Host
		ep.path = u.RequestURI()
	}
	if ep.addr == "" {
		return endpoint{}, errors.New("target: neither url nor addr given")
	}
	if ep.path == "" {
		ep.path = "/"
	}
	if ep.host == "" {
		ep.host = ep.addr
	}
	if ep.dial == nil {
		var d net.Dialer
		ep.dial = d.DialContext
	}
	return ep, nil
}

// runCase plays one case on a fresh connection.
func runCase(ctx context.Context, c *Case, ep endpoint, timeout time.Duration) Result {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res := Result{ID: c.ID, Description: c.Description}
	conn, br, pmd, err := ep.open(ctx, c.offers)
	if err != nil {
		res.Verdict, res.Behavior, res.CloseBehavior = Failed, Failed, closeFailed
		res.Observed = err.Error()
		res.Duration = time.Since(start)
		res.lost = noConn
		return res
	}
	deadline, _ := ctx.Deadline()
	s := newSession(c, conn, br, deadline)
	s.timeout = timeout
	if pmd != nil {
		if s.pmd, err = newDeflater(*pmd); err != nil {
			_ = conn.Close() // the deflater error is what matters
			res.Verdict, res.Behavior, res.CloseBehavior = Failed, Failed, closeFailed
			res.Observed = err.Error()
			res.Duration = time.Since(start)
			return res
		}
	}
	s.run(ctx)
	res.Verdict = s.verdict()
	res.Behavior = s.behavior
	res.CloseBehavior = s.closeBehavior
	res.RemoteCloseCode = max(s.remoteCloseCode, 0)
	if res.Verdict != OK {
		res.Observed = s.observed()
	}
	if s.dropped() {
		res.lost = droppedConn
	}
	res.Duration = time.Since(start)
	return res
}

// errHandshake wraps every failure to open the WebSocket connection.
var errHandshake = errors.New("opening handshake failed")

// open dials and performs the opening handshake (RFC 6455 4.1). It offers
// permessage-deflate when offers is not empty and returns what the server
// accepted (nil: no extension); no subprotocol is offered.
func (ep endpoint) open(ctx context.Context, offers []deflateOffer) (net.Conn, *bufio.Reader, *deflateParams, error) {
	conn, err := ep.dial(ctx, "tcp", ep.addr)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: dial %s: %w", errHandshake, ep.addr, err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true) // already Go's default; an error changes nothing here
	}
	if ep.tls != nil {
		tc := tls.Client(conn, ep.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close() // the TLS error is what matters
			return nil, nil, nil, fmt.Errorf("%w: tls: %w", errHandshake, err)
		}
		conn = tc
	}
	fail := func(format string, args ...any) (net.Conn, *bufio.Reader, *deflateParams, error) {
		_ = conn.Close() // the handshake error is what matters
		return nil, nil, nil, fmt.Errorf("%w: %s", errHandshake, fmt.Sprintf(format, args...))
	}
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d) // an error shows up in the I/O below
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:]) // crypto/rand.Read never fails (Go 1.24+)
	key := base64.StdEncoding.EncodeToString(nonce[:])
	var req strings.Builder
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n", ep.path, ep.host)
	fmt.Fprintf(&req, "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nUser-Agent: wsplan-autobahn\r\n", key)
	if len(offers) > 0 {
		fmt.Fprintf(&req, "Sec-WebSocket-Extensions: %s\r\n", offersHeader(offers))
	}
	for k, vs := range ep.header {
		for _, v := range vs {
			fmt.Fprintf(&req, "%s: %s\r\n", k, v)
		}
	}
	req.WriteString("\r\n")
	if _, err := conn.Write([]byte(req.String())); err != nil {
		return fail("write request: %v", err)
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		return fail("read response: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return fail("status %s, want 101", resp.Status)
	}
	if !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
		return fail("Upgrade header %q, want websocket", resp.Header.Get("Upgrade"))
	}
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if got, want := resp.Header.Get("Sec-WebSocket-Accept"), base64.StdEncoding.EncodeToString(h[:]); got != want {
		return fail("Sec-WebSocket-Accept %q, want %q", got, want)
	}
	var pmd *deflateParams
	if ext := strings.Join(resp.Header.Values("Sec-WebSocket-Extensions"), ", "); ext != "" {
		if len(offers) == 0 {
			return fail("server accepted extension %q that was not offered", ext)
		}
		p, err := parseDeflateResponse(ext)
		if err != nil {
			return fail("%v", err)
		}
		pmd = &p
	}
	_ = conn.SetDeadline(time.Time{}) // reads run until the case ends; writes set their own deadline
	return conn, br, pmd, nil
}
