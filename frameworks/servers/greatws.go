package servers

import (
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/antlabs/greatws"

	"github.com/wsplan/wsplan/frameworks"
)

func init() {
	frameworks.Implement(frameworks.Greatws, frameworks.Impl{Start: startGreatws, Broadcast: startGreatwsBroadcast})
	lingeringGoroutines(frameworks.Greatws,
		"greatws has no way to stop a MultiEventLoop (its epoll loops, parse loops and task pools run for the life of the process); "+
			"the adapter starts one per distinct loop configuration and reuses it for every later server in the process",
		"github.com/antlabs/greatws.(*EventLoop).Loop",
		"github.com/antlabs/greatws.(*taskParseNode).run",
		"github.com/antlabs/greatws/task/stream2.(*stream2).mainLoopLinux",
		"github.com/antlabs/greatws/task/stream2.(*stream2).processLong",
		"github.com/antlabs/greatws/task/stream.(*taskStream).loop",
	)
}

// greatwsLoopConfig is what a greatws.MultiEventLoop is built from.
type greatwsLoopConfig struct {
	loops, maxEvents, poolInit, poolMin, poolMax int
}

var (
	greatwsLoopsMu sync.Mutex
	// greatwsLoops holds the event loops started in this process, by
	// configuration. greatws cannot stop them (MultiEventLoop.Free closes
	// the epoll fds under running epoll_wait calls, and a reused fd number
	// would then be polled by the old loop), so they live until the process
	// exits and a later server with the same configuration reuses them. A
	// `wsplan serve` process runs one server, so it starts exactly one.
	greatwsLoops = map[greatwsLoopConfig]*greatws.MultiEventLoop{}
)

// greatwsLoop returns the started event loop for lc, starting it on first use.
func greatwsLoop(lc greatwsLoopConfig) *greatws.MultiEventLoop {
	greatwsLoopsMu.Lock()
	defer greatwsLoopsMu.Unlock()
	if m, ok := greatwsLoops[lc]; ok {
		return m
	}
	m := greatws.NewMultiEventLoopMust(
		greatws.WithEventLoops(lc.loops),
		greatws.WithBusinessGoNum(lc.poolInit, lc.poolMin, lc.poolMax),
		greatws.WithMaxEventNum(lc.maxEvents),
		greatws.WithLogLevel(slog.LevelError),
	)
	// greatws logs to stdout; a server's stdout is not its log.
	m.Logger = slog.New(slog.NewJSONHandler(LogOutput, &slog.HandlerOptions{Level: slog.LevelError}))
	m.Start()
	greatwsLoops[lc] = m
	return m
}

// startGreatws serves greatws with greatwsHandler as every connection's
// callback: it writes text and binary messages back.
func startGreatws(cfg frameworks.Config) (frameworks.Server, error) {
	return startGreatwsWith(cfg, func(h *greatwsHandler, _ *http.Request) greatws.Callback { return h })
}

// startGreatwsWith upgrades on net/http (greatws takes the socket over by
// duplicating its fd) and serves frames on greatws's epoll event loops:
// NewMultiEventLoopMust(WithEventLoops(event_loops),
// WithBusinessGoNum(pool_init, pool_min, pool_max), WithMaxEventNum(max_events))
// as in the published benchmark. Each upgraded connection gets the
// callback returned for its request (UpgradeV2), which must pass OnOpen
// and OnClose on to h, the server's connection set. Pings are answered by
// greatws (WithServerReplyPing: without it greatws hands pings to
// OnMessage and sends no pong), close frames are echoed by greatws.
// TCP_NODELAY is set on the accepted socket, which the duplicated fd
// shares (greatws's own nodelay setting is not implemented).
func startGreatwsWith(cfg frameworks.Config, callback func(h *greatwsHandler, r *http.Request) greatws.Callback) (frameworks.Server, error) {
	lc := greatwsLoopConfig{
		loops:     cfg.Int("event_loops"),
		maxEvents: cfg.Int("max_events"),
		poolInit:  cfg.Int("pool_init"),
		poolMin:   cfg.Int("pool_min"),
		poolMax:   cfg.Int("pool_max"),
	}
	if lc.loops == 0 {
		// greatws's own 0 means one loop, not one per CPU.
		lc.loops = runtime.NumCPU()
	}
	h := &greatwsHandler{conns: map[*greatws.Conn]struct{}{}}
	opts := []greatws.ServerOption{
		greatws.WithServerCallback(h),
		greatws.WithServerMultiEventLoop(greatwsLoop(lc)),
		greatws.WithServerReplyPing(),
	}
	if cfg.String("callback") == frameworks.GreatwsEventLoop {
		opts = append(opts, greatws.WithServerCallbackInEventLoop())
	}
	if !cfg.Bool("nodelay") {
		opts = append(opts, greatws.WithServerTCPDelay())
	}
	if cfg.Bool("compression") {
		opts = append(opts, greatws.WithServerDecompressAndCompress())
	}
	up := greatws.NewUpgrade(opts...)

	s, err := startHTTP(cfg, func(_ *httpServer, w http.ResponseWriter, r *http.Request) {
		// On success greatws has duplicated the socket's fd, closed the
		// hijacked net.Conn and added the connection to an event loop;
		// h tracks it from OnOpen to OnClose.
		if _, err := up.UpgradeV2(w, r, callback(h, r)); err != nil {
			return // greatws has answered with an HTTP error, or the connection is gone
		}
	})
	if err != nil {
		return nil, err
	}
	return &greatwsServer{http: s, h: h}, nil
}

