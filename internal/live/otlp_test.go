package live

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/wsplan/wsplan/internal/client"
)

// exportedMetrics decodes an ExportMetricsServiceRequest as a receiver
// does: every field is 1, a ResourceMetrics (the request has no other).
func exportedMetrics(b []byte) ([]*metricspb.ResourceMetrics, error) {
	var out []*metricspb.ResourceMetrics
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 1 || typ != protowire.BytesType {
			return fmt.Errorf("field %d of wire type %d in an export request", num, typ)
		}
		rm := &metricspb.ResourceMetrics{}
		if err := proto.Unmarshal(v, rm); err != nil {
			return err
		}
		out = append(out, rm)
		return nil
	})
	return out, err
}

// TestOTLPRequestFraming: exportRequest's bytes are field 1 records, each
// the tag, the length and the marshalled ResourceMetrics; they decode back
// to the messages framed, and are what MetricsData (the same one repeated
// field 1, in metrics/v1) marshals to.
func TestOTLPRequestFraming(t *testing.T) {
	if b, err := exportRequest(); err != nil || len(b) != 0 {
		t.Errorf("no ResourceMetrics: %x, %v; want an empty request", b, err)
	}
	small := &metricspb.ResourceMetrics{SchemaUrl: "s"}
	big := &metricspb.ResourceMetrics{ // over 127 bytes: a 2-byte length
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{stringAttr("service.name", strings.Repeat("w", 200))}}}
	b, err := exportRequest(small)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := proto.Marshal(small)
	if want := append([]byte{0x0a, byte(len(m))}, m...); !bytes.Equal(b, want) {
		t.Errorf("one ResourceMetrics framed as %x, want %x", b, want)
	}
	b, err = exportRequest(small, big, small)
	if err != nil {
		t.Fatal(err)
	}
	if n := proto.Size(big); b[len(m)+2] != 0x0a || b[len(m)+3] != byte(n&0x7f|0x80) || b[len(m)+4] != byte(n>>7) {
		t.Errorf("second record starts %x, want tag 0a and the varint of %d", b[len(m)+2:len(m)+5], n)
	}
	rms, err := exportedMetrics(b)
	if err != nil || len(rms) != 3 || !proto.Equal(rms[0], small) || !proto.Equal(rms[1], big) || !proto.Equal(rms[2], small) {
		t.Errorf("decoded %v, %v; want small, big, small", rms, err)
	}
	var md metricspb.MetricsData
	if err := proto.Unmarshal(b, &md); err != nil || !slices.EqualFunc(md.ResourceMetrics, rms, func(a, b *metricspb.ResourceMetrics) bool { return proto.Equal(a, b) }) {
		t.Errorf("as MetricsData: %v, %v", md.ResourceMetrics, err)
	}
	want, _ := proto.MarshalOptions{Deterministic: true}.Marshal(&md)
	if !bytes.Equal(b, want) {
		t.Errorf("framing differs from MetricsData's marshalling:\n%x\n%x", b, want)
	}
	if _, err := exportedMetrics(append(b, 0x12, 0x00)); err == nil {
		t.Error("a field 2 decoded as a request")
	}
	if _, err := exportedMetrics(b[:len(b)-1]); err == nil {
		t.Error("a truncated request decoded")
	}
}

// otlpSamples are a counter (merged and a shard's), a gauge, latencies
// (one empty), a gauge with an empty label and a connect failure.
func otlpSamples() []Sample {
	base := [][2]string{{LabelPlan, "ci"}, {LabelServer, "gws"}, {LabelPhase, "rate"}, {LabelKind, "rate"}}
	shard := append(base[:4:4], [2]string{LabelShard, "shard 0"})
	return []Sample{
		{Def: defOf(MessagesSent), Labels: base, Value: 150},
		{Def: defOf(MessagesSent), Labels: shard, Value: 100},
		{Def: defOf(ConnectionsOpen), Labels: base, Value: 7},
		{Def: defOf(Latency), Labels: base, Hist: hist(0.001, 0.002, 0.004, 0.004)},
		{Def: defOf(Latency), Labels: shard, Hist: client.NativeHist{}},
		{Def: defOf(ClientMemory), Labels: [][2]string{{LabelPlan, "ci"}, {LabelServer, ""}}, Value: 1 << 20},
		{Def: defOf(ConnectFailures), Labels: append(base[:4:4], [2]string{LabelReason, "refused"}), Value: 3},
	}
}

