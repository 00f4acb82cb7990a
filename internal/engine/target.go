package engine

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/wstls"
	"github.com/wsplan/wsplan/scenarios"
)

// serverProc is what the phases watch of a server: the process wsplan
// started (launch.Process), or, for a url: server, running, which never
// ends as far as the engine can tell (the target's failures show as the
// client's).
type serverProc interface {
	Done() <-chan struct{}
	Exited() (bool, error)
	ExitReason() string
	Stopping() bool
	Tail(n int) string
}

// running stands for a url: server: wsplan neither started it nor may
// signal or stop it.
type running struct{}

func (running) Done() <-chan struct{} { return nil } // never closes
func (running) Exited() (bool, error) { return false, nil }
func (running) ExitReason() string    { return "" }
func (running) Stopping() bool        { return false }
func (running) Tail(int) string       { return "" }

// resources says how the server's CPU and memory are read.
type resources struct {
	how     string        // result.Resources*
	pid     int           // ResourcesTree, ResourcesPID
	started time.Duration // ResourcesPID: the process's start time (procstat.Stat), to tell a reused pid
	url     string        // ResourcesMetrics
	box     *restartable  // a server restart faults restart: pid follows its process
}

// current is the process behind proc now (proc itself unless restartable).
func current(proc serverProc) serverProc {
	if r, ok := proc.(*restartable); ok {
		return r.current()
	}
	return proc
}

// follow updates r to the server's process of the moment (after a
// restart fault).
func (r *resources) follow() {
	if r.box != nil {
		if pid, started := r.box.curPID(); pid != 0 {
			r.pid, r.started = pid, started
		}
	}
}

// livePID is the server process the live metrics read (0: none).
func (r resources) livePID() int {
	if r.how == result.ResourcesTree || r.how == result.ResourcesPID {
		return r.pid
	}
	return 0
}

// sampler returns the server's sampler over one window, nil when its
// resources are not measured.
func (r resources) sampler(fs procstat.FS, interval time.Duration) *procstat.Sampler {
	switch r.how {
	case result.ResourcesTree, result.ResourcesPID:
		return procstat.NewTreeSampler(fs, r.pid, interval)
	case result.ResourcesMetrics:
		return procstat.NewScrapeSampler(r.url, interval)
	}
	return nil
}

// rss reads the server's resident memory now (of the whole process tree);
// ok is false when it is not measured.
func (r resources) rss(fs procstat.FS) (n int64, ok bool) {
	switch r.how {
	case result.ResourcesTree, result.ResourcesPID:
		stats, err := fs.Tree(r.pid)
		if err != nil {
			return 0, true // gone: the phase reports the death
		}
		for _, st := range stats {
			if b, err := fs.RSS(st.PID); err == nil {
				n += b
			}
		}
		return n, true
	case result.ResourcesMetrics:
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, b, err := procstat.Scrape(ctx, http.DefaultClient, r.url)
		if err != nil {
			return 0, true
		}
		return b, true
	}
	return 0, false
}

// describe says in a notice how the resources are read.
func (r resources) describe() string {
	switch r.how {
	case result.ResourcesTree:
		return fmt.Sprintf("process tree of pid %d", r.pid)
	case result.ResourcesPID:
		return fmt.Sprintf("process tree of pid %d (not started by wsplan)", r.pid)
	case result.ResourcesMetrics:
		return "scraped from " + r.url
	}
	return "not measured (n/a): give pid:, pid_file: or metrics_url: to measure them"
}

