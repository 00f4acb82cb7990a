package result

import "time"

// Soak is a phase's resource series: the server's process tree and the
// client, sampled every Interval while a phase with a constant load ran
// (and through soak.drain after it), for the fitted slopes and the leak
// verdict (metrics.Soak) and for plotting.
type Soak struct {
	// Interval is the time between points; it doubles whenever a long
	// phase's series is thinned to keep at most MaxSoakPoints.
	Interval time.Duration `json:"interval"` // ns
	// Settle is the start of the phase left out of the fits (warm-up).
	Settle time.Duration `json:"settle"` // ns
	Points []SoakPoint   `json:"points"`
}

// MaxSoakPoints bounds a series: a 6 h soak sampled every second is
// thinned (every other point kept, the interval doubled) whenever it
// reaches this, so memory and JSON stay small whatever the duration.
const MaxSoakPoints = 1024

// SoakPoint is one reading. The server's figures are 0 when they are not
// read (a url: server without pid:; fds and threads with metrics_url:).
type SoakPoint struct {
	T          time.Duration `json:"t"`                 // ns since the phase started
	RSS        int64         `json:"rss,omitempty"`     // server process tree, bytes
	FDs        int64         `json:"fds,omitempty"`     // server open file descriptors
	Threads    int64         `json:"threads,omitempty"` // server threads
	Done       int64         `json:"done"`              // the phase's units finished so far (its progress: cycles, messages)
	ClientRSS  int64         `json:"client_rss"`        // every client process, bytes
	Goroutines int64         `json:"goroutines"`        // wsplan's own
	Drain      bool          `json:"drain,omitempty"`   // read after the phase's load stopped
}

// Fit returns the least-squares slope of y against x over the points
// with keep(i), and how many there were; ok is false with fewer than
// two, or when x does not vary.
func Fit(n int, keep func(i int) bool, x, y func(i int) float64) (slope float64, used int, ok bool) {
	var sx, sy, sxx, sxy float64
	for i := range n {
		if !keep(i) {
			continue
		}
		xi, yi := x(i), y(i)
		sx += xi
		sy += yi
		sxx += xi * xi
		sxy += xi * yi
		used++
	}
	if used < 2 {
		return 0, used, false
	}
	k := float64(used)
	den := k*sxx - sx*sx
	if den <= 0 || den < 1e-12*k*sxx {
		return 0, used, false
	}
	return (k*sxy - sx*sy) / den, used, true
}
