package live

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/wsplan/wsplan/internal/client"
)

// otlp pushes with OpenTelemetry's OTLP/HTTP metrics exporter: counters as
// cumulative monotonic sums, gauges as gauges, latencies as exponential
// histograms (scale client.NativeSchema: the native buckets as they are).
type otlp struct {
	exp   *otlpmetrichttp.Exporter
	start time.Time
	res   *resource.Resource
}

func newOTLP(t Target, c *http.Client) (*otlp, error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, err
	}
	opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(u.String()), otlpmetrichttp.WithHTTPClient(c),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false})}
	if len(t.Headers) > 0 {
		opts = append(opts, otlpmetrichttp.WithHeaders(t.Headers))
	}
	exp, err := otlpmetrichttp.New(context.Background(), opts...)
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(attribute.String("service.name", "wsplan"))
	return &otlp{exp: exp, start: time.Now(), res: res}, nil
}

func (o *otlp) send(ctx context.Context, samples []Sample, at time.Time) error {
	return o.exp.Export(ctx, o.resourceMetrics(samples, at))
}

// resourceMetrics renders samples as OpenTelemetry metric data.
func (o *otlp) resourceMetrics(samples []Sample, at time.Time) *metricdata.ResourceMetrics {
	byName := map[string]*metricdata.Metrics{}
	var order []string
	for _, s := range samples {
		m, ok := byName[s.Def.Name]
		if !ok {
			m = &metricdata.Metrics{Name: s.Def.Name, Description: s.Def.Help, Unit: unitOf(s.Def.Name)}
			byName[s.Def.Name] = m
			order = append(order, s.Def.Name)
		}
		attrs := attributesOf(s.Labels)
		switch s.Def.Type {
		case Counter:
			sum, _ := m.Data.(metricdata.Sum[float64])
			sum.Temporality, sum.IsMonotonic = metricdata.CumulativeTemporality, true
			sum.DataPoints = append(sum.DataPoints, metricdata.DataPoint[float64]{Attributes: attrs, StartTime: o.start, Time: at, Value: s.Value})
			m.Data = sum
		case Gauge:
			g, _ := m.Data.(metricdata.Gauge[float64])
			g.DataPoints = append(g.DataPoints, metricdata.DataPoint[float64]{Attributes: attrs, Time: at, Value: s.Value})
			m.Data = g
		case Histogram:
			h, _ := m.Data.(metricdata.ExponentialHistogram[float64])
			h.Temporality = metricdata.CumulativeTemporality
			h.DataPoints = append(h.DataPoints, expPoint(s.Hist, attrs, o.start, at))
			m.Data = h
		}
	}
	sm := metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: "github.com/wsplan/wsplan"}}
	for _, n := range order {
		sm.Metrics = append(sm.Metrics, *byName[n])
	}
	return &metricdata.ResourceMetrics{Resource: o.res, ScopeMetrics: []metricdata.ScopeMetrics{sm}}
}

// expPoint is h as an exponential histogram point: OpenTelemetry's bucket
// j covers (base^j, base^(j+1)], Prometheus' i (base^(i-1), base^i].
func expPoint(h client.NativeHist, attrs attribute.Set, start, at time.Time) metricdata.ExponentialHistogramDataPoint[float64] {
	p := metricdata.ExponentialHistogramDataPoint[float64]{Attributes: attrs, StartTime: start, Time: at,
		Count: h.Count, Sum: h.Sum, Scale: client.NativeSchema}
	idx := h.Indexes()
	if len(idx) > 0 {
		lo, hi := idx[0], idx[len(idx)-1]
		p.PositiveBucket.Offset = int32(lo - 1)
		p.PositiveBucket.Counts = make([]uint64, hi-lo+1)
		for _, i := range idx {
			p.PositiveBucket.Counts[i-lo] = h.Buckets[i]
		}
	}
	return p
}

func attributesOf(labels [][2]string) attribute.Set {
	kvs := make([]attribute.KeyValue, 0, len(labels))
	for _, l := range labels {
		if l[1] != "" {
			kvs = append(kvs, attribute.String(l[0], l[1]))
		}
	}
	return attribute.NewSet(kvs...)
}

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
