package servers

import (
	"bufio"
	"compress/flate"
	"io"
	"net"
	"net/http"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsflate"
	"github.com/gobwas/ws/wsutil"

	"github.com/wsplan/wsplan/frameworks"
)

func init() {
	frameworks.Implement(frameworks.Gobwas, frameworks.Impl{Start: startGobwas, Broadcast: startGobwasBroadcast})
}

// gobwasDeflate compresses at BestSpeed, the level gorilla and gws use,
// rather than wsflate.DefaultHelper's 9.
var gobwasDeflate = wsflate.Helper{
	Compressor: func(w io.Writer) wsflate.Compressor {
		f, _ := flate.NewWriter(w, flate.BestSpeed) // errors only for an invalid level
		return f
	},
	Decompressor: func(r io.Reader) wsflate.Decompressor { return flate.NewReader(r) },
}

// startGobwas serves gobwas/ws on net/http: one goroutine per connection
// (the handler's) loops on wsutil.ReadClientData, which allocates each
// message and answers pings and close frames itself, and
// wsutil.WriteServerMessage. With permessage-deflate negotiated it reads
// through gobwasConn.deflateReader and sends every reply compressed.
func startGobwas(cfg frameworks.Config) (frameworks.Server, error) {
	return startGobwasWith(cfg, func(*http.Request) func(gobwasConn) {
		return func(c gobwasConn) {
			read := c.reader()
			for {
				msg, op, err := read()
				if err != nil {
					return
				}
				if !c.deflate {
					if err := wsutil.WriteServerMessage(c.rw, op, msg); err != nil {
						return
					}
					continue
				}
				f, err := gobwasDeflate.CompressFrame(ws.NewFrame(op, true, msg))
				if err != nil {
					return
				}
				if err := ws.WriteFrame(c.rw, f); err != nil {
					return
				}
			}
		}
	})
}

// gobwasConn is an upgraded connection of startGobwasWith.
type gobwasConn struct {
	net.Conn
	// rw reads through the hijacked or read_buffer reader and writes to
	// the connection.
	rw io.ReadWriter
	// deflate is set when permessage-deflate was negotiated.
	deflate bool
}

// startGobwasWith serves gobwas/ws on net/http: ws.UpgradeHTTP, then what
// serve returned for the request runs on the connection in the handler's
// goroutine.
//
// read_buffer differs from the other adapters: at 0 (the default) frames are
// read straight from the connection, as the published runs did (a header
// and its payload take separate reads); a positive value puts a bufio.Reader
// of that size in between. The payload hint is not used.
//
// With compression, permessage-deflate is negotiated without context
// takeover (wsflate.DefaultParameters).
func startGobwasWith(cfg frameworks.Config, serve func(*http.Request) func(gobwasConn)) (frameworks.Server, error) {
	bufSize := cfg.Int("read_buffer")
	compression := cfg.Bool("compression")
	return startHTTP(cfg, func(s *httpServer, w http.ResponseWriter, r *http.Request) {
		run := serve(r)
		var ext *wsflate.Extension
		up := ws.DefaultHTTPUpgrader
		if compression {
			ext = &wsflate.Extension{Parameters: wsflate.DefaultParameters}
			up.Negotiate = ext.Negotiate
		}
		conn, brw, _, err := up.Upgrade(r, w)
		if err != nil {
			if conn != nil {
				conn.Close() // hijacked: gobwas wrote the error response, net/http no longer closes it
			}
			return
		}
		if !s.conns.add(conn) {
			return
		}
		defer s.conns.done(conn)
		// Bytes a client sent right behind its request (RFC 6455 says it
		// must wait, but) sit in the hijacked reader: read through it then.
		var src io.Reader = conn
		if brw.Reader.Buffered() > 0 {
			src = brw.Reader
		}
		if bufSize > 0 {
			src = bufio.NewReaderSize(src, bufSize)
		}
		c := gobwasConn{Conn: conn, rw: conn}
		if src != io.Reader(conn) {
			c.rw = struct {
				io.Reader
				io.Writer
			}{src, conn}
		}
		if ext != nil {
			_, c.deflate = ext.Accepted()
		}
		run(c)
	})
}

// reader returns the connection's message reader: wsutil.ReadClientData,
// or, with permessage-deflate, deflateReader.
func (c gobwasConn) reader() func() ([]byte, ws.OpCode, error) {
	if c.deflate {
		return c.deflateReader()
	}
	return func() ([]byte, ws.OpCode, error) { return wsutil.ReadClientData(c.rw) }
}

// deflateReader is ReadClientData with permessage-deflate (which
// ReadClientData does not know): a wsutil.Reader with the wsflate message
// state; messages that arrive compressed are inflated. Control frames are
// answered as ReadClientData answers them.
func (c gobwasConn) deflateReader() func() ([]byte, ws.OpCode, error) {
	var state wsflate.MessageState
	ctl := wsutil.ControlFrameHandler(c.rw, ws.StateServerSide)
	rd := &wsutil.Reader{
		Source:         c.rw,
		State:          ws.StateServerSide | ws.StateExtended,
		Extensions:     []wsutil.RecvExtension{&state},
		OnIntermediate: ctl,
	}
	return func() ([]byte, ws.OpCode, error) {
		for {
			hdr, err := rd.NextFrame()
			if err != nil {
				return nil, 0, err
			}
			if hdr.OpCode.IsControl() {
				if err := ctl(hdr, rd); err != nil {
					return nil, 0, err
				}
				continue
			}
			payload, err := io.ReadAll(rd)
			if err != nil {
				return nil, 0, err
			}
			if state.IsCompressed() {
				if payload, err = gobwasDeflate.Decompress(payload); err != nil {
					return nil, 0, err
				}
			}
			return payload, hdr.OpCode, nil
		}
	}
}

// startGobwasBroadcast serves BroadcastPath the gobwas way: each message
// is compiled once into a server frame (ws.CompileFrame; once more,
// compressed, when a member negotiated permessage-deflate) and the same
// bytes are written to every member's net.Conn in turn (net.Conn.Write is
// safe for concurrent use, so frames never interleave; it blocks while a
// member does not read).
func startGobwasBroadcast(cfg frameworks.Config) (frameworks.Server, error) {
	var rooms hub[*gobwasConn]
	return startGobwasWith(cfg, func(r *http.Request) func(gobwasConn) {
		room, include := roomOf(r)
		return func(c gobwasConn) {
			me := &c
			rooms.join(room, me)
			defer rooms.leave(room, me)
			read := c.reader()
			var to []*gobwasConn
			for {
				msg, op, err := read()
				if err != nil {
					return
				}
				to = rooms.members(to[:0], room, me, include)
				plain, deflated, err := gobwasFrames(ws.NewFrame(op, true, msg), to)
				if err != nil {
					return
				}
				for _, m := range to {
					frame := plain
					if m.deflate {
						frame = deflated
					}
					// A failed member ends in its own read loop.
					_, _ = m.Write(frame)
				}
			}
		}
	})
}

// gobwasFrames compiles f once for all members: plain, and compressed
// (deflated) when one of them negotiated permessage-deflate.
func gobwasFrames(f ws.Frame, members []*gobwasConn) (plain, deflated []byte, err error) {
	if plain, err = ws.CompileFrame(f); err != nil {
		return nil, nil, err
	}
	for _, m := range members {
		if m.deflate {
			if f, err = gobwasDeflate.CompressFrame(f); err != nil {
				return nil, nil, err
			}
			deflated, err = ws.CompileFrame(f)
			return plain, deflated, err
		}
	}
	return plain, nil, nil
}
