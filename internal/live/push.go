package live

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FinalTimeout bounds the last push, made when the run ends.
const FinalTimeout = 3 * time.Second

// Target is where and how to push.
type Target struct {
	// URL is the receiver's endpoint: a Prometheus remote-write URL
	// (…/api/v1/write), or an OTLP/HTTP metrics URL (…/v1/metrics).
	URL string
	// OTLP chooses OTLP over HTTP (protobuf); false: Prometheus remote
	// write v1 (snappy protobuf).
	OTLP bool
	// Headers are added to every request (e.g. Authorization).
	Headers map[string]string
	// Interval between pushes (plan.DefaultMetricsInterval unless the
	// plan or --metrics-interval says), > 0.
	Interval time.Duration
}

// ParseTarget reads --metrics-push URL: a URL whose path ends in
// /v1/metrics is OTLP, any other Prometheus remote write.
func ParseTarget(raw string) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return Target{}, fmt.Errorf("metrics push %q: want an http:// or https:// URL", raw)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return Target{}, fmt.Errorf("metrics push %q: port %s: want 1 to 65535", raw, p)
		}
	}
	return Target{URL: raw, OTLP: strings.HasSuffix(u.Path, "/v1/metrics")}, nil
}

// sender sends one batch of samples taken at one moment.
type sender interface {
	send(ctx context.Context, samples []Sample, at time.Time) error
}

type batch struct {
	samples []Sample
	at      time.Time
}

// Pusher pushes the hub's samples every interval, off the event loops: a
// batch taken while the previous one is still being sent (a slow or hung
// receiver) is dropped, as is a batch the receiver refused, and their
// samples are counted (wsplan_metrics_dropped_total). The run never waits
// for a receiver but at its end, for at most FinalTimeout.
type Pusher struct {
	h        *Hub
	s        sender
	interval time.Duration
	queue    chan batch
	stop     chan struct{}
	wg       sync.WaitGroup
	sent     chan struct{} // closed when the worker is done
	mu       sync.Mutex
	err      error // the last failure
}

// StartPush starts pushing to t.
func StartPush(h *Hub, t Target) (*Pusher, error) {
	if t.Interval <= 0 {
		return nil, fmt.Errorf("push interval %s: want > 0", t.Interval)
	}
	client := &http.Client{Timeout: t.Interval, Transport: headerTransport{headers: t.Headers, rt: http.DefaultTransport}}
	var s sender
	var err error
	if t.OTLP {
		s, err = newOTLP(t, client)
	} else {
		s, err = newRemoteWrite(t, client)
	}
	if err != nil {
		return nil, err
	}
	return startPusher(h, s, t.Interval), nil
}

func startPusher(h *Hub, s sender, interval time.Duration) *Pusher {
	p := &Pusher{h: h, s: s, interval: interval, queue: make(chan batch, 1), stop: make(chan struct{}), sent: make(chan struct{})}
	p.wg.Add(1)
	go p.tick()
	go p.work()
	return p
}

func (p *Pusher) tick() {
	defer p.wg.Done()
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			p.enqueue(batch{p.h.Samples(), now})
		}
	}
}

// enqueue queues b, or drops it (counted) while a batch is waiting.
func (p *Pusher) enqueue(b batch) {
	select {
	case p.queue <- b:
	default:
		p.h.AddDropped(count(b.samples))
	}
}

func (p *Pusher) work() {
	defer close(p.sent)
	for b := range p.queue {
		ctx, cancel := context.WithTimeout(context.Background(), p.interval)
		err := p.s.send(ctx, b.samples, b.at)
		cancel()
		if err != nil {
			p.h.AddDropped(count(b.samples))
			p.mu.Lock()
			p.err = err
			p.mu.Unlock()
		}
	}
}

// Close pushes the final samples (replacing a batch still queued, whose
// samples count as dropped) and waits up to FinalTimeout for the pushes
// to end; it returns the last failure, if any.
func (p *Pusher) Close() error {
	close(p.stop)
	p.wg.Wait()
	select {
	case old := <-p.queue:
		p.h.AddDropped(count(old.samples))
	default:
	}
	p.enqueue(batch{p.h.Samples(), time.Now()})
	close(p.queue)
	select {
	case <-p.sent:
	case <-time.After(FinalTimeout):
		// The worker ends with its request's timeout; nothing waits for it.
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// count is how many samples a batch holds as a receiver stores them: a
// histogram is its classic buckets, +Inf, sum and count.
func count(samples []Sample) int {
	n := 0
	for _, s := range samples {
		if s.Def.Type == Histogram {
			n += len(ClassicBuckets(s.Hist)) + 3
		} else {
			n++
		}
	}
	return n
}

// headerTransport adds the target's headers to every request.
type headerTransport struct {
	headers map[string]string
	rt      http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.rt.RoundTrip(r)
}