// received is one request an OTLP receiver got.
type received struct {
	method, path, query string
	header              http.Header
	rms                 []*metricspb.ResourceMetrics
	err                 error
}

// sendOTLP sends otlpSamples at 2000s after the epoch (start 1000s) to a
// receiver at path?query and returns what it got.
func sendOTLP(t *testing.T, pathQuery string, headers map[string]string) received {
	t.Helper()
	got := make(chan received, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rms, err := exportedMetrics(b)
		got <- received{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), rms, err}
	}))
	defer srv.Close()
	c := srv.Client()
	defer c.CloseIdleConnections()
	o, err := newOTLP(Target{URL: srv.URL + pathQuery, Headers: headers}, c)
	if err != nil {
		t.Fatal(err)
	}
	o.start = time.Unix(1000, 5)
	if err := o.send(context.Background(), otlpSamples(), time.Unix(2000, 7)); err != nil {
		t.Fatal(err)
	}
	return <-got
}

// attrs writes data point attributes as k=v,k=v in their order.
func attrs(kvs []*commonpb.KeyValue) string {
	var s []string
	for _, kv := range kvs {
		s = append(s, kv.GetKey()+"="+kv.GetValue().GetStringValue())
	}
	return strings.Join(s, ",")
}

// TestOTLPContent decodes what a push sends, field by field: the request
// (method, URL as given, headers), the resource and scope, and each
// metric's name, help, unit, kind, temporality and points: attributes,
// times and values, the histogram's buckets.
func TestOTLPContent(t *testing.T) {
	r := sendOTLP(t, "/otlp/v1/metrics?tenant=a", map[string]string{"X-Scope-OrgID": "team"})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.method != http.MethodPost || r.path != "/otlp/v1/metrics" || r.query != "tenant=a" ||
		r.header.Get("Content-Type") != "application/x-protobuf" || r.header.Get("X-Scope-OrgID") != "team" {
		t.Errorf("request %s %s?%s, headers %v", r.method, r.path, r.query, r.header)
	}
	if len(r.rms) != 1 || len(r.rms[0].ScopeMetrics) != 1 {
		t.Fatalf("got %v; want one ResourceMetrics of one scope", r.rms)
	}
	rm, sm := r.rms[0], r.rms[0].ScopeMetrics[0]
	if a := attrs(rm.GetResource().GetAttributes()); a != "service.name=wsplan" {
		t.Errorf("resource %s", a)
	}
	if sm.GetScope().GetName() != "github.com/wsplan/wsplan" || len(sm.Metrics) != 5 {
		t.Fatalf("scope %v with %d metrics, want github.com/wsplan/wsplan with 5", sm.GetScope(), len(sm.Metrics))
	}
	const start, now = 1000*1e9 + 5, 2000*1e9 + 7
	base := "kind=rate,phase=rate,plan=ci,server=gws"
	type point struct {
		attrs       string
		start, time uint64
		value       float64
	}
	checkNumbers := func(m *metricspb.Metric, dps []*metricspb.NumberDataPoint, want ...point) {
		t.Helper()
		var got []point
		for _, dp := range dps {
			got = append(got, point{attrs(dp.Attributes), dp.StartTimeUnixNano, dp.TimeUnixNano, dp.GetAsDouble()})
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s points %v, want %v", m.Name, got, want)
		}
	}
	for i, want := range []struct{ name, unit string }{{MessagesSent, "1"}, {ConnectionsOpen, "1"}, {Latency, "s"}, {ClientMemory, "By"}, {ConnectFailures, "1"}} {
		if m := sm.Metrics[i]; m.Name != want.name || m.Unit != want.unit || m.Description != defOf(want.name).Help {
			t.Errorf("metric %d: %s (%s, %q), want %s (%s, its help)", i, m.Name, m.Unit, m.Description, want.name, want.unit)
		}
	}
	for _, i := range []int{0, 4} {
		if s := sm.Metrics[i].GetSum(); s == nil || !s.IsMonotonic || s.AggregationTemporality != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
			t.Errorf("%s: %v, want a cumulative monotonic sum", sm.Metrics[i].Name, sm.Metrics[i].Data)
		}
	}
	checkNumbers(sm.Metrics[0], sm.Metrics[0].GetSum().GetDataPoints(), point{base, start, now, 150}, point{base + ",shard=shard 0", start, now, 100})
	checkNumbers(sm.Metrics[1], sm.Metrics[1].GetGauge().GetDataPoints(), point{base, 0, now, 7})
	checkNumbers(sm.Metrics[3], sm.Metrics[3].GetGauge().GetDataPoints(), point{"plan=ci", 0, now, 1 << 20})
	checkNumbers(sm.Metrics[4], sm.Metrics[4].GetSum().GetDataPoints(), point{"kind=rate,phase=rate,plan=ci,reason=refused,server=gws", start, now, 3})
	checkLatency(t, sm.Metrics[2], base, start, now)
}

