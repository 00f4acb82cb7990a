package frameworks

import (
	"compress/flate"
	"fmt"
	"io"
	"net/http"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsflate"
	"github.com/gobwas/ws/wsutil"
)

func init() {
	Register(Adapter{
		Name:    "gobwas",
		Library: "github.com/gobwas/ws",
		Doc:     "net/http UpgradeHTTP, goroutine per connection, wsutil.ReadClientData / WriteServerMessage",
		Start:   startGobwas,
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
// and wsutil.WriteServerMessage. It reads straight from the connection with
// no buffer of its own, so a non-zero read_buffer is rejected rather than
// ignored. With compression, permessage-deflate is negotiated without
// context takeover (wsflate.DefaultParameters) and the loop reads through a
// wsutil.Reader with the wsflate message state, since ReadClientData knows
// no extensions.
func startGobwas(cfg Config) (Server, error) {
	if n := cfg.Int("read_buffer"); n != 0 {
		return nil, fmt.Errorf("gobwas: read_buffer=%d has no effect: wsutil.ReadClientData reads frames straight from the connection; leave read_buffer at 0", n)
	}
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
		var rw io.ReadWriter = conn
		if brw.Reader.Buffered() > 0 {
			rw = struct {
				io.Reader
				io.Writer
			}{brw.Reader, conn}
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
