package servers

import (
	"net/http"

	"github.com/gorilla/websocket"

	"github.com/wsplan/wsplan/frameworks"
)

func init() {
	frameworks.Implement(frameworks.Gorilla, frameworks.Impl{Start: startGorilla, Broadcast: startGorillaBroadcast})
}

// startGorilla serves gorilla/websocket on net/http. Each connection has a
// goroutine that reads a message with NextReader into a per-connection
// buffer of read_buffer bytes (grown when a message is larger) and writes it
// back with WriteMessage. gorilla answers pings with pongs and echoes the
// client's close frame by default. The upgrader's own I/O buffers are left
// at 0, so it reuses net/http's 4 KiB buffers.
func startGorilla(cfg frameworks.Config) (frameworks.Server, error) {
	bufSize := cfg.ReadBuffer()
	return startGorillaWith(cfg, func(*http.Request) func(*websocket.Conn) {
		return func(c *websocket.Conn) { echoLoop(c, bufSize) }
	})
}

// startGorillaBroadcast serves BroadcastPath: each connection's goroutine
// reads a message, encodes it once as a websocket.PreparedMessage and
// writes it to every member of its room with WritePreparedMessage, in
// turn and without a write deadline (a member that does not read blocks
// its publisher).
func startGorillaBroadcast(cfg frameworks.Config) (frameworks.Server, error) {
	var rooms hub[*preparedMember[*websocket.Conn]]
	return startGorillaWith(cfg, func(r *http.Request) func(*websocket.Conn) {
		room, include := roomOf(r)
		return func(c *websocket.Conn) { preparedLoop(&rooms, c, room, include, websocket.NewPreparedMessage) }
	})
}

// startGorillaWith is the net/http server and upgrader of startGorilla and
// startGorillaBroadcast; for each upgrade request, serve returns what runs
// on the upgraded connection, in the handler's goroutine.
func startGorillaWith(cfg frameworks.Config, serve func(*http.Request) func(*websocket.Conn)) (frameworks.Server, error) {
	up := &websocket.Upgrader{
		CheckOrigin:       func(*http.Request) bool { return true },
		EnableCompression: cfg.Bool("compression"),
	}
	return startHTTP(cfg, func(s *httpServer, w http.ResponseWriter, r *http.Request) {
		run := serve(r)
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return // Upgrade has written the HTTP error response
		}
		if !s.conns.add(c.NetConn()) {
			return
		}
		defer s.conns.done(c.NetConn())
		run(c)
	})
}