// externalResources decides how a url: server's resources are read and
// checks that they can be: the process exists, the endpoint answers.
func (e *runner) externalResources(ctx context.Context, srv plan.Server) (resources, error) {
	pid := srv.PID
	if srv.PIDFile != "" {
		var err error
		if pid, err = plan.ReadPIDFile(srv.PIDFile); err != nil {
			return resources{}, fmt.Errorf("pid_file: %w", err)
		}
	}
	switch {
	case pid != 0:
		st, err := e.o.Proc.ReadStat(pid)
		if err != nil || st.Exited() {
			return resources{}, fmt.Errorf("pid %d: no such process on this host (pid:/pid_file: name a process of the machine wsplan runs on)", pid)
		}
		return resources{how: result.ResourcesPID, pid: pid, started: st.StartTime}, nil
	case srv.MetricsURL != "":
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, _, err := procstat.Scrape(sctx, http.DefaultClient, srv.MetricsURL); err != nil {
			return resources{}, fmt.Errorf("metrics_url: %w", err)
		}
		return resources{how: result.ResourcesMetrics, url: srv.MetricsURL}, nil
	}
	return resources{how: result.ResourcesNone}, nil
}

// external runs the phases against a url: server: wsplan never starts,
// signals or stops it. One probe handshake per URL comes first; a target
// that does not upgrade fails its rows with the reason.
func (e *runner) external(ctx context.Context, srv plan.Server) {
	res, err := e.externalResources(ctx, srv)
	if err != nil {
		e.failRest(srv, 0, err.Error(), "")
		return
	}
	addrs := make([]string, len(srv.Targets))
	hs := make([]handshake, len(srv.Targets))
	for i, t := range srv.Targets {
		addrs[i] = t.Addr
		h, err := targetHandshake(srv, t)
		if err != nil {
			e.failRest(srv, 0, err.Error(), "")
			return
		}
		hs[i] = h
		if err := probe(ctx, h); err != nil {
			if ctx.Err() != nil {
				e.failRest(srv, 0, stopReason(ctx), "")
				return
			}
			e.failRest(srv, 0, fmt.Sprintf("target %s: %v", t.URL, err), "")
			return
		}
	}
	e.o.Notice("%s: %d url target(s), not started by wsplan; server resources: %s", srv.Name, len(addrs), res.describe())
	drv, err := e.driver(srv, addrs)
	if err != nil {
		e.failRest(srv, 0, "client: "+err.Error(), "")
		return
	}
	defer func() {
		if err := drv.Close(); err != nil {
			e.o.Notice("%s: closing client: %v", srv.Name, err)
		}
	}()
	var proc serverProc = running{}
	if res.how == result.ResourcesPID {
		w := watchPID(e.o.Proc, res.pid, res.started)
		defer func() {
			if w, ok := current(proc).(*watchedPID); ok {
				w.close() // the one of the moment, after any restart
			}
		}()
		proc = w
	}
	if e.plan.HasFaults() {
		box := newRestartable(proc, res.pid, res.started, e.restartExternal(srv, hs))
		defer box.close()
		proc, res.box = box, box
	}
	e.phases(ctx, srv, addrs, proc, drv, res)
}

// phases runs every phase of the plan against one server.
func (e *runner) phases(ctx context.Context, srv plan.Server, addrs []string, proc serverProc, drv Driver, res resources) {
	tgt, err := envTarget(srv, addrs)
	if err != nil {
		e.failRest(srv, 0, err.Error(), "")
		return
	}
	mem := e.memReader(res, drv)
	// The previous server's client garbage goes back to the system first:
	// the client's memory per connection counts this server's connections
	// (a connect phase returns its own garbage when it ends).
	debug.FreeOSMemory()
	base := mem()
	watch := newBlindWatch(srv, drv) // nil for a server wsplan started
	for k, ph := range e.plan.Phases {
		if ctx.Err() != nil {
			e.failRest(srv, k, stopReason(ctx), "")
			return
		}
		if res.box != nil {
			res.follow() // a restart in an earlier phase: the server's new process
			mem = e.memReader(res, drv)
		}
		r, gone := e.phase(ctx, srv, ph, proc, res, drv, watch, &scenarios.Env{Driver: drv, Target: tgt, Mem: mem, Base: base})
		e.add(r)
		if gone != "" {
			e.failRest(srv, k+1, "skipped: "+gone, proc.Tail(2048))
			return
		}
	}
}

