package live

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/prompb"
)

// remoteWrite pushes with Prometheus remote write v1 (the protocol every
// receiver speaks: Prometheus with --web.enable-remote-write-receiver,
// Mimir, Thanos, VictoriaMetrics …): each histogram as its classic
// series (_bucket with le, _sum, _count).
type remoteWrite struct{ api *remote.API }

func newRemoteWrite(t Target, c *http.Client) (*remoteWrite, error) {
	api, err := remote.NewAPI(t.URL, remote.WithAPIPath(""), remote.WithAPIHTTPClient(c),
		// One retry at most: a late sample is worth less than the next one.
		remote.WithAPIBackoff(remote.BackoffConfig{Min: 100 * time.Millisecond, Max: time.Second, MaxRetries: 1}))
	if err != nil {
		return nil, err
	}
	return &remoteWrite{api: api}, nil
}

func (w *remoteWrite) send(ctx context.Context, samples []Sample, at time.Time) error {
	_, err := w.api.Write(ctx, remote.WriteV1MessageType, writeRequest(samples, at))
	return err
}

// writeRequest renders samples as a remote-write v1 request at one time.
func writeRequest(samples []Sample, at time.Time) *prompb.WriteRequest {
	ts := at.UnixMilli()
	req := &prompb.WriteRequest{}
	series := func(name string, labels [][2]string, v float64, extra ...prompb.Label) {
		ls := []prompb.Label{{Name: "__name__", Value: name}}
		for _, l := range labels {
			if l[1] != "" {
				ls = append(ls, prompb.Label{Name: l[0], Value: l[1]})
			}
		}
		ls = append(ls, extra...)
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: ls, Samples: []prompb.Sample{{Value: v, Timestamp: ts}}})
	}
	for _, s := range samples {
		if s.Def.Type != Histogram {
			series(s.Def.Name, s.Labels, s.Value)
			continue
		}
		for _, b := range ClassicBuckets(s.Hist) {
			series(s.Def.Name+"_bucket", s.Labels, float64(b.Count), prompb.Label{Name: "le", Value: formatLe(b.Upper)})
		}
		series(s.Def.Name+"_bucket", s.Labels, float64(s.Hist.Count), prompb.Label{Name: "le", Value: "+Inf"})
		series(s.Def.Name+"_sum", s.Labels, s.Hist.Sum)
		series(s.Def.Name+"_count", s.Labels, float64(s.Hist.Count))
	}
	return req
}

// formatLe writes a bucket bound as Prometheus does.
func formatLe(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
