package servers

import (
	"errors"
	"net"
	"sync"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/wsplan/wsplan/frameworks"
)

func init() {
	frameworks.Implement(frameworks.Fasthttp, frameworks.Impl{Start: startFasthttp, Broadcast: startFasthttpBroadcast})
	lingeringGoroutines(frameworks.Fasthttp, "fasthttp refreshes its cached Date header from a goroutine started on the first request and never stopped",
		"github.com/valyala/fasthttp.updateServerDate.func1")
	lingeringGoroutines(frameworks.Fasthttp, "each Serve's worker-pool janitor sleeps MaxIdleWorkerDuration (10 s) between cleanups and sees the stop only after waking",
		"github.com/valyala/fasthttp.(*workerPool).Start.func2")
}

// fasthttpServer is a fasthttp.Server on several listeners. fasthttp runs a
// hijacked connection's handler in its own goroutine and forgets it, and
// the net.Conn it passes in ignores Close (fasthttp closes the socket after
// the handler returns), so the handlers register the underlying socket
// with conns for Close to end them.
type fasthttpServer struct {
	srv   *fasthttp.Server
	lns   []net.Listener
	conns tracker
	wg    sync.WaitGroup // one per Serve goroutine
}

// startFasthttp serves fasthttp/websocket with the gorilla loop: one
// goroutine per connection (fasthttp's hijack goroutine) reads a message
// with NextReader into a per-connection buffer of read_buffer bytes (grown
// when a message is larger) and writes it back with WriteMessage. Pings are
// answered and close frames echoed by the library's default handlers. The
// upgrader's I/O buffers are left at 0 (4 KiB).
func startFasthttp(cfg frameworks.Config) (frameworks.Server, error) {
	bufSize := cfg.ReadBuffer()
	return startFasthttpWith(cfg, func(*fasthttp.RequestCtx) func(*websocket.Conn) {
		return func(c *websocket.Conn) { echoLoop(c, bufSize) }
	})
}

// startFasthttpBroadcast serves BroadcastPath as gorilla does: each
// message is encoded once as a websocket.PreparedMessage and written to
// every member of the room in turn from the publisher's goroutine.
func startFasthttpBroadcast(cfg frameworks.Config) (frameworks.Server, error) {
	var rooms hub[*preparedMember[*websocket.Conn]]
	return startFasthttpWith(cfg, func(ctx *fasthttp.RequestCtx) func(*websocket.Conn) {
		args := ctx.QueryArgs()
		room, include := roomQuery(func(k string) string { return string(args.Peek(k)) })
		return func(c *websocket.Conn) { preparedLoop(&rooms, c, room, include, websocket.NewPreparedMessage) }
	})
}

// startFasthttpWith is the fasthttp server and upgrader of startFasthttp
// and startFasthttpBroadcast; for each upgrade request, serve returns what
// runs on the upgraded connection (it reads the request before the upgrade
// hands the connection to its own goroutine).
func startFasthttpWith(cfg frameworks.Config, serve func(*fasthttp.RequestCtx) func(*websocket.Conn)) (frameworks.Server, error) {
	lns, err := listenCfg(cfg)
	if err != nil {
		return nil, err
	}
	s := &fasthttpServer{lns: lns}
	up := &websocket.FastHTTPUpgrader{
		CheckOrigin:       func(*fasthttp.RequestCtx) bool { return true },
		EnableCompression: cfg.Bool("compression"),
	}
	s.srv = &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			if string(ctx.Path()) != cfg.Path {
				ctx.Error("not found", fasthttp.StatusNotFound)
				return
			}
			run := serve(ctx)
			// On error Upgrade has written the HTTP error response.
			_ = up.Upgrade(ctx, func(c *websocket.Conn) {
				raw := c.NetConn()
				if u, ok := raw.(interface{ UnsafeConn() net.Conn }); ok {
					raw = u.UnsafeConn()
				}
				if !s.conns.add(raw) {
					return
				}
				defer s.conns.done(raw)
				run(c)
			})
		},
	}
	serveEach(lns, &s.wg, s.srv.Serve) // Serve returns when Shutdown closes ln
	return s, nil
}

// Close closes the listeners and the connections still in HTTP
// (Shutdown), then the upgraded ones, and waits for their goroutines.
// Shutdown only closes the listeners Serve has registered, so a Close right
// after Start closes them itself too.
func (s *fasthttpServer) Close() error {
	err := s.srv.Shutdown()
	closeListeners(s.lns)
	s.conns.closeAll()
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
