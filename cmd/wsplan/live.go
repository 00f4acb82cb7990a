package main

import (
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/internal/live"
	"github.com/wsplan/wsplan/internal/plan"
)

// liveFlags are the live metrics' flags.
type liveFlags struct {
	listen   string
	push     []string
	interval time.Duration
}

func (f *liveFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.listen, "metrics-listen", "", "serve live Prometheus metrics at http://ADDR/metrics during the run (e.g. 127.0.0.1:9464)")
	cmd.Flags().StringArrayVar(&f.push, "metrics-push", nil, "push live metrics to URL during the run: Prometheus remote write (…/api/v1/write) or OTLP/HTTP (…/v1/metrics) (repeatable)")
	cmd.Flags().DurationVar(&f.interval, "metrics-interval", plan.DefaultMetricsInterval, "interval of --metrics-push")
}

// check checks the flags' values alone, before the plan loads and
// anything starts: every --metrics-push URL, --metrics-interval, and the
// form of --metrics-listen's address (start binds it).
func (f *liveFlags) check() error {
	if f.interval < plan.MinMetricsInterval {
		return usageErr(fmt.Errorf("--metrics-interval %s: want >= %s", f.interval, plan.MinMetricsInterval))
	}
	for _, u := range f.push {
		// Its credentials (a password, an access_token) are masked like
		// a plan's, from here on: in this error, and in a failed push's.
		plan.URLSecrets(u, &secrets)
		if _, err := live.ParseTarget(u); err != nil {
			return usageErr(fmt.Errorf("--metrics-push: %w", err))
		}
	}
	if f.listen != "" && !validListen(f.listen) {
		return usageErr(fmt.Errorf("--metrics-listen %q: want HOST:PORT, e.g. 127.0.0.1:9464", f.listen))
	}
	return nil
}

// validListen reports whether addr has the form of a listen address:
// HOST:PORT, HOST empty, an IP or a host name, PORT 0 to 65535.
func validListen(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > plan.MaxPort {
		return false
	}
	return host == "" || net.ParseIP(host) != nil || hostName.MatchString(host)
}

// hostName is the form of a DNS host name (RFC 1123).
var hostName = regexp.MustCompile(`^(?i)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$`)

// targets are the push targets of the flags (at --metrics-interval) and of
// the plan's metrics: key (at its interval, with its headers).
func (f *liveFlags) targets(p *plan.Plan) ([]live.Target, error) {
	var out []live.Target
	for _, u := range f.push {
		t, err := live.ParseTarget(u)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--metrics-push: %w", err))
		}
		t.Interval = f.interval
		out = append(out, t)
	}
	m := p.Metrics
	for _, u := range []struct {
		url  string
		otlp bool
	}{{m.RemoteWrite, false}, {m.OTLP, true}} {
		if u.url != "" {
			out = append(out, live.Target{URL: u.url, OTLP: u.otlp, Headers: m.Headers, Interval: m.Interval.D()})
		}
	}
	return out, nil
}

// startLive starts the live metrics the flags ask for; stop ends them,
// reporting dropped samples on stderr. hub is nil when none are asked for.
func (f *liveFlags) start(p *plan.Plan, stderr io.Writer) (hub *live.Hub, stop func(), err error) {
	targets, err := f.targets(p)
	if err != nil {
		return nil, nil, err
	}
	if f.listen == "" && len(targets) == 0 {
		return nil, func() {}, nil
	}
	hub = live.NewHub(p.Name, &secrets)
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if err := touchHost("live metrics"); err != nil {
		return nil, nil, err
	}
	if f.listen != "" {
		srv, err := live.Listen(hub, f.listen)
		if err != nil {
			return nil, nil, usageErr(fmt.Errorf("--metrics-listen: %w", err))
		}
		fmt.Fprintf(stderr, "live metrics: http://%s/metrics\n", srv.Addr())
		stops = append(stops, func() {
			if err := srv.Close(); err != nil {
				fmt.Fprintf(stderr, "live metrics: %v\n", err)
			}
		})
	}
	for _, t := range targets {
		ps, err := live.StartPush(hub, t)
		if err != nil {
			stop()
			return nil, nil, usageErr(fmt.Errorf("metrics push %s: %w", t.URL, err))
		}
		stops = append(stops, func() {
			if err := ps.Close(); err != nil {
				fmt.Fprintf(stderr, "live metrics push %s: %v\n", t.URL, err)
			}
		})
	}
	stops = append(stops, func() {
		if n := hub.DroppedTotal(); n > 0 {
			fmt.Fprintf(stderr, "live metrics: %d samples dropped (%s)\n", n, live.Dropped)
		}
	})
	return hub, stop, nil
}
