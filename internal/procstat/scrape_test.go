package procstat

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const exposition = `# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total %g
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes %d
# TYPE go_goroutines gauge
go_goroutines 12
`

func TestParseProcessMetrics(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		cpu, rss float64
		err      string
	}{
		{name: "go client", in: fmt.Sprintf(exposition, 12.5, 45<<20), cpu: 12.5, rss: 45 << 20},
		{name: "labelled series are summed", in: "process_cpu_seconds_total{worker=\"1\"} 1\nprocess_cpu_seconds_total{worker=\"2\"} 2.5\nprocess_resident_memory_bytes 100\n", cpu: 3.5, rss: 100},
		{name: "no cpu", in: "process_resident_memory_bytes 100\n", err: "no process_cpu_seconds_total"},
		{name: "neither", in: "up 1\n", err: "no process_resident_memory_bytes"},
		{name: "not an exposition", in: "<html>", err: "parsing the exposition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cpu, rss, err := ParseProcessMetrics(strings.NewReader(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil || cpu != tt.cpu || rss != tt.rss {
				t.Fatalf("= %v, %v, %v; want %v, %v", cpu, rss, err, tt.cpu, tt.rss)
			}
		})
	}
}

// TestScrapeSampler: an endpoint whose CPU counter grows by 0.3 s between
// Start and Stop and whose RSS peaks at one scrape.
func TestScrapeSampler(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		rss := int64(10 << 20)
		if i == 2 {
			rss = 30 << 20
		}
		fmt.Fprintf(w, exposition, 1+0.1*float64(i-1), rss)
	}))
	defer srv.Close()
	s := NewScrapeSampler(srv.URL+"/metrics", 20*time.Millisecond)
	s.Start()
	for n.Load() < 4 {
		time.Sleep(5 * time.Millisecond)
	}
	sum := s.Stop()
	if sum.Err != nil {
		t.Fatal(sum.Err)
	}
	scrapes := n.Load()
	want := 0.1 * float64(scrapes-1)
	if math.Abs(sum.CPUSeconds-want) > 1e-9 || sum.Samples != int(scrapes) {
		t.Errorf("CPU %v s over %d samples, want %v s over %d scrapes", sum.CPUSeconds, sum.Samples, want, scrapes)
	}
	if sum.MemMax != 30<<20 || sum.MemMin != 10<<20 {
		t.Errorf("mem min/max = %d/%d, want 10 MiB/30 MiB", sum.MemMin, sum.MemMax)
	}
	if sum.PreciseCPU {
		t.Error("a scraped counter is not the precise CPU clock")
	}
}

func TestScrapeSamplerDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	s := NewScrapeSampler(srv.URL, time.Second)
	s.Start()
	sum := s.Stop()
	if sum.Err == nil || !strings.Contains(sum.Err.Error(), "404") {
		t.Errorf("err = %v, want the 404", sum.Err)
	}
}
