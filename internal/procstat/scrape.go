package procstat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The Prometheus process metrics a scrape sampler reads: what the Go, Java,
// Node.js and Python client libraries export by default.
const (
	MetricCPUSeconds = "process_cpu_seconds_total"
	MetricRSS        = "process_resident_memory_bytes"
)

// maxScrapeBody bounds the bytes read from one scrape.
const maxScrapeBody = 16 << 20

// NewScrapeSampler is NewSampler for a process wsplan cannot see in /proc
// (another host, a container): it reads MetricCPUSeconds and MetricRSS
// from the Prometheus text exposition at url at Start, every interval and
// at Stop, with a timeout of at most interval per request. Series of a
// metric with several label sets are summed. CPU is as exact as the
// exporter's counter (usually 10 ms ticks).
func NewScrapeSampler(url string, interval time.Duration) *Sampler {
	s := NewSampler(FS{}, 0, interval)
	s.scrape = url
	s.client = &http.Client{Timeout: min(s.interval, 2*time.Second) + time.Second}
	return s
}

// Scrape reads the process metrics at url once: CPU time and resident
// memory.
func Scrape(ctx context.Context, client *http.Client, url string) (cpu time.Duration, rss int64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("procstat: metrics_url: %w", err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("procstat: scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("procstat: scraping %s: %s", url, resp.Status)
	}
	cpuS, mem, err := ParseProcessMetrics(io.LimitReader(resp.Body, maxScrapeBody))
	if err != nil {
		return 0, 0, fmt.Errorf("procstat: scraping %s: %w", url, err)
	}
	return time.Duration(cpuS * float64(time.Second)), int64(mem), nil
}

// ParseProcessMetrics reads MetricCPUSeconds (seconds) and MetricRSS
// (bytes) from a Prometheus text exposition, with the Prometheus project's
// own parser.
func ParseProcessMetrics(r io.Reader) (cpuSeconds, rssBytes float64, err error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return 0, 0, fmt.Errorf("parsing the exposition: %w", err)
	}
	sum := func(name string) (float64, error) {
		f, ok := fams[name]
		if !ok || len(f.GetMetric()) == 0 {
			return 0, fmt.Errorf("no %s in the exposition (the process collector of the Prometheus client library exports it)", name)
		}
		var v float64
		for _, m := range f.GetMetric() {
			v += value(f.GetType(), m)
		}
		return v, nil
	}
	var errs []error
	if cpuSeconds, err = sum(MetricCPUSeconds); err != nil {
		errs = append(errs, err)
	}
	if rssBytes, err = sum(MetricRSS); err != nil {
		errs = append(errs, err)
	}
	return cpuSeconds, rssBytes, errors.Join(errs...)
}

func value(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}
