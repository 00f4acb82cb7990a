package live

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/wsplan/wsplan/internal/client"
)

// ClassicStep is the classic buckets' spacing in native buckets: every
// 4th bound of schema 3, a factor of √2; ClassicMin and ClassicMax bound
// them (2^-17 s ≈ 7.6µs to 2^7 s = 128 s). Each classic bucket is a sum
// of native ones, so both views of a histogram agree exactly.
const (
	ClassicStep = 4
	ClassicMin  = -17 * 8
	ClassicMax  = 7 * 8
)

// collector renders the hub's samples for Prometheus.
type collector struct {
	h     *Hub
	descs map[string]*prometheus.Desc
}

func newCollector(h *Hub) *collector {
	c := &collector{h: h, descs: map[string]*prometheus.Desc{}}
	for _, d := range Defs {
		c.descs[d.Name] = prometheus.NewDesc(d.Name, d.Help, Labels, nil)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.h.Samples() {
		desc := c.descs[s.Def.Name]
		values := labelValues(s.Labels)
		switch s.Def.Type {
		case Counter:
			ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, s.Value, values...)
		case Gauge:
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, s.Value, values...)
		case Histogram:
			ch <- &histMetric{desc: desc, labels: prometheus.MakeLabelPairs(desc, values), h: s.Hist}
		}
	}
}

// labelValues are pairs' values in Labels' order ("" for absent ones).
func labelValues(pairs [][2]string) []string {
	out := make([]string, len(Labels))
	for _, p := range pairs {
		for i, l := range Labels {
			if l == p[0] {
				out[i] = p[1]
			}
		}
	}
	return out
}

// histMetric is a histogram with both classic buckets (ClassicStep) and
// native ones (schema client.NativeSchema): scrapers that negotiate
// protobuf get the native histogram, the text format the classic one.
type histMetric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	h      client.NativeHist
}

func (m *histMetric) Desc() *prometheus.Desc { return m.desc }

func (m *histMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	h := &dto.Histogram{
		SampleCount:   proto.Uint64(m.h.Count),
		SampleSum:     proto.Float64(m.h.Sum),
		Schema:        proto.Int32(client.NativeSchema),
		ZeroThreshold: proto.Float64(0),
		ZeroCount:     proto.Uint64(0),
	}
	for _, b := range ClassicBuckets(m.h) {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(b.Upper), CumulativeCount: proto.Uint64(b.Count)})
	}
	spans, deltas := nativeSpans(m.h)
	h.PositiveSpan, h.PositiveDelta = spans, deltas
	if len(spans) == 0 {
		// An empty native histogram still says it is one.
		h.PositiveSpan = []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(0)}}
	}
	out.Histogram = h
	return nil
}

// ClassicBucket is one classic bucket: the count of values <= Upper.
type ClassicBucket struct {
	Upper float64
	Count uint64
}

// ClassicBuckets are h's cumulative classic buckets (ClassicMin to
// ClassicMax every ClassicStep native buckets; +Inf is the count).
func ClassicBuckets(h client.NativeHist) []ClassicBucket {
	idx := h.Indexes()
	var out []ClassicBucket
	var cum uint64
	j := 0
	for b := ClassicMin; b <= ClassicMax; b += ClassicStep {
		for j < len(idx) && idx[j] <= b {
			cum += h.Buckets[idx[j]]
			j++
		}
		out = append(out, ClassicBucket{Upper: client.NativeUpper(b), Count: cum})
	}
	return out
}

// nativeSpans encodes h's buckets as Prometheus spans and deltas.
func nativeSpans(h client.NativeHist) ([]*dto.BucketSpan, []int64) {
	var spans []*dto.BucketSpan
	var deltas []int64
	prevIdx, prevCount := 0, int64(0)
	for k, i := range h.Indexes() {
		n := int64(h.Buckets[i])
		switch {
		case k == 0:
			spans = append(spans, &dto.BucketSpan{Offset: proto.Int32(int32(i)), Length: proto.Uint32(1)})
		case i == prevIdx+1:
			*spans[len(spans)-1].Length++
		default:
			spans = append(spans, &dto.BucketSpan{Offset: proto.Int32(int32(i - prevIdx - 1)), Length: proto.Uint32(1)})
		}
		deltas = append(deltas, n-prevCount)
		prevIdx, prevCount = i, n
	}
	return spans, deltas
}

// Registry is a Prometheus registry of the hub's series.
func (h *Hub) Registry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(newCollector(h))
	return r
}

// Server is --metrics-listen: /metrics over HTTP.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// Listen serves the hub's series at http://addr/metrics until Close.
func Listen(h *Hub, addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(h.Registry(), promhttp.HandlerOpts{EnableOpenMetrics: true}))
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln, done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address it listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops serving (a scrape in progress gets a second to finish).
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
