package autobahn

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// permessage-deflate (RFC 7692) for sections 12 and 13.

// deflateOffer is one permessage-deflate offer of the client, with
// Autobahn's PerMessageDeflateOffer parameters and defaults: the client
// accepts client_no_context_takeover and client_max_window_bits from the
// server, and may request server_no_context_takeover and
// server_max_window_bits.
type deflateOffer struct {
	requestNoContextTakeover bool // server_no_context_takeover
	requestMaxWindowBits     int  // server_max_window_bits=N; 0 = not requested
}

func (o deflateOffer) String() string {
	s := "permessage-deflate; client_no_context_takeover; client_max_window_bits"
	if o.requestNoContextTakeover {
		s += "; server_no_context_takeover"
	}
	if o.requestMaxWindowBits != 0 {
		s += "; server_max_window_bits=" + strconv.Itoa(o.requestMaxWindowBits)
	}
	return s
}

func offersHeader(offers []deflateOffer) string {
	var parts []string
	for _, o := range offers {
		parts = append(parts, o.String())
	}
	return strings.Join(parts, ", ")
}

// deflateParams is what the server's response settled.
type deflateParams struct {
	serverNoContextTakeover bool
	clientNoContextTakeover bool
	serverMaxWindowBits     int // 0: not given (15)
	clientMaxWindowBits     int // 0: not given (15)
}

// parseDeflateResponse parses the server's Sec-WebSocket-Extensions answer.
// It must name exactly one permessage-deflate with known, well-formed
// parameters, each at most once (RFC 7692 7.1).
func parseDeflateResponse(h string) (deflateParams, error) {
	var p deflateParams
	exts := strings.Split(h, ",")
	if len(exts) != 1 {
		return p, fmt.Errorf("server accepted %d extensions %q, want one permessage-deflate", len(exts), h)
	}
	parts := strings.Split(exts[0], ";")
	if strings.TrimSpace(parts[0]) != "permessage-deflate" {
		return p, fmt.Errorf("server accepted extension %q that was not offered", strings.TrimSpace(parts[0]))
	}
	seen := map[string]bool{}
	for _, param := range parts[1:] {
		name, val, hasVal := strings.Cut(strings.TrimSpace(param), "=")
		name = strings.TrimSpace(name)
		val = strings.Trim(strings.TrimSpace(val), `"`)
		if seen[name] {
			return p, fmt.Errorf("permessage-deflate parameter %s given twice", name)
		}
		seen[name] = true
		bits := func() (int, error) {
			n, err := strconv.Atoi(val)
			if !hasVal || err != nil || n < 8 || n > 15 {
				return 0, fmt.Errorf("permessage-deflate %s=%q: must be 8-15", name, val)
			}
			return n, nil
		}
		var err error
		switch name {
		case "server_no_context_takeover":
			p.serverNoContextTakeover = true
		case "client_no_context_takeover":
			p.clientNoContextTakeover = true
		case "server_max_window_bits":
			p.serverMaxWindowBits, err = bits()
		case "client_max_window_bits":
			p.clientMaxWindowBits, err = bits()
		default:
			err = fmt.Errorf("permessage-deflate parameter %q unknown", name)
		}
		if err != nil {
			return p, err
		}
	}
	// Autobahn's client accepts any well-formed response, even one that
	// ignores a requested server_max_window_bits (RFC 7692 7.1.2.1 says
	// the server then declines that offer); so does this one.
	return p, nil
}

// deflater compresses and inflates messages on one connection.
type deflater struct {
	p    deflateParams
	w    *flate.Writer
	wbuf bytes.Buffer
	r    io.ReadCloser
	hist []byte // last 32 KiB the server sent, the inflate window under context takeover
}

func newDeflater(p deflateParams) (*deflater, error) {
	d := &deflater{p: p}
	level := flate.BestSpeed
	if p.clientMaxWindowBits != 0 && p.clientMaxWindowBits < 15 {
		// Go's flate always uses a 32 KiB window; Huffman-only output
		// has no back-references, so it fits any window.
		level = flate.HuffmanOnly
	}
	w, err := flate.NewWriter(&d.wbuf, level)
	if err != nil {
		return nil, err
	}
	d.w = w
	return d, nil
}

// tail is the sync-flush marker RFC 7692 7.2.1 strips from each message.
var tail = []byte{0x00, 0x00, 0xff, 0xff}

// compress returns the message payload compressed. Under context takeover
// the writer keeps its window from message to message.
func (d *deflater) compress(msg []byte) ([]byte, error) {
	d.wbuf.Reset()
	if d.p.clientNoContextTakeover {
		d.w.Reset(&d.wbuf)
	}
	if _, err := d.w.Write(msg); err != nil {
		return nil, err
	}
	if err := d.w.Flush(); err != nil {
		return nil, err
	}
	out := d.wbuf.Bytes()
	if !bytes.HasSuffix(out, tail) {
		return nil, errors.New("deflate: flush did not end in 00 00 ff ff")
	}
	return bytes.Clone(out[:len(out)-4]), nil
}

// inflate decompresses one message from the server.
func (d *deflater) inflate(data []byte) ([]byte, error) {
	// The stripped tail, then an empty final stored block so the reader
	// ends cleanly.
	in := io.MultiReader(bytes.NewReader(data), bytes.NewReader([]byte{0x00, 0x00, 0xff, 0xff, 0x01, 0x00, 0x00, 0xff, 0xff}))
	var dict []byte
	if !d.p.serverNoContextTakeover {
		dict = d.hist
	}
	if d.r == nil {
		d.r = flate.NewReader(in)
	}
	if err := d.r.(flate.Resetter).Reset(in, dict); err != nil {
		return nil, err
	}
	out, err := io.ReadAll(d.r)
	if err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	if !d.p.serverNoContextTakeover {
		d.hist = append(d.hist, out...)
		if len(d.hist) > 32<<10 {
			d.hist = bytes.Clone(d.hist[len(d.hist)-32<<10:])
		}
	}
	return out, nil
}
