package servers

import (
	"net/http"
	"slices"
	"strings"

	"github.com/antlabs/quickws"

	"github.com/wsplan/wsplan/frameworks"
)

func init() {
	frameworks.Implement(frameworks.Quickws, frameworks.Impl{Start: startQuickws, Broadcast: startQuickwsBroadcast})
}

// quickwsEcho writes every data message back. With WithServerReplyPing,
// quickws answers a ping itself and then also passes it to OnMessage, as it
// does pongs, so control opcodes are skipped here.
type quickwsEcho struct{}

func (quickwsEcho) OnOpen(*quickws.Conn) {}

func (quickwsEcho) OnMessage(c *quickws.Conn, op quickws.Opcode, data []byte) {
	if op != quickws.Text && op != quickws.Binary {
		return
	}
	// A write error surfaces as a read error in the read loop.
	_ = c.WriteMessage(op, data)
}

func (quickwsEcho) OnClose(*quickws.Conn, error) {}

// startQuickws serves quickws on net/http with quickwsEcho as every
// connection's callback.
func startQuickws(cfg frameworks.Config) (frameworks.Server, error) {
	return startQuickwsWith(cfg, func(*http.Request) quickws.Callback { return quickwsEcho{} })
}

// startQuickwsBroadcast serves BroadcastPath with a quickwsRoom callback
// per connection, on the server of startQuickws.
func startQuickwsBroadcast(cfg frameworks.Config) (frameworks.Server, error) {
	var rooms hub[*quickws.Conn]
	return startQuickwsWith(cfg, func(r *http.Request) quickws.Callback {
		room, include := roomOf(r)
		return &quickwsRoom{rooms: &rooms, room: room, include: include}
	})
}

// startQuickwsWith serves quickws on net/http: quickws.Upgrade with
// WithServerCallback(callback(r)), then the connection's ReadLoop in a
// goroutine of its own (what StartReadLoop does, but waited for on Close);
// the handler returns. quickws quirks handled here:
//   - it answers pings only with WithServerReplyPing, which is always set;
//   - it sets TCP_NODELAY itself (default on), so nodelay=false passes
//     WithServerTCPDelay;
//   - read_buffer sizes its read window ((1024+14) × read_buffer/1024 bytes)
//     or bufio reader (read_buffer bytes); quickws treats anything below
//     1024 as 1024;
//   - with compression it would send compressed frames even to a client
//     that did not offer permessage-deflate, so WithServerDecompressAndCompress
//     is passed only when the request offers it.
func startQuickwsWith(cfg frameworks.Config, callback func(*http.Request) quickws.Callback) (frameworks.Server, error) {
	mult := float32(cfg.ReadBuffer()) / 1024
	opts := []quickws.ServerOption{quickws.WithServerReplyPing()}
	if cfg.String("parse_mode") == "bufio" {
		opts = append(opts, quickws.WithServerBufioParseMode(), quickws.WithServerBufioMultipleTimesPayloadSize(mult))
	} else {
		opts = append(opts, quickws.WithServerWindowsMultipleTimesPayloadSize(mult))
	}
	if !cfg.Bool("nodelay") {
		opts = append(opts, quickws.WithServerTCPDelay())
	}
	deflateOpts := append(slices.Clip(opts), quickws.WithServerDecompressAndCompress())
	compression := cfg.Bool("compression")
	return startHTTP(cfg, func(s *httpServer, w http.ResponseWriter, r *http.Request) {
		o := opts
		if compression && offersDeflate(r) {
			o = deflateOpts
		}
		c, err := quickws.Upgrade(w, r, append(slices.Clip(o), quickws.WithServerCallback(callback(r)))...)
		if err != nil {
			return // quickws has answered the request, or lost it with the connection
		}
		if !s.conns.add(c.NetConn()) {
			return
		}
		go func() {
			defer s.conns.done(c.NetConn())
			// ReadLoop returns the error that ended the connection; it
			// has closed the connection already.
			_ = c.ReadLoop()
		}()
	})
}

// offersDeflate reports whether the upgrade request offers
// permessage-deflate.
func offersDeflate(r *http.Request) bool {
	for _, h := range r.Header.Values("Sec-WebSocket-Extensions") {
		for _, ext := range strings.Split(h, ",") {
			name, _, _ := strings.Cut(ext, ";")
			if strings.EqualFold(strings.TrimSpace(name), "permessage-deflate") {
				return true
			}
		}
	}
	return false
}

// quickwsRoom is one broadcast connection's callback: it joins its room
// on open, leaves on close, and writes each message to every member of
// the room with WriteMessage, in turn (quickws has no pre-encoded
// message; WriteMessage is safe for concurrent use and blocks while a
// member does not read).
type quickwsRoom struct {
	rooms   *hub[*quickws.Conn]
	room    string
	include bool
}

func (q *quickwsRoom) OnOpen(c *quickws.Conn) { q.rooms.join(q.room, c) }

func (q *quickwsRoom) OnClose(c *quickws.Conn, _ error) { q.rooms.leave(q.room, c) }

func (q *quickwsRoom) OnMessage(c *quickws.Conn, op quickws.Opcode, data []byte) {
	if op != quickws.Text && op != quickws.Binary {
		return
	}
	for _, to := range q.rooms.members(nil, q.room, c, q.include) {
		// A failed member ends in its own read loop.
		_ = to.WriteMessage(op, data)
	}
}
