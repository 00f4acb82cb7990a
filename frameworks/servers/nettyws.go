package servers

import (
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	nettyws "github.com/go-netty/go-netty-ws"

	"github.com/wsplan/wsplan/frameworks"
)

const (
	// nettywsCloseWait bounds how long Close waits for the connection
	// goroutines go-netty runs to notice their connections closed.
	nettywsCloseWait = 5 * time.Second
)

func init() {
	frameworks.Implement(frameworks.Nettyws, frameworks.Impl{Start: startNettyws, Broadcast: startNettywsBroadcast})
}

// startNettyws serves go-netty-ws with OnData writing every message back.
func startNettyws(cfg frameworks.Config) (frameworks.Server, error) {
	return startNettywsWith(cfg, nettywsHooks{
		data: func(c nettyws.Conn, data []byte) {
			// A failed write closes the channel inside go-netty.
			_ = c.Write(data)
		},
	})
}

// nettywsHooks are what startNettywsWith's two servers do differently.
type nettywsHooks struct {
	// data is the Websocket's OnData: a message arrived on c.
	data func(c nettyws.Conn, data []byte)
	// request, when set, sees each upgrade request before the upgrade;
	// what it writes into r.Header, the connection's Header returns.
	request func(r *http.Request)
	// opened, when set, is called when c is open (OnOpen: on c's channel
	// goroutine, before any OnData, and before the upgrade handler
	// returns).
	opened func(c nettyws.Conn)
	// closed, when set, is called when c has closed (OnClose).
	closed func(c nettyws.Conn)
}

// startNettywsWith serves go-netty-ws on net/http (the Websocket's upgrade
// handler on cfg.Path of a server on SO_REUSEPORT listeners; go-netty-ws's
// own Listen opens a plain listener per URL and sleeps a second per
// listener). Each connection is a go-netty channel with a read goroutine
// that reads a whole message into a buffer and calls OnData (hooks.data):
// NewWebsocket(WithBinary() unless message_type=text,
// WithNoDelay(nodelay), WithBufferSize(read_buffer, 0)).
//
// go-netty-ws fixes the opcode per server, not per message: it writes
// every message as text, or as binary with WithBinary(), and it does not
// tell OnData which opcode a message came with. A message of the other type
// is discarded and answered with close 1003 (unsupported data). So this
// server echoes only message_type messages with the same opcode; the
// published benchmark sent binary messages only. go-netty answers pings
// with pongs and echoes close frames. compression is refused
// (Limits.NoCompression).
func startNettywsWith(cfg frameworks.Config, hooks nettywsHooks) (frameworks.Server, error) {
	if cfg.Bool("compression") {
		return nil, fmt.Errorf("compression: %w (go-netty-ws compresses without regard to negotiation)", ErrUnsupported)
	}
	opts := []nettyws.Option{
		nettyws.WithNoDelay(cfg.Bool("nodelay")),
		nettyws.WithBufferSize(cfg.ReadBuffer(), 0),
	}
	if cfg.String("message_type") == frameworks.NettywsBinary {
		opts = append(opts, nettyws.WithBinary())
	}
	ws := nettyws.NewWebsocket(opts...)
	s := &nettywsServer{ws: ws}
	ws.OnOpen = func(c nettyws.Conn) {
		s.open.Add(1)
		if hooks.opened != nil {
			hooks.opened(c)
		}
	}
	ws.OnClose = func(c nettyws.Conn, _ error) {
		if hooks.closed != nil {
			hooks.closed(c)
		}
		s.open.Add(-1)
	}
	ws.OnData = hooks.data
	hs, err := startHTTP(cfg, func(_ *httpServer, w http.ResponseWriter, r *http.Request) {
		if hooks.request != nil {
			hooks.request(r)
		}
		// On success the connection runs on its own go-netty channel
		// goroutine, which ws.Close ends. On failure gobwas/ws has answered
		// with an HTTP error.
		_, _ = ws.UpgradeHTTP(w, r)
	})
	if err != nil {
		// Nothing was upgraded; Close releases the Websocket's context.
		_ = ws.Close()
		return nil, err
	}
	s.http = hs
	return s, nil
}

// nettywsServer is the net/http server doing the upgrades plus the
// go-netty-ws Websocket serving the connections.
type nettywsServer struct {
	http *httpServer
	ws   *nettyws.Websocket
	open atomic.Int64 // channels between OnOpen and OnClose
}

// Close stops the listeners, refuses further upgrades, sends close 1000 on
// every connection and closes it, then waits up to 5 s for go-netty's
// channel goroutines to finish.
func (s *nettywsServer) Close() error {
	err := s.http.Close()
	// Websocket.Close always returns nil.
	_ = s.ws.Close()
	deadline := time.Now().Add(nettywsCloseWait)
	for s.open.Load() > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("nettyws: %d connections still open %v after close", s.open.Load(), nettywsCloseWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return err
}

// nettywsRoom is where a broadcast connection belongs (its Userdata).
type nettywsRoom struct {
	room    string
	include bool
}

// The request headers that carry a broadcast connection's room and
// include_sender from the upgrade handler to OnOpen: go-netty-ws shows its
// handlers the upgrade request's header (Conn.Header), not its URL. The
// handler sets them, replacing any a client sent.
const (
	nettywsRoomHeader    = "Wsplan-Room"
	nettywsIncludeHeader = "Wsplan-Include-Sender"
)

// startNettywsBroadcast serves BroadcastPath: the upgrade handler copies
// the room and include_sender into the request's header, OnOpen joins the
// room before the connection's first read, and OnData writes each message
// to every member with Write, in turn (no pre-encoded message in
// go-netty-ws).
func startNettywsBroadcast(cfg frameworks.Config) (frameworks.Server, error) {
	var rooms hub[nettyws.Conn]
	return startNettywsWith(cfg, nettywsHooks{
		request: func(r *http.Request) {
			room, include := roomOf(r)
			r.Header.Set(nettywsRoomHeader, room)
			r.Header.Set(nettywsIncludeHeader, strconv.FormatBool(include))
		},
		opened: func(c nettyws.Conn) {
			m := &nettywsRoom{room: c.Header().Get(nettywsRoomHeader), include: c.Header().Get(nettywsIncludeHeader) != "false"}
			c.SetUserdata(m)
			rooms.join(m.room, c)
		},
		closed: func(c nettyws.Conn) {
			if m, ok := c.Userdata().(*nettywsRoom); ok {
				rooms.leave(m.room, c)
			}
		},
		data: func(c nettyws.Conn, data []byte) {
			m, ok := c.Userdata().(*nettywsRoom)
			if !ok {
				return
			}
			for _, to := range rooms.members(nil, m.room, c, m.include) {
				// A failed member is closed by go-netty-ws and leaves in OnClose.
				_ = to.Write(data)
			}
		},
	})
}