// checkLatency checks the exponential histogram of otlpSamples' latencies:
// 1ms, 2ms and twice 4ms at scale 3 (base 2^(1/8)), 1ms in bucket -80,
// (2^-10, 2^(-79/8)], 2ms 8 buckets up, 4ms 16; and an empty one.
func checkLatency(t *testing.T, m *metricspb.Metric, base string, start, now uint64) {
	t.Helper()
	eh := m.GetExponentialHistogram()
	if eh == nil || eh.AggregationTemporality != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE || len(eh.DataPoints) != 2 {
		t.Fatalf("latency %v, want a cumulative exponential histogram of 2 points", m.Data)
	}
	dp := eh.DataPoints[0]
	counts := make([]uint64, 17)
	counts[0], counts[8], counts[16] = 1, 1, 2
	if attrs(dp.Attributes) != base || dp.StartTimeUnixNano != start || dp.TimeUnixNano != now || dp.Count != 4 ||
		dp.Sum == nil || math.Abs(*dp.Sum-0.011) > 1e-12 || dp.Scale != 3 || dp.ZeroCount != 0 || dp.Min != nil || dp.Max != nil ||
		dp.GetPositive().GetOffset() != -80 || !slices.Equal(dp.GetPositive().GetBucketCounts(), counts) ||
		len(dp.GetNegative().GetBucketCounts()) != 0 {
		t.Errorf("latency point %v;\nwant %s, count 4, sum 0.011, scale 3, positive offset -80 counts %v", dp, base, counts)
	}
	// The base^(offset+1) bound of the first bucket holds 1ms, base^offset does not.
	if lo, hi := math.Exp2(-80.0/8), math.Exp2(-79.0/8); !(lo < 0.001 && 0.001 <= hi) {
		t.Errorf("bucket -80 is (%g, %g]: not 1ms's", lo, hi)
	}
	empty := eh.DataPoints[1]
	if attrs(empty.Attributes) != base+",shard=shard 0" || empty.Count != 0 || empty.GetSum() != 0 || empty.Sum == nil ||
		empty.GetPositive().GetOffset() != 0 || len(empty.GetPositive().GetBucketCounts()) != 0 {
		t.Errorf("empty latency point %v", empty)
	}
}