// targetHandshake is the probe handshake of one URL of a url: server, with
// the server's handshake options.
func targetHandshake(srv plan.Server, t plan.URLTarget) (handshake, error) {
	sub, err := client.Subprotocols(srv.Subprotocols, srv.Protocol.Options())
	if err != nil {
		return handshake{}, err
	}
	h := handshake{addr: t.Addr, host: t.Host, uri: t.RequestURI, headers: srv.Headers, subprotocols: sub, origin: srv.Origin}
	if t.TLS {
		c := plan.TLSConfig{}
		if srv.TLS != nil {
			c = *srv.TLS
		}
		if c.ServerName == "" {
			host, _, err := net.SplitHostPort(t.Addr)
			if err != nil {
				return h, err
			}
			c.ServerName = host
		}
		cfg, err := wstls.ClientConfig(wstls.ClientOptions{CAFile: c.CAFile, ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify})
		if err != nil {
			return h, err
		}
		h.tls = cfg
	}
	return h, nil
}

// runCA makes the run's CA and server certificate with keys of type key
// (once per run and key type) in the out dir (tls/, or tls/<key>/ for a
// key type other than the default), or in a temporary directory removed
// at the end of the run.
func (e *runner) runCA(key wstls.Key) (wstls.RunCA, error) {
	if ca, ok := e.ca[key]; ok {
		return ca, nil
	}
	dir := e.o.OutDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "wsplan-tls-")
		if err != nil {
			return wstls.RunCA{}, err
		}
		e.cleanup = append(e.cleanup, func() { os.RemoveAll(tmp) })
		dir = tmp
	}
	dir = filepath.Join(dir, "tls")
	if key != wstls.KeyECDSAP256 {
		dir = filepath.Join(dir, string(key))
	}
	ca, err := wstls.NewRunCAKey(dir, key)
	if err != nil {
		return wstls.RunCA{}, err
	}
	if e.ca == nil {
		e.ca = map[wstls.Key]wstls.RunCA{}
	}
	e.ca[key] = ca
	return ca, nil
}

// presetTLS prepares a preset served with tls: true: the run's CA (of the
// plan's tls: certificate key type), the server's certificate arguments,
// and the client's trust in that CA only (unless the plan's tls: ca_file
// says otherwise).
func (e *runner) presetTLS(srv *plan.Server) (args []string, err error) {
	c := plan.TLSConfig{}
	if srv.TLS != nil {
		c = *srv.TLS
	}
	key := wstls.KeyECDSAP256
	if c.Certificate != "" {
		key = wstls.Key(c.Certificate)
	}
	ca, err := e.runCA(key)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	if c.CAFile == "" {
		c.CAFile = ca.CAFile
	}
	srv.TLS = &c
	return []string{"--tls-cert", ca.CertFile, "--tls-key", ca.KeyFile}, nil
}

// readyHandshakes are the probe handshakes of a server wsplan started.
func readyHandshakes(srv plan.Server, addrs []string) ([]handshake, error) {
	sub, err := client.Subprotocols(srv.Subprotocols, srv.Protocol.Options())
	if err != nil {
		return nil, err
	}
	out := make([]handshake, len(addrs))
	for i, a := range addrs {
		out[i] = handshake{addr: a, host: a, uri: srv.Path, headers: srv.Headers, subprotocols: sub, origin: srv.Origin}
		if srv.ServeTLS && srv.TLS != nil {
			host, _, err := net.SplitHostPort(a)
			if err != nil {
				return nil, err
			}
			name := srv.TLS.ServerName
			if name == "" {
				name = host
			}
			cfg, err := wstls.ClientConfig(wstls.ClientOptions{CAFile: srv.TLS.CAFile, ServerName: name, InsecureSkipVerify: srv.TLS.InsecureSkipVerify})
			if err != nil {
				return nil, err
			}
			out[i].tls = cfg
		}
	}
	return out, nil
}
