package shard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/launch"
)

// Spec describes the shard processes of one server's run.
type Spec struct {
	Exe     string         // the wsplan binary; shards run `Exe shard ...`
	N       int            // number of shards, >= 1
	Client  client.Options // what every shard's client gets, but SourceAddrs
	Sources [][]string     // source addresses of shard i (may be empty)
	CPUs    []int          // CPUs the shards are pinned to
	LogDir  string         // shard i logs to LogDir/<Name>-shard-i.log; "" = memory only
	Name    string         // server name, for log files and messages
	Ready   time.Duration  // how long a shard may take to start; default 10s
	Grace   time.Duration  // SIGTERM → SIGKILL on Close; default 3s
}

// Group is a set of shard processes driven as one client; it implements the
// engine's Driver.
type Group struct {
	shards []*proc
	grace  time.Duration
}

type proc struct {
	i     int
	p     *launch.Process
	in    *os.File
	out   *bufio.Scanner
	conns int
	mu    sync.Mutex // serialises writes to in
}

// Start starts the shards and waits until each has opened its client.
func Start(s Spec) (*Group, error) {
	if s.N < 1 {
		return nil, fmt.Errorf("shards: need at least 1, got %d", s.N)
	}
	if s.Ready == 0 {
		s.Ready = 10 * time.Second
	}
	if s.Grace == 0 {
		s.Grace = 3 * time.Second
	}
	g := &Group{grace: s.Grace}
	for i := range s.N {
		p, err := startOne(s, i)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.shards = append(g.shards, p)
	}
	// Wait for every ready line.
	errs := make(chan error, len(g.shards))
	for _, p := range g.shards {
		go func() {
			r, err := p.read(s.Ready)
			if err == nil && !r.Ready {
				err = fmt.Errorf("unexpected first line %+v", r)
			}
			errs <- err
		}()
	}
	var all []error
	for range g.shards {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	if len(all) > 0 {
		g.Close()
		return nil, errors.Join(all...)
	}
	return g, nil
}

func startOne(s Spec, i int) (*proc, error) {
	argv := []string{s.Exe, "shard",
		"--targets", strings.Join(s.Client.Targets, ","),
		"--path", s.Client.Path,
		"--loops", strconv.Itoa(max(1, s.Client.Loops)),
		"--nodelay=" + strconv.FormatBool(s.Client.NoDelay),
	}
	if i < len(s.Sources) && len(s.Sources[i]) > 0 {
		argv = append(argv, "--source", strings.Join(s.Sources[i], ","))
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil, err
	}
	log := ""
	if s.LogDir != "" {
		log = fmt.Sprintf("%s/%s-shard-%d.log", s.LogDir, s.Name, i)
	}
	lp, err := launch.Start(launch.Spec{Argv: argv, LogPath: log, CPUs: s.CPUs, Stdin: stdinR, Stdout: stdoutW})
	// The child has its own copies now.
	stdinR.Close()
	stdoutW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		return nil, fmt.Errorf("shard %d: %w", i, err)
	}
	sc := bufio.NewScanner(stdoutR)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &proc{i: i, p: lp, in: stdinW, out: sc}, nil
}

// Pids returns the shard processes' pids, for CPU and memory sampling.
func (g *Group) Pids() []int {
	out := make([]int, len(g.shards))
	for i, p := range g.shards {
		out[i] = p.p.Pid
	}
	return out
}

// Conns returns the open connections over all shards.
func (g *Group) Conns() int {
	n := 0
	for _, p := range g.shards {
		n += p.conns
	}
	return n
}

// Close stops every shard: a "close" request, then SIGTERM/SIGKILL of its
// process group if it does not exit.
func (g *Group) Close() error {
	var errs []error
	for _, p := range g.shards {
		// A shard that already died cannot read: its exit is what matters.
		_ = p.send(Request{Op: "close"})
		p.in.Close()
	}
	for _, p := range g.shards {
		select {
		case <-p.p.Done():
		case <-time.After(g.grace):
		}
		if err := p.p.Stop(g.grace); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", p.i, err))
		}
	}
	return errors.Join(errs...)
}

func (p *proc) send(r Request) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err = p.in.Write(append(b, '\n'))
	return err
}

