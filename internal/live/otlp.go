package live

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/wsplan/wsplan/internal/client"
)

// otlp pushes OTLP/HTTP metrics (protobuf): counters as cumulative
// monotonic sums, gauges as gauges, latencies as exponential histograms
// (scale client.NativeSchema: the native buckets as they are), under one
// resource (service.name=wsplan) and one scope. It builds the OTLP
// messages itself with go.opentelemetry.io/proto/otlp's types and posts
// them (otlpsend.go): OpenTelemetry's SDK and exporter would add a
// hundred packages, gRPC among them, for what is a few messages.
type otlp struct {
	url     string
	headers map[string]string
	c       *http.Client
	// start is the counters' and histograms' start time: when the pusher
	// was made, before any phase began (gauges have none).
	start time.Time
	res   *resourcepb.Resource
	scope *commonpb.InstrumentationScope
}

// newOTLP pushes to t.URL as given, its path included (the OTLP/HTTP
// spec's per-signal URL: nothing is appended), with t's headers on c.
func newOTLP(t Target, c *http.Client) (*otlp, error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, err
	}
	return &otlp{
		url: u.String(), headers: t.Headers, c: c, start: time.Now(),
		res:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{stringAttr("service.name", "wsplan")}},
		scope: &commonpb.InstrumentationScope{Name: "github.com/wsplan/wsplan"},
	}, nil
}

// resourceMetrics renders samples as OTLP metrics: one metric per series
// name, in the order the names first appear, a data point per sample.
func (o *otlp) resourceMetrics(samples []Sample, at time.Time) *metricspb.ResourceMetrics {
	start, now := unixNano(o.start), unixNano(at)
	sm := &metricspb.ScopeMetrics{Scope: o.scope}
	byName := map[string]*metricspb.Metric{}
	for _, s := range samples {
		m := byName[s.Def.Name]
		if m == nil {
			m = &metricspb.Metric{Name: s.Def.Name, Description: s.Def.Help, Unit: unitOf(s.Def.Name)}
			byName[s.Def.Name] = m
			sm.Metrics = append(sm.Metrics, m)
		}
		attrs := attributesOf(s.Labels)
		switch s.Def.Type {
		case Counter:
			sum := m.GetSum()
			if sum == nil {
				sum = &metricspb.Sum{AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, IsMonotonic: true}
				m.Data = &metricspb.Metric_Sum{Sum: sum}
			}
			sum.DataPoints = append(sum.DataPoints, numberPoint(attrs, start, now, s.Value))
		case Gauge:
			g := m.GetGauge()
			if g == nil {
				g = &metricspb.Gauge{}
				m.Data = &metricspb.Metric_Gauge{Gauge: g}
			}
			g.DataPoints = append(g.DataPoints, numberPoint(attrs, 0, now, s.Value))
		case Histogram:
			h := m.GetExponentialHistogram()
			if h == nil {
				h = &metricspb.ExponentialHistogram{AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE}
				m.Data = &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: h}
			}
			h.DataPoints = append(h.DataPoints, expPoint(s.Hist, attrs, start, now))
		}
	}
	return &metricspb.ResourceMetrics{Resource: o.res, ScopeMetrics: []*metricspb.ScopeMetrics{sm}}
}

// numberPoint is a double data point; start 0: none (a gauge's).
func numberPoint(attrs []*commonpb.KeyValue, start, now uint64, v float64) *metricspb.NumberDataPoint {
	return &metricspb.NumberDataPoint{Attributes: attrs, StartTimeUnixNano: start, TimeUnixNano: now,
		Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}}
}

// expPoint is h as an exponential histogram point: OpenTelemetry's bucket
// j covers (base^j, base^(j+1)], Prometheus' i (base^(i-1), base^i]. The
// negative buckets are empty (latencies are > 0), as is the zero bucket.
func expPoint(h client.NativeHist, attrs []*commonpb.KeyValue, start, now uint64) *metricspb.ExponentialHistogramDataPoint {
	sum := h.Sum
	p := &metricspb.ExponentialHistogramDataPoint{Attributes: attrs, StartTimeUnixNano: start, TimeUnixNano: now,
		Count: h.Count, Sum: &sum, Scale: client.NativeSchema,
		Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{},
		Negative: &metricspb.ExponentialHistogramDataPoint_Buckets{}}
	idx := h.Indexes()
	if len(idx) > 0 {
		lo, hi := idx[0], idx[len(idx)-1]
		p.Positive.Offset = int32(lo - 1)
		p.Positive.BucketCounts = make([]uint64, hi-lo+1)
		for _, i := range idx {
			p.Positive.BucketCounts[i-lo] = h.Buckets[i]
		}
	}
	return p
}

// attributesOf are the labels with a value, sorted by name (as
// OpenTelemetry's attribute sets are; a sample's label names are unique).
func attributesOf(labels [][2]string) []*commonpb.KeyValue {
	kvs := make([]*commonpb.KeyValue, 0, len(labels))
	for _, l := range labels {
		if l[1] != "" {
			kvs = append(kvs, stringAttr(l[0], l[1]))
		}
	}
	slices.SortStableFunc(kvs, func(a, b *commonpb.KeyValue) int { return cmp.Compare(a.Key, b.Key) })
	return kvs
}

func stringAttr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// unixNano is t in OTLP's unsigned nanoseconds (0 before 1970).
func unixNano(t time.Time) uint64 { return uint64(max(0, t.UnixNano())) }

// unitOf is a series' UCUM unit, from its name.
func unitOf(name string) string {
	switch name {
	case Latency, ClientCPU, ServerCPU:
		return "s"
	case ClientMemory, ServerMemory:
		return "By"
	}
	return "1"
}