// greatwsServer is the net/http server doing the upgrades plus the
// connections greatws serves.
type greatwsServer struct {
	http *httpServer
	h    *greatwsHandler
}

// Close stops the listeners and closes every upgraded connection (greatws
// closes the fd synchronously). The shared event loop keeps running.
func (s *greatwsServer) Close() error {
	err := s.http.Close()
	s.h.closeAll()
	return err
}

// greatwsHandler is the greatws.Callback of one server: it echoes and keeps
// the set of open connections for Close.
type greatwsHandler struct {
	mu     sync.Mutex
	conns  map[*greatws.Conn]struct{}
	closed bool
}

func (h *greatwsHandler) OnOpen(c *greatws.Conn) {
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.conns[c] = struct{}{}
	}
	h.mu.Unlock()
	if closed {
		// Upgraded while the server was closing: greatws then skips adding
		// the closed connection to its event loop.
		c.Close()
	}
}

func (h *greatwsHandler) OnMessage(c *greatws.Conn, op greatws.Opcode, msg []byte) {
	// Pings (already answered with WithServerReplyPing) and pongs arrive
	// here too; only data messages are echoed.
	if op != greatws.Text && op != greatws.Binary {
		return
	}
	// A failed write closes the connection inside greatws.
	_ = c.WriteMessage(op, msg)
}

func (h *greatwsHandler) OnClose(c *greatws.Conn, _ error) {
	h.mu.Lock()
	delete(h.conns, c)
	h.mu.Unlock()
}

// greatwsCloseWait is how long closeAll lets connections whose clients
// are closing leave on their own event loop before it closes the rest.
const greatwsCloseWait = 300 * time.Millisecond

// closeAll refuses new connections and closes the open ones. A connection
// closed from outside its event loop can make greatws close a stranger's
// fd: the loop may already hold an event for the closed fd, finds no
// connection for it and closes the number (api_epoll.go, v0.2.2), which
// by then may belong to a new connection of any server in the process
// (seen as a client's dial or read ending in EOF). So connections whose
// clients are closing get greatwsCloseWait to be closed by their own loop
// first; only the rest are closed here.
func (h *greatwsHandler) closeAll() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	for deadline := time.Now().Add(greatwsCloseWait); time.Now().Before(deadline); {
		h.mu.Lock()
		n := len(h.conns)
		h.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.mu.Lock()
	conns := make([]*greatws.Conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	// Close calls OnClose, which takes h.mu: close outside the lock.
	for _, c := range conns {
		c.Close()
	}
}

// greatwsRoom is one broadcast connection's callback (UpgradeV2): it
// joins its room on open, leaves on close, and writes each message to
// every member with WriteMessage, in turn (greatws has no pre-encoded
// message).
type greatwsRoom struct {
	h       *greatwsHandler
	rooms   *hub[*greatws.Conn]
	room    string
	include bool
}

func (g *greatwsRoom) OnOpen(c *greatws.Conn) {
	g.h.OnOpen(c)
	g.rooms.join(g.room, c)
}

func (g *greatwsRoom) OnClose(c *greatws.Conn, err error) {
	g.rooms.leave(g.room, c)
	g.h.OnClose(c, err)
}

func (g *greatwsRoom) OnMessage(c *greatws.Conn, op greatws.Opcode, msg []byte) {
	if op != greatws.Text && op != greatws.Binary {
		return
	}
	for _, to := range g.rooms.members(nil, g.room, c, g.include) {
		// A failed member is closed by greatws and leaves in OnClose.
		_ = to.WriteMessage(op, msg)
	}
}

// startGreatwsBroadcast serves BroadcastPath on the server of
// startGreatws, with a greatwsRoom per connection.
func startGreatwsBroadcast(cfg frameworks.Config) (frameworks.Server, error) {
	var rooms hub[*greatws.Conn]
	return startGreatwsWith(cfg, func(h *greatwsHandler, r *http.Request) greatws.Callback {
		room, include := roomOf(r)
		return &greatwsRoom{h: h, rooms: &rooms, room: room, include: include}
	})
}
