package wstls

import (
	"crypto/cipher"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Record layer limits (RFC 8446 §5.1-5.2, RFC 5246 §6.2).
const (
	recordHeaderLen = 5
	maxPlaintext    = 16384
	maxCipher13     = maxPlaintext + 256
	maxCipher12     = maxPlaintext + 2048
	tagLen          = 16 // AES-GCM and ChaCha20-Poly1305
)

// TLS record content types.
const (
	recAlert     = 21
	recHandshake = 22
	recAppData   = 23
)

// halfConn is one direction of the fast record layer.
type halfConn struct {
	aead   cipher.AEAD
	seq    uint64
	iv     [12]byte
	nonce  [12]byte // scratch, kept here so that it does not escape per record
	aad    [13]byte // TLS 1.2 additional data scratch
	secret []byte   // TLS 1.3 traffic secret, for KeyUpdate
}

// set13 installs a TLS 1.3 traffic secret.
func (h *halfConn) set13(st suite, secret []byte) error {
	a, iv, err := trafficKeys13(st, secret)
	if err != nil {
		return err
	}
	h.aead, h.secret, h.seq = a, secret, 0
	copy(h.iv[:], iv)
	return nil
}

// setNonce computes the per-record nonce: iv XOR the sequence number
// (RFC 8446 §5.3, RFC 7905 §2).
func (h *halfConn) setNonce() {
	h.nonce = h.iv
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], h.seq)
	for i := range seq {
		h.nonce[4+i] ^= seq[i]
	}
}

// setAAD12 computes TLS 1.2's additional data for a record of typ with n
// bytes of plaintext.
func (h *halfConn) setAAD12(typ byte, n int) {
	binary.BigEndian.PutUint64(h.aad[:8], h.seq)
	h.aad[8] = typ
	h.aad[9], h.aad[10] = 3, 3
	binary.BigEndian.PutUint16(h.aad[11:], uint16(n))
}

// Feed hands in ciphertext read from the socket. The session borrows ct
// (and may decrypt it in place) until Next or ReadPlain reports that it
// needs more input; only then may the caller reuse it.
func (s *Session) Feed(ct []byte) {
	if len(s.in) > 0 { // the caller did not drain the last piece
		s.stash = append(s.stash, s.in...)
	}
	s.in = ct
}

// Next returns the next piece of plaintext, valid until the next call on
// the session. It returns (nil, nil) when the ciphertext fed so far is
// used up (a partial record is kept), io.EOF after the peer's
// close_notify, and any other error when the connection must be dropped.
func (s *Session) Next() ([]byte, error) {
	if len(s.plain) > 0 {
		p := s.plain
		s.plain = nil
		return p, nil
	}
	switch s.mode {
	case modeFast:
	case modeStd:
		return s.nextStd()
	case modeDead:
		return nil, s.err
	default:
		return nil, ErrNotEstablished
	}
	for {
		rec, err := s.nextRecord()
		if err != nil || rec == nil {
			if err != nil {
				s.fail(err)
			}
			return nil, err
		}
		var plain []byte
		var typ byte
		if s.inSync {
			plain, typ, err = s.openSync(rec)
		} else {
			plain, typ, err = s.open(rec)
		}
		if err != nil {
			s.fail(err)
			return nil, err
		}
		switch typ {
		case recAppData:
			if len(plain) > 0 {
				return plain, nil
			}
		case recAlert:
			if err := s.alert(plain); err != nil {
				return nil, err
			}
		case recHandshake:
			if err := s.postHandshake(plain); err != nil {
				s.fail(err)
				return nil, err
			}
		default:
			err := fmt.Errorf("tls: unexpected record type %d", typ)
			s.fail(err)
			return nil, err
		}
	}
}

// ReadPlain copies plaintext into dst. It returns 0, nil when the
// ciphertext fed so far is used up (see Feed), io.EOF after the peer's
// close_notify, and any other error when the connection must be dropped.
func (s *Session) ReadPlain(dst []byte) (int, error) {
	if len(s.plain) == 0 {
		p, err := s.Next()
		if err != nil || p == nil {
			return 0, err
		}
		s.plain = p
	}
	n := copy(dst, s.plain)
	s.plain = s.plain[n:]
	return n, nil
}

