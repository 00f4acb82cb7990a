package servers

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/lxzan/gws"

	"github.com/wsplan/wsplan/frameworks"
)

func init() {
	frameworks.Implement(frameworks.Gws, frameworks.Impl{Start: startGws, Broadcast: startGwsBroadcast})
}

// gwsEcho is the event handler: every message is written back with its
// opcode. gws's BuiltinEventHandler answers a ping with an empty pong, so
// OnPing is overridden to return the ping's payload as RFC 6455 requires.
// Close frames are answered by gws itself (with 1000 for a valid code).
type gwsEcho struct{ gws.BuiltinEventHandler }

func (gwsEcho) OnPing(c *gws.Conn, payload []byte) {
	// An error here means the connection is closing; the read loop sees it.
	_ = c.WritePong(payload)
}

func (gwsEcho) OnMessage(c *gws.Conn, m *gws.Message) {
	defer m.Close()
	// A write error closes the connection inside gws (emitError).
	_ = c.WriteMessage(m.Opcode, m.Bytes())
}

// gwsOption is the gws.ServerOption of cfg's options, for both of
// startGwsWith's servers.
func gwsOption(cfg frameworks.Config) *gws.ServerOption {
	return &gws.ServerOption{
		ReadBufferSize:    cfg.ReadBuffer(),
		ParallelEnabled:   cfg.Bool("parallel"),
		ParallelGolimit:   cfg.Int("parallel_golimit"),
		CheckUtf8Enabled:  cfg.Bool("check_utf8"),
		PermessageDeflate: gws.PermessageDeflate{Enabled: cfg.Bool("compression")},
	}
}

// startGws serves gwsEcho on gws's own listener or on net/http as the
// server option says.
func startGws(cfg frameworks.Config) (frameworks.Server, error) {
	return startGwsWith(cfg, gwsEcho{}, nil)
}

// startGwsWith serves h with gwsOption(cfg): on gws's own listener
// (gws.NewServer) or, for server=std, on net/http (gws.NewUpgrader).
// Requests for a path other than cfg.Path are refused by the Authorize
// hook (gws answers 400); session, when set, sees every other upgrade
// request first and may store values in the connection's session.
func startGwsWith(cfg frameworks.Config, h gws.Event, session func(*http.Request, gws.SessionStorage)) (frameworks.Server, error) {
	opt := gwsOption(cfg)
	opt.Authorize = func(r *http.Request, s gws.SessionStorage) bool {
		if r.URL.Path != cfg.Path {
			return false
		}
		if session != nil {
			session(r, s)
		}
		return true
	}
	if cfg.String("server") == "std" {
		return startGwsStd(cfg, gws.NewUpgrader(h, opt))
	}
	return startGwsServer(cfg, gws.NewServer(h, opt))
}

// startGwsStd serves up on net/http; as gws recommends, each connection's
// ReadLoop runs in its own goroutine so the HTTP handler returns.
func startGwsStd(cfg frameworks.Config, up *gws.Upgrader) (frameworks.Server, error) {
	return startHTTP(cfg, func(s *httpServer, w http.ResponseWriter, r *http.Request) {
		socket, err := up.Upgrade(w, r)
		if err != nil {
			return // gws has answered 400 and closed the connection
		}
		if !s.conns.add(socket.NetConn()) {
			return
		}
		go func() {
			defer s.conns.done(socket.NetConn())
			socket.ReadLoop()
		}()
	})
}

// gwsServer runs gws.Server's connection handling (read the HTTP request,
// UpgradeFromConn, ReadLoop, one goroutine per connection) on listeners it
// owns. It does not call Server.RunListener: that loop retries Accept
// forever once its listener is closed (it logs and continues), so it can
// never be stopped.
type gwsServer struct {
	srv     *gws.Server
	lns     []net.Listener
	conns   tracker
	accepts sync.WaitGroup
	bufSize int
}

// startGwsServer serves srv on cfg.Addrs, each connection's HTTP request
// read through a bufio.Reader of read_buffer bytes (gws's ReadBufferSize).
func startGwsServer(cfg frameworks.Config, srv *gws.Server) (frameworks.Server, error) {
	lns, err := listenCfg(cfg)
	if err != nil {
		return nil, err
	}
	s := &gwsServer{srv: srv, lns: lns, bufSize: cfg.ReadBuffer()}
	for _, ln := range lns {
		s.accepts.Add(1)
		go s.accept(ln)
	}
	return s, nil
}

func (s *gwsServer) accept(ln net.Listener) {
	defer s.accepts.Done()
	acceptLoop(ln, func(conn net.Conn) bool {
		if !s.conns.add(conn) {
			return false
		}
		go s.serve(conn)
		return true
	})
}

// serve is gws.Server.RunListener's per-connection goroutine: the bufio
// reader (gws's ReadBufferSize) carries over from the HTTP request to the
// WebSocket reads, and ReadLoop returns it to gws's pool at the end.
func (s *gwsServer) serve(conn net.Conn) {
	defer s.conns.done(conn)
	br := bufio.NewReaderSize(conn, s.bufSize)
	r, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	s.srv.OnRequest(conn, br, r)
}

// Close closes the listeners and every connection, and waits for their
// goroutines.
func (s *gwsServer) Close() error {
	var first error
	for _, ln := range s.lns {
		if err := ln.Close(); err != nil && first == nil {
			first = fmt.Errorf("close listener %s: %w", ln.Addr(), err)
		}
	}
	s.accepts.Wait()
	s.conns.closeAll()
	return first
}

// gwsRooms is the broadcast event handler: a message is encoded once by a
// gws.Broadcaster and queued on every member of its room (Broadcast
// writes through each connection's own asynchronous write queue, so a
// member that does not read never blocks the publisher). The room and
// include_sender come from the upgrade request (Authorize stores them in
// the session).
type gwsRooms struct {
	gwsEcho
	rooms hub[*gws.Conn]
}

func gwsRoom(c *gws.Conn) (room string, include bool) {
	v, _ := c.Session().Load("room")
	i, _ := c.Session().Load("include")
	room, _ = v.(string)
	include, _ = i.(bool)
	return room, include
}

func (h *gwsRooms) OnOpen(c *gws.Conn) {
	room, _ := gwsRoom(c)
	h.rooms.join(room, c)
}

func (h *gwsRooms) OnClose(c *gws.Conn, _ error) {
	room, _ := gwsRoom(c)
	h.rooms.leave(room, c)
}

func (h *gwsRooms) OnMessage(c *gws.Conn, m *gws.Message) {
	defer m.Close()
	room, include := gwsRoom(c)
	b := gws.NewBroadcaster(m.Opcode, m.Bytes())
	defer b.Close()
	for _, to := range h.rooms.members(nil, room, c, include) {
		// A failed member is closed by gws and leaves in OnClose.
		_ = b.Broadcast(to)
	}
}

// startGwsBroadcast serves BroadcastPath with gwsRooms, on the server of
// startGws.
func startGwsBroadcast(cfg frameworks.Config) (frameworks.Server, error) {
	return startGwsWith(cfg, &gwsRooms{}, func(r *http.Request, s gws.SessionStorage) {
		room, include := roomOf(r)
		s.Store("room", room)
		s.Store("include", include)
	})
}
