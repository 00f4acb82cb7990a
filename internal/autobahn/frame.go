package autobahn

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
)

// Opcodes of RFC 6455 section 5.2 (3-7 and 11-15 are reserved).
const (
	opCont   byte = 0
	opText   byte = 1
	opBinary byte = 2
	opClose  byte = 8
	opPing   byte = 9
	opPong   byte = 10
)

// Close codes named by the cases.
const (
	closeNormal         = 1000
	closeGoingAway      = 1001
	closeProtocolError  = 1002
	closeInvalidPayload = 1007
)

// maxRecvFrame bounds one received frame's payload; a larger frame is
// treated as a broken stream rather than buffered (the biggest echo a case
// asks for is 16 MiB).
const maxRecvFrame = 64 << 20

// frame is one frame the fuzzing client writes. It may be invalid on
// purpose: any opcode, RSV bits, FIN cleared on a control frame, a control
// payload over 125 bytes. The zero value is not useful; build frames with
// fr, which sets FIN as Autobahn's sendFrame does by default.
type frame struct {
	op      byte
	fin     bool
	rsv     byte   // 0-7, written into bits 4-6 of the first byte
	payload []byte // as sent, before masking
	length  int    // when > 0, payload is repeated to fill this many bytes (Autobahn's payload_len)
	chop    int    // when > 0, the encoded frame is written in writes of at most chop bytes
	sync    bool   // the frame goes out in its own write (Autobahn's sync=True)
}

// fr returns a final (FIN set) frame with opcode op and the payload p.
func fr(op byte, p string) frame { return frame{op: op, fin: true, payload: []byte(p)} }

func (f frame) noFin() frame         { f.fin = false; return f }
func (f frame) withRSV(r byte) frame { f.rsv = r; return f }
func (f frame) chopped(n int) frame  { f.chop = n; return f }
func (f frame) synced() frame        { f.sync = true; return f }
func (f frame) repeatTo(n int) frame { f.length = n; return f }

// body returns the unmasked payload as it goes on the wire.
func (f frame) body() []byte {
	if f.length <= 0 {
		return f.payload
	}
	b := make([]byte, f.length)
	if len(f.payload) == 0 {
		return b
	}
	for i := 0; i < len(b); i += copy(b[i:], f.payload) {
	}
	return b
}

// encode returns the frame as masked client bytes (RFC 6455 5.3: every
// client frame is masked).
func (f frame) encode() []byte {
	p := f.body()
	key := newKey()
	out := appendHeader(make([]byte, 0, 14+len(p)), f.fin, f.rsv, f.op, len(p), key)
	start := len(out)
	out = append(out, p...)
	mask(out[start:], key, 0)
	return out
}

func newKey() [4]byte {
	var key [4]byte
	binary.LittleEndian.PutUint32(key[:], rand.Uint32())
	return key
}

// appendHeader appends a masked frame header announcing n payload bytes.
func appendHeader(out []byte, fin bool, rsv, op byte, n int, key [4]byte) []byte {
	b0 := op&0x0f | (rsv&0x07)<<4
	if fin {
		b0 |= 0x80
	}
	out = append(out, b0)
	switch {
	case n < 126:
		out = append(out, 0x80|byte(n))
	case n < 1<<16:
		out = append(out, 0x80|126, byte(n>>8), byte(n))
	default:
		out = append(out, 0x80|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	return append(out, key[:]...)
}

// mask XORs b in place with key, b starting at payload offset off.
func mask(b []byte, key [4]byte, off int) {
	for i := range b {
		b[i] ^= key[(off+i)&3]
	}
}

// rxFrame is one frame read from the server.
type rxFrame struct {
	fin     bool
	rsv     byte
	op      byte
	masked  bool
	long    bool // the length used a longer encoding than needed
	payload []byte
}

var errFrameTooBig = errors.New("frame payload over 64 MiB")

// readFrame reads one frame from r and unmasks it if the server masked it.
func readFrame(r *bufio.Reader) (rxFrame, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return rxFrame{}, err
	}
	f := rxFrame{
		fin:    h[0]&0x80 != 0,
		rsv:    (h[0] >> 4) & 0x07,
		op:     h[0] & 0x0f,
		masked: h[1]&0x80 != 0,
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return rxFrame{}, unexpected(err)
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
		f.long = n < 126
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return rxFrame{}, unexpected(err)
		}
		n = binary.BigEndian.Uint64(b[:])
		f.long = n < 1<<16
	}
	if n > maxRecvFrame {
		return rxFrame{}, fmt.Errorf("%w (%d bytes announced)", errFrameTooBig, n)
	}
	var key [4]byte
	if f.masked {
		if _, err := io.ReadFull(r, key[:]); err != nil {
			return rxFrame{}, unexpected(err)
		}
	}
	f.payload = make([]byte, n)
	if _, err := io.ReadFull(r, f.payload); err != nil {
		return rxFrame{}, unexpected(err)
	}
	if f.masked {
		for i := range f.payload {
			f.payload[i] ^= key[i&3]
		}
	}
	return f, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
