package frameworks

import (
	"bufio"
	"compress/flate"
	"io"
	"net"
	"net/http"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsflate"
	"github.com/gobwas/ws/wsutil"
)

func init() {
	Register(Adapter{
		Name:      "gobwas",
		Library:   "github.com/gobwas/ws",
		Doc:       "net/http UpgradeHTTP, goroutine per connection, wsutil.ReadClientData / WriteServerMessage; read_buffer 0 = read frames unbuffered",
		Start:     startGobwas,
		Broadcast: &Broadcast{Doc: "ws.CompileFrame once per message, the same bytes written to each member's net.Conn in turn", Start: startGobwasBroadcast},
	})
	RegisterPreset(Preset{
		Name:      "gobwas",
		Framework: "gobwas",
		Doc:       "gobwas/ws on net/http, goroutine per connection, wsutil helpers",
	})
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

// startGobwas serves gobwas/ws on net/http: ws.UpgradeHTTP, then one
// goroutine per connection (the handler's) loops on wsutil.ReadClientData,
// which allocates each message and answers pings and close frames itself,
// and wsutil.WriteServerMessage.
//
// read_buffer differs from the other adapters: at 0 (the default) frames are
// read straight from the connection, as the published runs did (a header
// and its payload take separate reads); a positive value puts a bufio.Reader
// of that size in between. The payload hint is not used.
//
// With compression, permessage-deflate is negotiated without context
// takeover (wsflate.DefaultParameters) and the loop reads through a
// wsutil.Reader with the wsflate message state, since ReadClientData knows
// no extensions.
func startGobwas(cfg Config) (Server, error) {
	bufSize := cfg.Int("read_buffer")
	compression := cfg.Bool("compression")
	return startHTTP(cfg, func(s *httpServer, w http.ResponseWriter, r *http.Request) {
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
		var rw io.ReadWriter = conn
		if src != io.Reader(conn) {
			rw = struct {
				io.Reader
				io.Writer
			}{src, conn}
		}
		if ext != nil {
			if _, ok := ext.Accepted(); ok {
				// The error only ends the connection.
				_ = gobwasDeflateEcho(rw)
				return
			}
		}
		for {
			msg, op, err := wsutil.ReadClientData(rw)
			if err != nil {
				return
			}
			if err := wsutil.WriteServerMessage(rw, op, msg); err != nil {
				return
			}
		}
	})
}

// gobwasDeflateEcho is ReadClientData/WriteServerMessage with
// permessage-deflate: messages that arrive compressed are inflated, and
// every reply is sent compressed.
func gobwasDeflateEcho(rw io.ReadWriter) error {
	var state wsflate.MessageState
	ctl := wsutil.ControlFrameHandler(rw, ws.StateServerSide)
	rd := &wsutil.Reader{
		Source:         rw,
		State:          ws.StateServerSide | ws.StateExtended,
		Extensions:     []wsutil.RecvExtension{&state},
		OnIntermediate: ctl,
	}
	for {
		hdr, err := rd.NextFrame()
		if err != nil {
			return err
		}
		if hdr.OpCode.IsControl() {
			if err := ctl(hdr, rd); err != nil {
				return err
			}
			continue
		}
		payload, err := io.ReadAll(rd)
		if err != nil {
			return err
		}
		if state.IsCompressed() {
			if payload, err = gobwasDeflate.Decompress(payload); err != nil {
				return err
			}
		}
		f, err := gobwasDeflate.CompressFrame(ws.NewFrame(hdr.OpCode, true, payload))
		if err != nil {
			return err
		}
		if err := ws.WriteFrame(rw, f); err != nil {
			return err
		}
	}
}

// startGobwasBroadcast serves BroadcastPath the gobwas way: each message
// is compiled once into a server frame (ws.CompileFrame) and the same
// bytes are written to every member's net.Conn in turn (net.Conn.Write is
// safe for concurrent use, so frames never interleave; it blocks while a
// member does not read). Compression is not negotiated here.
func startGobwasBroadcast(cfg Config) (Server, error) {
	bufSize := cfg.Int("read_buffer")
	var rooms hub[net.Conn]
	return startHTTP(cfg, func(s *httpServer, w http.ResponseWriter, r *http.Request) {
		room, include := roomOf(r)
		conn, brw, _, err := ws.DefaultHTTPUpgrader.Upgrade(r, w)
		if err != nil {
			if conn != nil {
				conn.Close() // hijacked: gobwas wrote the error response
			}
			return
		}
		if !s.conns.add(conn) {
			return
		}
		defer s.conns.done(conn)
		var src io.Reader = conn
		if brw.Reader.Buffered() > 0 {
			src = brw.Reader
		}
		if bufSize > 0 {
			src = bufio.NewReaderSize(src, bufSize)
		}
		rw := struct {
			io.Reader
			io.Writer
		}{src, conn}
		rooms.join(room, conn)
		defer rooms.leave(room, conn)
		var to []net.Conn
		for {
			msg, op, err := wsutil.ReadClientData(rw)
			if err != nil {
				return
			}
			frame, err := ws.CompileFrame(ws.NewFrame(op, true, msg))
			if err != nil {
				return
			}
			to = rooms.members(to[:0], room, conn, include)
			for _, m := range to {
				// A failed member ends in its own read loop.
				_, _ = m.Write(frame)
			}
		}
	})
}