// partialSuccessBody is an ExportMetricsServiceResponse with partial_success.
func partialSuccessBody(rejected int64, msg string) []byte {
	var ps []byte
	if rejected != 0 {
		ps = protowire.AppendTag(ps, 1, protowire.VarintType)
		ps = protowire.AppendVarint(ps, uint64(rejected))
	}
	if msg != "" {
		ps = protowire.AppendTag(ps, 2, protowire.BytesType)
		ps = protowire.AppendString(ps, msg)
	}
	ps = protowire.AppendTag(ps, 9, protowire.Fixed64Type) // unknown: skipped
	ps = protowire.AppendFixed64(ps, 1)
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(b, ps)
}

// TestOTLPAnswers: a 2xx is a success unless its protobuf body reports a
// partial success with rejected points or a message; any other status
// is an error with the status and a bounded one-line excerpt of its body.
func TestOTLPAnswers(t *testing.T) {
	long := strings.Repeat("é", 150) + "\nsecond line\tand more"
	for _, tc := range []struct {
		name, ctype string
		status      int
		body        []byte
		want        []string // in the error; nil: no error
	}{
		{"empty 200", "", 200, nil, nil},
		{"empty protobuf", "application/x-protobuf", 200, nil, nil},
		{"202 text", "text/plain", 202, []byte("\xff accepted"), nil},
		{"no partial success", "application/x-protobuf", 200, partialSuccessBody(0, ""), nil},
		{"rejected", "application/x-protobuf; charset=binary", 200, partialSuccessBody(3, "bad\nname"), []string{"partial success: bad name (3 metric data points rejected)"}},
		{"message only", "application/x-protobuf", 200, partialSuccessBody(0, "slow down"), []string{"slow down (0 metric"}},
		{"rejected, no message", "application/x-protobuf", 200, partialSuccessBody(2, ""), []string{"empty message (2 metric"}},
		{"bad response", "application/x-protobuf", 200, []byte{0x0a, 0x05, 0x08}, []string{"bad ExportMetricsServiceResponse"}},
		{"refused", "text/plain", 400, []byte("  no such\r\nmetric  "), []string{"otlp: 400 Bad Request (body: no such metric)"}},
		{"unavailable", "", 503, nil, []string{"503 Service Unavailable (body: (empty))"}},
		{"long", "text/plain", 500, []byte(long), []string{"500 Internal Server Error (body: " + strings.Repeat("é", 100) + "…)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if tc.ctype != "" {
					w.Header().Set("Content-Type", tc.ctype)
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write(tc.body)
			}))
			defer srv.Close()
			c := srv.Client()
			defer c.CloseIdleConnections()
			o, err := newOTLP(Target{URL: srv.URL + "/v1/metrics"}, c)
			if err != nil {
				t.Fatal(err)
			}
			err = o.send(context.Background(), otlpSamples(), time.Now())
			switch {
			case tc.want == nil && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != nil && err == nil:
				t.Errorf("no error, want one with %q", tc.want)
			case err != nil:
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q, want it to hold %q", err, w)
					}
				}
				if strings.ContainsAny(err.Error(), "\n\r\t") || len(err.Error()) > 300 {
					t.Errorf("error %q: not one bounded line", err)
				}
			}
		})
	}
}

// TestExcerpt: one line, valid UTF-8, no control characters, cut on a
// rune at maxExcerpt bytes.
func TestExcerpt(t *testing.T) {
	for in, want := range map[string]string{
		"":                                    "(empty)",
		" \n\t ":                              "(empty)",
		"a\x00b \x1b[31m c":                   "a\uFFFDb \uFFFD[31m c",
		"bad \xff\xfe utf-8":                  "bad \uFFFD utf-8",
		strings.Repeat("a", maxExcerpt):       strings.Repeat("a", maxExcerpt),
		strings.Repeat("a", maxExcerpt+1):     strings.Repeat("a", maxExcerpt) + "…",
		"a" + strings.Repeat("€", maxExcerpt): "a" + strings.Repeat("€", (maxExcerpt-1)/3) + "…",
	} {
		if got := excerpt([]byte(in)); got != want {
			t.Errorf("excerpt(%q) = %q, want %q", in, got, want)
		}
	}
}