// read returns the next reply, or the shard's death with its reason.
func (p *proc) read(timeout time.Duration) (Reply, error) {
	type line struct {
		r   Reply
		err error
	}
	ch := make(chan line, 1)
	go func() {
		if !p.out.Scan() {
			ch <- line{err: p.died()}
			return
		}
		var r Reply
		if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
			ch <- line{err: fmt.Errorf("shard %d: bad reply %q: %w", p.i, p.out.Text(), err)}
			return
		}
		ch <- line{r: r}
	}()
	if timeout <= 0 {
		l := <-ch
		return l.r, l.err
	}
	select {
	case l := <-ch:
		return l.r, l.err
	case <-time.After(timeout):
		return Reply{}, fmt.Errorf("shard %d (pid %d) did not answer within %s", p.i, p.p.Pid, timeout)
	}
}

// died describes a shard whose output ended.
func (p *proc) died() error {
	select {
	case <-p.p.Done():
	case <-time.After(2 * time.Second):
	}
	tail := strings.TrimSpace(p.p.Tail(600))
	if tail != "" {
		tail = ": " + strings.ReplaceAll(tail, "\n", " | ")
	}
	return fmt.Errorf("shard %d (pid %d) %s%s", p.i, p.p.Pid, p.p.ExitReason(), tail)
}

// phase sends one request per shard and collects the replies, forwarding
// progress to pr and a cancel to every shard when ctx ends. A shard that
// dies fails the phase: the others are cancelled and their replies drained.
func (g *Group) phase(ctx context.Context, reqs []Request, pr *client.Progress) ([]Reply, error) {
	replies := make([]Reply, len(g.shards))
	done := make([]int64, len(g.shards))
	var mu sync.Mutex
	type outcome struct {
		i   int
		err error
	}
	results := make(chan outcome, len(g.shards))
	for i, p := range g.shards {
		if reqs[i].Op == "" { // nothing for this shard to do
			results <- outcome{i, nil}
			continue
		}
		if err := p.send(reqs[i]); err != nil {
			results <- outcome{i, p.died()}
			continue
		}
		go func() {
			for {
				r, err := p.read(0)
				if err != nil {
					results <- outcome{i, err}
					return
				}
				if r.Op == "progress" {
					mu.Lock()
					done[i] = r.Done
					var sum int64
					for _, d := range done {
						sum += d
					}
					mu.Unlock()
					if pr != nil {
						pr.Done.Store(sum)
					}
					continue
				}
				replies[i] = r
				p.conns = r.Conns
				results <- outcome{i, nil}
				return
			}
		}()
	}
	var first error
	cancelled := false
	cancelAll := func() {
		if cancelled {
			return
		}
		cancelled = true
		for _, p := range g.shards {
			// A dead shard cannot be cancelled; its error is reported.
			_ = p.send(Request{Op: "cancel"})
		}
	}
	for left := len(g.shards); left > 0; {
		select {
		case o := <-results:
			left--
			if o.err != nil {
				g.shards[o.i].conns = 0
				if first == nil {
					first = o.err
				}
				cancelAll()
			}
		case <-ctx.Done():
			cancelAll()
			ctx = context.Background() // keep draining
		}
	}
	return replies, first
}

