package live

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"go.uber.org/goleak"

	"github.com/wsplan/wsplan/internal/client"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hist is a NativeHist of the given latencies (seconds).
func hist(vs ...float64) client.NativeHist {
	h := client.NativeHist{Buckets: map[int]uint64{}}
	for _, v := range vs {
		h.Buckets[client.NativeBucket(v)]++
		h.Count++
		h.Sum += v
	}
	return h
}

// hubWithShards is a hub with a finished connect phase and a running rate
// phase over two shards.
func hubWithShards() (*Hub, *client.Live) {
	h := NewHub("ci", nil)
	var c client.Live
	end := h.Begin(Phase{Server: "gws", Phase: "connect", Kind: "connect"}, &c, 0, 0)
	end(1000)
	var l client.Live
	h.Begin(Phase{Server: "gws", Phase: "rate", Kind: "rate"}, &l, 0, 1000)
	var refused, timeout client.ConnectFailures
	refused[client.ConnectRefused] = 7
	timeout[client.ConnectTimeout], timeout[client.ConnectRefused] = 2, 1
	l.SetShard(0, "shard 0", client.LiveSnapshot{Sent: 100, Recv: 90, Latency: hist(0.001, 0.002), ConnectFailed: refused})
	l.SetShard(1, "127.0.0.1:7070", client.LiveSnapshot{Sent: 50, Recv: 50, Latency: hist(0.004), ConnectFailed: timeout})
	return h, &l
}

// TestLabelsBounded: every series carries only the bounded labels, and
// their values are names from the plan, never a URL, a query or an id;
// the merged series are the sums of the shards' own.
func TestLabelsBounded(t *testing.T) {
	h, _ := hubWithShards()
	mfs, err := h.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, l := range Labels {
		allowed[l] = true
	}
	values := map[string]bool{"": true, "ci": true, "gws": true, "connect": true, "rate": true, "shard 0": true, "127.0.0.1:7070": true}
	for r := range client.NumConnectReasons {
		values[r.String()] = true
	}
	failures := map[string]float64{} // merged rate phase, by reason
	sums := map[string]float64{}
	for _, mf := range mfs {
		if !slices.ContainsFunc(Defs, func(d Def) bool { return d.Name == mf.GetName() }) {
			t.Errorf("undeclared series %s", mf.GetName())
		}
		for _, m := range mf.Metric {
			shard, reason, phase := "", "", ""
			for _, lp := range m.Label {
				if !allowed[lp.GetName()] {
					t.Errorf("%s: label %q is not one of %v", mf.GetName(), lp.GetName(), Labels)
				}
				if !values[lp.GetValue()] || strings.ContainsAny(lp.GetValue(), "?/=&") {
					t.Errorf("%s: label value %q", mf.GetName(), lp.GetValue())
				}
				switch lp.GetName() {
				case LabelShard:
					shard = lp.GetValue()
				case LabelReason:
					reason = lp.GetValue()
				case LabelPhase:
					phase = lp.GetValue()
				}
			}
			if (reason != "") != (mf.GetName() == ConnectFailures) {
				t.Errorf("%s: reason %q", mf.GetName(), reason)
			}
			if mf.GetName() == ConnectFailures && shard == "" && phase == "rate" {
				failures[reason] += m.Counter.GetValue()
			}
			if mf.GetName() == MessagesSent && m.Counter != nil {
				sums[shard] += m.Counter.GetValue()
			}
		}
	}
	// connect (0) + rate merged (150) for "", and 100 + 50 over the shards.
	if sums[""] != 150 || sums["shard 0"]+sums["127.0.0.1:7070"] != 150 {
		t.Errorf("sent: merged %v, shards %v + %v; want 150 = 100 + 50", sums[""], sums["shard 0"], sums["127.0.0.1:7070"])
	}
	// Every reason is exported (0 until it counts), the merged sums the
	// shards'.
	if len(failures) != int(client.NumConnectReasons) || failures["refused"] != 8 || failures["timeout"] != 2 || failures["reset"] != 0 {
		t.Errorf("connect failures by reason %v; want every reason, refused 7+1, timeout 2", failures)
	}
}

// TestHistogramViews: the classic buckets are sums of the native ones and
// the native spans decode back to the buckets.
func TestHistogramViews(t *testing.T) {
	h := hist(0.0001, 0.001, 0.001, 0.0011, 0.05, 3)
	cb := ClassicBuckets(h)
	if last := cb[len(cb)-1]; last.Count != 6 || last.Upper != 128 {
		t.Errorf("last classic bucket %+v, want 6 at 128s", last)
	}
	for _, b := range cb {
		var want uint64
		for i, n := range h.Buckets {
			if client.NativeUpper(i) <= b.Upper*(1+1e-12) {
				want += n
			}
		}
		if b.Count != want {
			t.Errorf("le %g: %d, want %d", b.Upper, b.Count, want)
		}
	}
	spans, deltas := nativeSpans(h)
	got := map[int]uint64{}
	idx, n := 0, int64(0)
	k := 0
	for si, s := range spans {
		if si == 0 {
			idx = int(s.GetOffset())
		} else {
			idx += int(s.GetOffset()) + 1
		}
		for j := uint32(0); j < s.GetLength(); j++ {
			if j > 0 {
				idx++
			}
			n += deltas[k]
			k++
			got[idx] = uint64(n)
		}
	}
	if len(got) != len(h.Buckets) {
		t.Fatalf("spans decode to %v, want %v", got, h.Buckets)
	}
	for i, c := range h.Buckets {
		if got[i] != c {
			t.Errorf("bucket %d: %d, want %d", i, got[i], c)
		}
	}
}