// nextStd is Next on crypto/tls's record layer.
func (s *Session) nextStd() ([]byte, error) {
	if s.scratch == nil {
		s.scratch = make([]byte, maxPlaintext)
	}
	n, err := s.conn.Read(s.scratch[:cap(s.scratch)])
	if err != nil {
		if err == error(errWouldBlock) {
			return nil, nil
		}
		if err != io.EOF {
			err = fmt.Errorf("tls: %w", err)
		}
		s.fail(err)
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	return s.scratch[:n], nil
}

// recordLen returns the length of the record at the start of b (header
// included), or the header length if b does not hold a whole header.
func (s *Session) recordLen(b []byte) (int, error) {
	if len(b) < recordHeaderLen {
		return recordHeaderLen, nil
	}
	n := int(binary.BigEndian.Uint16(b[3:5]))
	if n > s.maxRec {
		return 0, fmt.Errorf("tls: oversized record of %d bytes", n)
	}
	return recordHeaderLen + n, nil
}

// nextRecord returns the next complete record of the input (the stash
// first, then the borrowed piece), or nil when none is complete; an
// incomplete tail goes to the stash.
func (s *Session) nextRecord() ([]byte, error) {
	if s.stashOff < len(s.stash) {
		for {
			b := s.stash[s.stashOff:]
			need, err := s.recordLen(b)
			if err != nil {
				return nil, err
			}
			if len(b) >= need {
				s.stashOff += need
				return b[:need], nil
			}
			if len(s.in) == 0 {
				return nil, nil
			}
			k := min(need-len(b), len(s.in))
			s.stash = append(s.stash, s.in[:k]...)
			s.in = s.in[k:]
		}
	}
	s.stash, s.stashOff = s.stash[:0], 0
	if len(s.in) == 0 {
		return nil, nil
	}
	need, err := s.recordLen(s.in)
	if err != nil {
		return nil, err
	}
	if len(s.in) >= need {
		rec := s.in[:need]
		s.in = s.in[need:]
		if len(s.in) == 0 {
			s.in = nil // do not keep the caller's buffer alive
		}
		return rec, nil
	}
	s.stash = append(s.stash, s.in...)
	s.in = nil
	return nil, nil
}

// open decrypts a record in place and returns its plaintext and (inner)
// content type.
func (s *Session) open(rec []byte) ([]byte, byte, error) {
	h := &s.rd
	body := rec[recordHeaderLen:]
	var plain []byte
	var err error
	if s.version == tls.VersionTLS13 {
		if rec[0] != recAppData {
			return nil, 0, fmt.Errorf("tls: unexpected record type %d", rec[0])
		}
		h.setNonce()
		plain, err = h.aead.Open(body[:0], h.nonce[:], body, rec[:recordHeaderLen])
		if err != nil {
			return nil, 0, errors.New("tls: bad record MAC")
		}
		h.seq++
		i := len(plain) - 1
		for i >= 0 && plain[i] == 0 {
			i--
		}
		if i < 0 {
			return nil, 0, errors.New("tls: record without content type")
		}
		return plain[:i], plain[i], nil
	}
	typ := rec[0]
	if s.st.explicit {
		if len(body) < 8+tagLen {
			return nil, 0, errors.New("tls: bad record MAC")
		}
		h.nonce = h.iv
		copy(h.nonce[4:], body[:8])
		body = body[8:]
	} else {
		if len(body) < tagLen {
			return nil, 0, errors.New("tls: bad record MAC")
		}
		h.setNonce()
	}
	h.setAAD12(typ, len(body)-tagLen)
	plain, err = h.aead.Open(body[:0], h.nonce[:], body, h.aad[:])
	if err != nil {
		return nil, 0, errors.New("tls: bad record MAC")
	}
	h.seq++
	return plain, typ, nil
}

// openSync opens a record while crypto/tls is still in step: a record of
// NewSessionTicket messages goes to crypto/tls (which stores the ticket
// in the ClientSessionCache) and is reported as an empty handshake record;
// anything else ends the sync phase and is returned as open would.
func (s *Session) openSync(rec []byte) ([]byte, byte, error) {
	s.scratch = append(s.scratch[:0], rec...)
	plain, typ, err := s.open(s.scratch)
	if err != nil {
		return nil, 0, err
	}
	if typ == recHandshake && onlyTickets(plain) {
		s.src = rec
		n, err := s.conn.Read(s.one[:])
		s.src = nil
		switch {
		case n != 0:
			return nil, 0, errors.New("tls: session ticket record carried data")
		case err != error(errWouldBlock):
			return nil, 0, fmt.Errorf("tls: session ticket: %w", err)
		}
		return nil, recHandshake, nil
	}
	s.inSync = false
	s.conn = nil
	return plain, typ, nil
}

// onlyTickets reports whether b is a sequence of whole NewSessionTicket
// messages.
func onlyTickets(b []byte) bool {
	for len(b) > 0 {
		if len(b) < 4 || b[0] != 4 {
			return false
		}
		n := 4 + (int(b[1])<<16 | int(b[2])<<8 | int(b[3]))
		if n > len(b) {
			return false
		}
		b = b[n:]
	}
	return true
}

// alert handles an alert record: close_notify is io.EOF, TLS 1.2 warnings
// are skipped, anything else ends the session.
func (s *Session) alert(b []byte) error {
	if len(b) != 2 {
		s.fail(errors.New("tls: malformed alert"))
		return s.err
	}
	if b[1] == 0 {
		s.fail(io.EOF)
		return io.EOF
	}
	if s.version == tls.VersionTLS12 && b[0] == 1 {
		return nil
	}
	s.fail(fmt.Errorf("tls: peer sent alert %d", b[1]))
	return s.err
}

// postHandshake handles handshake messages after the handshake: TLS 1.3
// KeyUpdate (answered when asked) and late NewSessionTickets (dropped:
// crypto/tls is no longer in step to take them); TLS 1.2 HelloRequest
// (ignored: renegotiation is refused, which RFC 5246 §7.4.1.1 allows).
func (s *Session) postHandshake(b []byte) error {
	for len(b) > 0 {
		if len(b) < 4 {
			return errors.New("tls: malformed handshake message")
		}
		n := 4 + (int(b[1])<<16 | int(b[2])<<8 | int(b[3]))
		if n > len(b) {
			return errors.New("tls: fragmented handshake message")
		}
		msg := b[:n]
		b = b[n:]
		switch {
		case s.version == tls.VersionTLS13 && msg[0] == 4: // NewSessionTicket
		case s.version == tls.VersionTLS13 && msg[0] == 24 && n == 5: // KeyUpdate
			secret, err := nextSecret13(s.st, s.rd.secret)
			if err != nil {
				return err
			}
			if err := s.rd.set13(s.st, secret); err != nil {
				return err
			}
			if msg[4] == 1 {
				s.keyUpd = true
			}
		case s.version == tls.VersionTLS12 && msg[0] == 0: // HelloRequest
		default:
			return fmt.Errorf("tls: unexpected handshake message %d", msg[0])
		}
	}
	return nil
}

// Seal appends plain, protected as application-data records, to dst and
// returns it: the bytes to write to the socket, in order. plain must not
// overlap dst's spare capacity. With enough capacity in dst it allocates
// nothing.
func (s *Session) Seal(dst, plain []byte) ([]byte, error) {
	switch s.mode {
	case modeFast:
	case modeStd:
		s.out = dst
		_, err := s.conn.Write(plain)
		out := s.out
		s.out = nil
		if err != nil {
			err = fmt.Errorf("tls: %w", err)
			s.fail(err)
		}
		return out, err
	case modeDead:
		return dst, s.err
	default:
		return dst, ErrNotEstablished
	}
	if s.keyUpd {
		s.keyUpd = false
		dst = s.sealRecord(dst, recHandshake, []byte{24, 0, 0, 1, 0})
		secret, err := nextSecret13(s.st, s.wr.secret)
		if err == nil {
			err = s.wr.set13(s.st, secret)
		}
		if err != nil {
			s.fail(err)
			return dst, err
		}
	}
	for len(plain) > 0 {
		n := min(len(plain), maxPlaintext)
		dst = s.sealRecord(dst, recAppData, plain[:n])
		plain = plain[n:]
	}
	return dst, nil
}

// Close appends a close_notify alert to dst and returns it: the polite
// end of the session (the caller writes it, then closes the socket when
// the peer's close_notify or EOF arrives, or at once).
func (s *Session) Close(dst []byte) ([]byte, error) {
	switch s.mode {
	case modeFast:
		return s.sealRecord(dst, recAlert, []byte{1, 0}), nil // warning, close_notify
	case modeStd:
		s.out = dst
		err := s.conn.CloseWrite()
		out := s.out
		s.out = nil
		return out, err
	case modeDead:
		return dst, s.err
	}
	return dst, ErrNotEstablished
}

// Overhead is the number of bytes Seal adds to a record of plaintext at
// most (header, explicit nonce, content type, tag): size write buffers
// with it.
const Overhead = recordHeaderLen + 8 + 1 + tagLen

// sealRecord appends one protected record.
func (s *Session) sealRecord(dst []byte, typ byte, data []byte) []byte {
	h := &s.wr
	start := len(dst)
	dst = slices.Grow(dst, len(data)+Overhead)
	hdrEnd := start + recordHeaderLen
	switch {
	case s.version == tls.VersionTLS13:
		// Header (outer type application data), then data || type, sealed
		// in place with the header as additional data.
		dst = dst[:hdrEnd+len(data)+1]
		hdr := dst[start:hdrEnd]
		hdr[0], hdr[1], hdr[2] = recAppData, 3, 3
		binary.BigEndian.PutUint16(hdr[3:], uint16(len(data)+1+tagLen))
		body := dst[hdrEnd:]
		copy(body, data)
		body[len(data)] = typ
		h.setNonce()
		h.seq++
		sealed := h.aead.Seal(body[:0], h.nonce[:], body, hdr)
		return dst[:hdrEnd+len(sealed)]
	case s.st.explicit:
		// TLS 1.2 GCM: header, explicit nonce (the sequence number), data.
		dst = dst[:hdrEnd+8+len(data)]
		hdr := dst[start:hdrEnd]
		hdr[0], hdr[1], hdr[2] = typ, 3, 3
		binary.BigEndian.PutUint16(hdr[3:], uint16(8+len(data)+tagLen))
		binary.BigEndian.PutUint64(dst[hdrEnd:], h.seq)
		h.nonce = h.iv
		copy(h.nonce[4:], dst[hdrEnd:hdrEnd+8])
		body := dst[hdrEnd+8:]
		copy(body, data)
		h.setAAD12(typ, len(data))
		h.seq++
		sealed := h.aead.Seal(body[:0], h.nonce[:], body, h.aad[:])
		return dst[:hdrEnd+8+len(sealed)]
	default:
		// TLS 1.2 ChaCha20-Poly1305 (RFC 7905): no explicit nonce.
		dst = dst[:hdrEnd+len(data)]
		hdr := dst[start:hdrEnd]
		hdr[0], hdr[1], hdr[2] = typ, 3, 3
		binary.BigEndian.PutUint16(hdr[3:], uint16(len(data)+tagLen))
		body := dst[hdrEnd:]
		copy(body, data)
		h.setNonce()
		h.setAAD12(typ, len(data))
		h.seq++
		sealed := h.aead.Seal(body[:0], h.nonce[:], body, h.aad[:])
		return dst[:hdrEnd+len(sealed)]
	}
}
