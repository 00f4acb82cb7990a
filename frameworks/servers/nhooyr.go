//lint:file-ignore SA1019 nhooyr.io/websocket is marked deprecated (moved to github.com/coder/websocket); this preset measures nhooyr as the published tables did.

package servers

import (
	"context"
	"io"
	"net/http"

	"nhooyr.io/websocket"

	"github.com/wsplan/wsplan/frameworks"
)

func init() {
	frameworks.Implement(frameworks.Nhooyr, frameworks.Impl{Start: startNhooyr, Broadcast: startNhooyrBroadcast})
}

// nhooyrConn lets the tracker close a nhooyr connection, whose net.Conn the
// library keeps to itself, without a close handshake.
type nhooyrConn struct{ c *websocket.Conn }

func (n nhooyrConn) Close() error { return n.c.CloseNow() }

// startNhooyr serves nhooyr.io/websocket on net/http: the handler goroutine
// loops on Reader, Writer with the same type, io.CopyBuffer through a
// per-connection buffer of read_buffer bytes, and Close of the writer. The
// library answers pings and echoes close frames while a Reader is pending,
// and runs one extra goroutine per connection (its timeout loop).
func startNhooyr(cfg frameworks.Config) (frameworks.Server, error) {
	bufSize := cfg.ReadBuffer()
	return startNhooyrWith(cfg, func(*http.Request) func(*websocket.Conn) {
		return func(c *websocket.Conn) {
			ctx := context.Background()
			buf := make([]byte, bufSize)
			for {
				typ, rd, err := c.Reader(ctx)
				if err != nil {
					return
				}
				wr, err := c.Writer(ctx, typ)
				if err != nil {
					return
				}
				if _, err := io.CopyBuffer(wr, rd, buf); err != nil {
					return
				}
				if err := wr.Close(); err != nil {
					return
				}
			}
		}
	})
}

// startNhooyrBroadcast serves BroadcastPath: each connection's goroutine
// reads a message with Read and writes it to every member of its room
// with Write, in turn (nhooyr has no pre-encoded message; Write is safe
// for concurrent use and blocks while a member does not read).
func startNhooyrBroadcast(cfg frameworks.Config) (frameworks.Server, error) {
	var rooms hub[*websocket.Conn]
	return startNhooyrWith(cfg, func(r *http.Request) func(*websocket.Conn) {
		room, include := roomOf(r)
		return func(c *websocket.Conn) {
			rooms.join(room, c)
			defer rooms.leave(room, c)
			ctx := context.Background()
			var to []*websocket.Conn
			for {
				typ, data, err := c.Read(ctx)
				if err != nil {
					return
				}
				to = rooms.members(to[:0], room, c, include)
				for _, m := range to {
					// A failed member ends in its own read loop.
					_ = m.Write(ctx, typ, data)
				}
			}
		}
	})
}

// startNhooyrWith is the net/http server and accept options of startNhooyr
// and startNhooyrBroadcast: origins are not checked; compression
// negotiates permessage-deflate without context takeover; read_limit is
// set on every connection. For each upgrade request, serve returns what
// runs on the accepted connection, in the handler's goroutine.
func startNhooyrWith(cfg frameworks.Config, serve func(*http.Request) func(*websocket.Conn)) (frameworks.Server, error) {
	opts := &websocket.AcceptOptions{InsecureSkipVerify: true, CompressionMode: websocket.CompressionDisabled}
	if cfg.Bool("compression") {
		opts.CompressionMode = websocket.CompressionNoContextTakeover
	}
	limit := int64(cfg.Int("read_limit"))
	if limit == 0 {
		limit = -1
	}
	return startHTTP(cfg, func(s *httpServer, w http.ResponseWriter, r *http.Request) {
		run := serve(r)
		c, err := websocket.Accept(w, r, opts)
		if err != nil {
			return // Accept has written the HTTP error response
		}
		nc := nhooyrConn{c}
		if !s.conns.add(nc) {
			return
		}
		defer s.conns.done(nc)
		c.SetReadLimit(limit)
		run(c)
	})
}