// TestRemoteWrite: a remote-write receiver gets snappy protobuf v1 with
// every series, histograms as _bucket/_sum/_count.
func TestRemoteWrite(t *testing.T) {
	h, _ := hubWithShards()
	var mu sync.Mutex
	var got []prompb.TimeSeries
	var header http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		raw, err := snappy.Decode(nil, b)
		var req prompb.WriteRequest
		if err == nil {
			err = req.Unmarshal(raw)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got, header = req.Timeseries, r.Header.Clone()
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	p, err := StartPush(h, Target{URL: srv.URL + "/api/v1/write", Interval: time.Hour, Headers: map[string]string{"Authorization": "Bearer x"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if header.Get("Authorization") != "Bearer x" || header.Get("Content-Encoding") != "snappy" {
		t.Errorf("headers %v", header)
	}
	names := map[string]float64{}
	for _, ts := range got {
		var name, le, shard, reason string
		for _, l := range ts.Labels {
			switch l.Name {
			case "__name__":
				name = l.Value
			case "le":
				le = l.Value
			case LabelShard:
				shard = l.Value
			case LabelReason:
				reason = l.Value
			}
		}
		if shard == "" && (le == "" || le == "+Inf") {
			names[name+le+reason] += ts.Samples[0].Value
		}
	}
	if names[MessagesSent] != 150 || names[Latency+"_count"] != 3 || names[Latency+"_bucket+Inf"] != 3 || names[Dropped] != 0 ||
		names[ConnectFailures+"refused"] != 8 || names[ConnectFailures+"timeout"] != 2 || names[ConnectFailures] != 0 {
		t.Errorf("remote write got %v", names)
	}
}

// TestOTLP: an OTLP/HTTP receiver decoding with OpenTelemetry's protobuf
// types gets the counters as sums and the latency as an exponential
// histogram whose count is the phase's.
func TestOTLP(t *testing.T) {
	h, _ := hubWithShards()
	got := make(chan []*metricspb.ResourceMetrics, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rms, err := exportedMetrics(b)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- rms
		// An empty ExportMetricsServiceResponse: no partial success.
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	tg, err := ParseTarget(srv.URL + "/v1/metrics")
	if err != nil || !tg.OTLP {
		t.Fatalf("target %+v, %v: want OTLP", tg, err)
	}
	tg.Interval = time.Hour
	p, err := StartPush(h, tg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	rms := <-got
	var count uint64
	var sent float64
	failures := map[string]float64{}
	for _, rm := range rms {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch m.Name {
				case Latency:
					for _, dp := range m.GetExponentialHistogram().GetDataPoints() {
						if len(dp.Attributes) == 4 && dp.Scale == client.NativeSchema { // merged: no shard attribute
							count += dp.Count
							var n uint64
							for _, c := range dp.GetPositive().GetBucketCounts() {
								n += c
							}
							if n != dp.Count {
								t.Errorf("buckets hold %d of %d", n, dp.Count)
							}
						}
					}
				case MessagesSent:
					for _, dp := range m.GetSum().GetDataPoints() {
						if len(dp.Attributes) == 4 {
							sent += dp.GetAsDouble()
						}
					}
				case ConnectFailures:
					for _, dp := range m.GetSum().GetDataPoints() {
						attrs := map[string]string{}
						for _, a := range dp.Attributes {
							attrs[a.GetKey()] = a.GetValue().GetStringValue()
						}
						if _, shard := attrs[LabelShard]; !shard {
							failures[attrs[LabelReason]] += dp.GetAsDouble()
						}
					}
				}
			}
		}
	}
	if count != 3 || sent != 150 || failures["refused"] != 8 || failures["timeout"] != 2 {
		t.Errorf("OTLP: latency count %d, sent %v, connect failures %v; want 3, 150, 8 refused and 2 timeouts", count, sent, failures)
	}
}

// TestPushDrops: a receiver that hangs, or refuses: the run's pushes never
// block (each batch taken while one is in flight is dropped), the dropped
// samples are counted and Close returns within FinalTimeout.
func TestPushDrops(t *testing.T) {
	for _, mode := range []string{"hang", "refuse"} {
		t.Run(mode, func(t *testing.T) {
			h, _ := hubWithShards()
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if mode == "hang" {
					select {
					case <-release:
					case <-r.Context().Done():
					}
					return
				}
				http.Error(w, "no", http.StatusBadRequest)
			}))
			defer srv.Close()
			defer close(release)
			p, err := StartPush(h, Target{URL: srv.URL + "/api/v1/write", Interval: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(400 * time.Millisecond)
			start := time.Now()
			if err := p.Close(); err == nil {
				t.Error("Close: no error from a failing receiver")
			}
			if d := time.Since(start); d > FinalTimeout+time.Second {
				t.Errorf("Close took %v", d)
			}
			if h.DroppedTotal() == 0 {
				t.Error("nothing counted as dropped")
			}
			var buf bytes.Buffer
			mfs, _ := h.Registry().Gather()
			for _, mf := range mfs {
				if mf.GetName() == Dropped {
					buf.WriteString(mf.String())
				}
			}
			if !strings.Contains(buf.String(), "value") {
				t.Errorf("no %s series", Dropped)
			}
			// Let the worker's request end before goleak looks.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			select {
			case <-p.sent:
			case <-ctx.Done():
			}
		})
	}
}