// split divides n into parts proportional to weights (equal when all are 0).
func split(n int64, weights []int) []int64 {
	out := make([]int64, len(weights))
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

func equalWeights(n int) []int {
	w := make([]int, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

// Connect opens p.Connections over the shards, split evenly.
func (g *Group) Connect(ctx context.Context, p client.ConnectParams, pr *client.Progress) (client.ConnectResult, error) {
	if pr != nil {
		pr.Total.Store(int64(p.Connections))
	}
	n := split(int64(p.Connections), equalWeights(len(g.shards)))
	c := split(int64(p.Concurrency), equalWeights(len(g.shards)))
	reqs := make([]Request, len(g.shards))
	for i := range reqs {
		q := p
		q.Connections, q.Concurrency = int(n[i]), max(1, int(c[i]))
		if q.Connections > 0 {
			reqs[i] = Request{Op: "connect", Connect: &q}
		}
	}
	replies, err := g.phase(ctx, reqs, pr)
	out := client.ConnectResult{Latency: client.NewHistogram(), Errors: map[string]int64{}}
	var stops []string
	for _, r := range replies {
		if r.Connect == nil {
			continue
		}
		x := r.Connect
		out.Total += x.Total
		out.Success += x.Success
		out.Failed += x.Failed
		out.Retried += x.Retried
		out.Used = max(out.Used, x.Used)
		stops = append(stops, x.Stopped)
		absorb(out.Latency, out.Errors, x.Latency, x.Errors, r.Err, &err)
	}
	out.Stopped = mergeStopped(stops)
	return out, err
}

// absorb merges what every phase's results share: a shard's latency
// histogram, its failure reasons, and its reply's error (the first error
// wins).
func absorb(lat *hdrhistogram.Histogram, errs map[string]int64, h Histogram, shardErrs map[string]int64, replyErr string, err *error) {
	for k, v := range shardErrs {
		errs[k] += v
	}
	if hh, herr := h.decode(); herr == nil {
		lat.Merge(hh)
	} else if *err == nil {
		*err = herr
	}
	if replyErr != "" && *err == nil {
		*err = errors.New(replyErr)
	}
}

// Echo runs the closed loop over the shards: total, concurrency and warmup
// split in proportion to each shard's open connections.
func (g *Group) Echo(ctx context.Context, p client.EchoParams, pr *client.Progress) (client.EchoResult, error) {
	if pr != nil {
		pr.Total.Store(p.Total)
	}
	w := make([]int, len(g.shards))
	for i, s := range g.shards {
		w[i] = s.conns
	}
	// In-flight messages follow the open connections; totals follow the
	// in-flight messages, so every shard finishes at about the same time.
	conc := split(int64(p.Concurrency), w)
	cw := make([]int, len(w))
	for i := range cw {
		cw[i] = min(int(conc[i]), w[i])
	}
	tot := split(p.Total, cw)
	warm := split(p.Warmup, cw)
	reqs := make([]Request, len(g.shards))
	for i := range reqs {
		q := p
		q.Total, q.Concurrency, q.Warmup = tot[i], cw[i], warm[i]
		if q.Total > 0 && q.Concurrency > 0 {
			reqs[i] = Request{Op: "echo", Echo: &q}
		}
	}
	replies, err := g.phase(ctx, reqs, pr)
	out := client.EchoResult{Latency: client.NewHistogram(), Errors: map[string]int64{}}
	var stops []string
	for _, r := range replies {
		if r.Echo == nil {
			continue
		}
		x := r.Echo
		out.Total += x.Total
		out.Success += x.Success
		out.Failed += x.Failed
		out.Used = max(out.Used, x.Used)
		stops = append(stops, x.Stopped)
		absorb(out.Latency, out.Errors, x.Latency, x.Errors, r.Err, &err)
	}
	out.Stopped = mergeStopped(stops)
	return out, err
}

// Rate runs the open loop over the shards: connections split in proportion
// to each shard's open connections, and every connection of every shard
// given its own place in one shared timetable (PhaseFirst/PhaseTotal), so
// the sends of all shards spread over the period together. Counts are
// summed, each second's histograms merged exactly, and the overall latency
// rebuilt from them.
func (g *Group) Rate(ctx context.Context, p client.RateParams, pr *client.Progress) (client.RateResult, error) {
	w := make([]int, len(g.shards))
	open := 0
	for i, s := range g.shards {
		w[i] = s.conns
		open += s.conns
	}
	n := p.Connections
	if n == 0 {
		n = open
	}
	if n > open {
		return client.RateResult{}, fmt.Errorf("shards: rate: connections %d exceeds the %d open connections: open more in a connect phase or lower connections", n, open)
	}
	conns := split(int64(n), w)
	if pr != nil {
		pacer := client.Pacer{Rate: p.Rate, Ramp: p.Ramp, Duration: p.Duration}
		var want int64
		for j := range n {
			want += pacer.Total(float64(j) / float64(n))
		}
		pr.Total.Store(want)
	}
	budget := p.MaxInflightBytes
	if budget == 0 {
		budget = client.DefaultMaxInflightBytes
	}
	reqs := make([]Request, len(g.shards))
	first := 0
	for i := range reqs {
		q := p
		q.Connections = min(int(conns[i]), w[i])
		q.PhaseFirst, q.PhaseTotal = first, n
		// The in-flight bound is the phase's: each shard gets its share.
		q.MaxInflightBytes = max(int64(p.Payload), budget*int64(q.Connections)/int64(max(n, 1)))
		first += q.Connections
		if q.Connections > 0 {
			reqs[i] = Request{Op: "rate", Rate: &q}
		}
	}
	replies, err := g.phase(ctx, reqs, pr)
	out := client.RateResult{Latency: client.NewHistogram(), Errors: map[string]int64{}}
	var stops []string
	for _, r := range replies {
		if r.Rate == nil {
			if r.Err != "" && err == nil {
				err = errors.New(r.Err)
			}
			continue
		}
		x := r.Rate
		out.Conns += x.Conns
		out.Scheduled += x.Scheduled
		out.Sent += x.Sent
		out.Recv += x.Recv
		out.Failed += x.Failed
		out.Late += x.Late
		out.Unsent += x.Unsent
		out.BytesSent += x.BytesSent
		out.BytesRecv += x.BytesRecv
		out.Used = max(out.Used, x.Used)
		out.Drain = max(out.Drain, x.Drain)
		for k, v := range x.Errors {
			out.Errors[k] += v
		}
		stops = append(stops, x.Stopped)
		secs, serr := x.seconds()
		if serr != nil {
			if err == nil {
				err = serr
			}
			continue
		}
		out.Seconds = mergeSeconds(out.Seconds, secs)
		if r.Err != "" && err == nil {
			err = errors.New(r.Err)
		}
	}
	for _, s := range out.Seconds {
		if s.Latency != nil {
			s.Latency.MergeInto(out.Latency)
		}
	}
	out.Stopped = mergeStopped(stops)
	return out, err
}

// mergeStopped is the phase's stop reason from its shards': the first
// other than StopNoConnections, which holds only when every shard lost all
// of its connections.
func mergeStopped(stops []string) string {
	all := len(stops) > 0
	for _, s := range stops {
		if s != "" && s != client.StopNoConnections {
			return s
		}
		all = all && s == client.StopNoConnections
	}
	if all {
		return client.StopNoConnections
	}
	return ""
}

// mergeSeconds adds timeline b into a, second by second, and returns a.
func mergeSeconds(a, b []client.RateSecond) []client.RateSecond {
	for len(a) < len(b) {
		a = append(a, client.RateSecond{})
	}
	for i, s := range b {
		d := &a[i]
		d.Sent += s.Sent
		d.Recv += s.Recv
		d.Late += s.Late
		switch {
		case s.Latency == nil:
		case d.Latency == nil:
			d.Latency = s.Latency
		default:
			d.Latency.Merge(s.Latency)
		}
	}
	return a
}

// Hold holds every shard's connections; with pings, each shard spreads its
// own connections' pings over the interval. Counts are summed.
func (g *Group) Hold(ctx context.Context, p client.HoldParams, pr *client.Progress) (client.HoldResult, error) {
	reqs := make([]Request, len(g.shards))
	for i := range reqs {
		q := p
		reqs[i] = Request{Op: "hold", Hold: &q}
	}
	if pr != nil {
		// Without pings each shard counts elapsed seconds.
		pr.Total.Store(int64(p.Duration/time.Second) * int64(len(g.shards)))
		if p.Ping > 0 {
			pr.Total.Store(int64(float64(g.Conns()) * (p.Duration.Seconds() / p.Ping.Seconds())))
		}
	}
	replies, err := g.phase(ctx, reqs, pr)
	out := client.HoldResult{Errors: map[string]int64{}}
	for _, r := range replies {
		if r.Hold == nil {
			if r.Err != "" && err == nil {
				err = errors.New(r.Err)
			}
			continue
		}
		x := r.Hold
		out.Conns += x.Conns
		out.Alive += x.Alive
		out.Pings += x.Pings
		out.Pongs += x.Pongs
		out.Used = max(out.Used, x.Used)
		for k, v := range x.Errors {
			out.Errors[k] += v
		}
		if out.Stopped == "" {
			out.Stopped = x.Stopped
		}
		if r.Err != "" && err == nil {
			err = errors.New(r.Err)
		}
	}
	return out, err
}
