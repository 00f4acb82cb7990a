package servers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/common/config"
	"github.com/cloudwego/hertz/pkg/network"
	"github.com/cloudwego/hertz/pkg/network/netpoll"
	"github.com/cloudwego/hertz/pkg/network/standard"
	"github.com/hertz-contrib/websocket"
	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/frameworks"
)

const (
	// hertzReadMessageAbove is the read buffer size above which a
	// connection reads each message with ReadMessage (a new buffer per
	// message) instead of keeping a read_buffer-byte buffer, as the
	// published server did (its -mrb flag, 4096) so that idle connections
	// do not each hold a large buffer.
	hertzReadMessageAbove = 4096
	// hertzShutdownTimeout bounds how long Close waits for hertz to see its
	// connections end.
	hertzShutdownTimeout = 5 * time.Second
)

func init() {
	frameworks.Implement(frameworks.Hertz, frameworks.Impl{Start: startHertz, Broadcast: startHertzBroadcast})
	lingeringGoroutines(frameworks.Hertz,
		"hertz refreshes its cached Date header from one goroutine per process (protocol.ServerDateOnce), started by the first response and never stopped",
		"github.com/cloudwego/hertz/pkg/protocol.UpdateServerDate.func1")
	lingeringGoroutines(frameworks.Hertz,
		"netpoll polls every connection of the process on its global poller goroutines, started on first use and never stopped",
		"github.com/cloudwego/netpoll.(*defaultPoll).Wait")
}

// startHertz runs one hertz server per address (a hertz server takes one
// listener), each on a SO_REUSEPORT listener opened here, serving
// hertz-contrib/websocket on cfg.Path. Each upgraded connection keeps the
// goroutine hertz ran the handler on: it reads a message with NextReader
// into a read_buffer-byte buffer (grown when a message is larger; above
// 4096 bytes ReadMessage instead, as published) and writes it back with
// WriteMessage. hertz-contrib/websocket answers pings with pongs and echoes
// close frames; the read deadline hertz set for HTTP is cleared.
func startHertz(cfg frameworks.Config) (frameworks.Server, error) {
	bufSize := cfg.ReadBuffer()
	return startHertzWith(cfg, func(*app.RequestContext) func(*websocket.Conn) {
		return func(c *websocket.Conn) { hertzEcho(c, bufSize) }
	})
}

// startHertzWith runs the hertz servers of startHertz; for each upgrade
// request, serve returns what runs on the upgraded connection (on the
// goroutine hertz ran the handler on, after the read timeout is cleared).
func startHertzWith(cfg frameworks.Config, serve func(*app.RequestContext) func(*websocket.Conn)) (frameworks.Server, error) {
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("no listen address")
	}
	// netpoll runs each connection's handler on bytedance/gopkg's global
	// gopool, and an upgraded connection keeps its goroutine. The published
	// servers raised the pool's cap to 1000000 (gopool.SetCap) because
	// older gopkg versions capped it at 10000; gopkg v0.1.3's default cap
	// is math.MaxInt32, so it is left alone here.
	s := &hertzServer{}
	up := websocket.HertzUpgrader{
		CheckOrigin:       func(*app.RequestContext) bool { return true },
		EnableCompression: cfg.Bool("compression"),
	}
	handler := func(_ context.Context, ctx *app.RequestContext) {
		run := serve(ctx) // reads the request before the upgrade hijacks it
		// Upgrade answers a bad handshake with an HTTP error itself.
		_ = up.Upgrade(ctx, func(c *websocket.Conn) {
			nc := c.NetConn()
			if !s.conns.add(nc) {
				return
			}
			defer s.conns.done(nc)
			// hertz-contrib clears the deadline hertz set for HTTP, but
			// netpoll also keeps a per-read timeout (hertz's ReadTimeout,
			// 3 min) that a deadline does not override: an idle
			// connection would be closed. SetReadTimeout(0) clears both.
			if err := nc.(network.Conn).SetReadTimeout(0); err != nil {
				return
			}
			run(c)
		})
	}

	opts := hertzOptions(cfg)
	lns, err := hertzListen(cfg)
	if err != nil {
		return nil, err
	}
	for _, ln := range lns {
		h := server.New(append(opts, server.WithListener(ln))...)
		// By default hertz closes a hijacked connection when the handler
		// returns and makes Close on it a no-op, so Close could not end a
		// connection blocked in a read. With KeepHijackedConns the
		// handler's tracker closes it (after the handler, or from Close);
		// NoHijackConnPool keeps a second Close from reaching a pooled
		// wrapper already handed to another connection.
		h.KeepHijackedConns = true
		h.NoHijackConnPool = true
		h.GET(cfg.Path, handler)
		done := make(chan struct{})
		s.servers = append(s.servers, hertzRun{h, done})
		go func() {
			defer close(done)
			defer recoverNetpollExit(h, ln)
			// Run returns once the listener is closed; an error before
			// that ends this address only.
			_ = h.Run()
		}()
	}
	return s, nil
}

// hertzOptions are the hertz server options of cfg: its transport and,
// on netpoll, nodelay.
func hertzOptions(cfg frameworks.Config) []config.Option {
	opts := []config.Option{server.WithDisablePrintRoute(true)}
	if cfg.String("transport") == frameworks.HertzStandard {
		return append(opts, server.WithTransport(standard.NewTransporter))
	}
	opts = append(opts, server.WithTransport(netpoll.NewTransporter))
	// netpoll sets TCP_NODELAY on every connection and takes the raw
	// listener (it polls its fd), so nodelay=false is applied per
	// connection instead of by a listener wrapper.
	if !cfg.Bool("nodelay") {
		opts = append(opts, server.WithOnAccept(func(c net.Conn) context.Context {
			netpollDelay(c)
			return context.Background()
		}))
	}
	return opts
}

// hertzListen opens a SO_REUSEPORT listener per address; on the standard
// transport each sets TCP_NODELAY as the nodelay option says.
func hertzListen(cfg frameworks.Config) ([]net.Listener, error) {
	lns := make([]net.Listener, 0, len(cfg.Addrs))
	for _, addr := range cfg.Addrs {
		ln, err := listen(addr)
		if err != nil {
			closeListeners(lns)
			return nil, err
		}
		if cfg.String("transport") == frameworks.HertzStandard {
			ln = noDelayListener{Listener: ln, noDelay: cfg.Bool("nodelay")}
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// netpollExit is what hertz's netpoll transport panics with where netpoll's
// Serve returns an error, instead of returning it from Run.
const netpollExit = "netpoll server exit"

// recoverNetpollExit, deferred in the goroutine that runs h, turns hertz's
// netpollExit panic into the end of that address, as an error from Run
// would be: netpoll's Serve can fail when the server is closed right after
// it started (seen under load in TestBatchBCloseRightAfterStart). The
// transport and the listener are closed, so the address is free. Any other
// panic goes on.
func recoverNetpollExit(h *server.Hertz, ln net.Listener) {
	r := recover()
	if r == nil {
		return
	}
	if r != netpollExit {
		panic(r)
	}
	_ = h.Close()  // the netpoll listener (a dup of ln's fd), if it still serves
	_ = ln.Close() // closed already unless Serve failed first
}

// hertzEcho echoes messages until the connection fails or closes.
func hertzEcho(c *websocket.Conn, bufSize int) {
	if bufSize > hertzReadMessageAbove {
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(mt, msg); err != nil {
				return
			}
		}
	}
	echoLoop(c, bufSize)
}

// netpollDelay clears TCP_NODELAY on the socket of a hertz netpoll
// connection.
func netpollDelay(c net.Conn) {
	hc, ok := c.(*netpoll.Conn)
	if !ok {
		return
	}
	if fc, ok := hc.Conn.(interface{ Fd() int }); ok {
		// A failure leaves TCP_NODELAY on; the connection still works.
		_ = unix.SetsockoptInt(fc.Fd(), unix.IPPROTO_TCP, unix.TCP_NODELAY, 0)
	}
}

// hertzServer is one hertz server per address plus the upgraded
// connections, which hertz no longer tracks once hijacked.
type hertzServer struct {
	servers []hertzRun
	conns   tracker

	closeOnce sync.Once
	closeErr  error
}

// hertzRun is one hertz server and the end of its Run goroutine.
type hertzRun struct {
	h    *server.Hertz
	done chan struct{}
}

// Close closes the upgraded connections (waiting for their goroutines),
// then shuts every hertz server down: listener closed, remaining HTTP
// connections given up to 5 s in all, Run returned.
// A second Close returns the first one's result.
func (s *hertzServer) Close() error {
	s.closeOnce.Do(func() {
		s.conns.closeAll()
		deadline := time.Now().Add(hertzShutdownTimeout)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		var errs []error
		for _, r := range s.servers {
			// Shutdown does nothing on a server that Run has not marked
			// running yet, and netpoll's does nothing before its event
			// loop serves: Close the transport again until Run returns.
			// Shutdown's error says no more than that (or that HTTP
			// connections outlived ctx); Run returning is what counts.
			_ = r.h.Shutdown(ctx)
			for stopped := false; !stopped; {
				select {
				case <-r.done:
					stopped = true
				case <-time.After(10 * time.Millisecond):
					if time.Now().After(deadline) {
						errs = append(errs, fmt.Errorf("hertz on %s: still serving %v after Close", r.h.GetOptions().Addr, hertzShutdownTimeout))
						stopped = true
						continue
					}
					// Closing a closed transport again is harmless.
					_ = r.h.Close()
				}
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// startHertzBroadcast serves BroadcastPath on the same servers and
// transport as startHertz: each message is encoded once as a
// websocket.PreparedMessage and written to every member of the room in
// turn from the publisher's goroutine.
func startHertzBroadcast(cfg frameworks.Config) (frameworks.Server, error) {
	var rooms hub[*preparedMember[*websocket.Conn]]
	return startHertzWith(cfg, func(ctx *app.RequestContext) func(*websocket.Conn) {
		room, include := roomQuery(ctx.Query)
		return func(c *websocket.Conn) { preparedLoop(&rooms, c, room, include, websocket.NewPreparedMessage) }
	})
}
