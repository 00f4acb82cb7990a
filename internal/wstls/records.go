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

// halfConn is one direction of the fast record layer. It keeps its keys:
// the AEAD (key schedule and tables) is made from them when a record needs
// it, and dropped again by Session.Idle.
type halfConn struct {
	aead   cipher.AEAD // nil until a record needs it
	seq    uint64
	iv     [12]byte // TLS 1.3 and ChaCha20: the per-record nonce's base; TLS 1.2 GCM: the implicit salt (4 bytes)
	key    [32]byte // st.keyLen bytes
	secret [48]byte // TLS 1.3: the traffic secret (st.hashLen bytes), for KeyUpdate
}

// set13 installs a TLS 1.3 traffic secret.
func (h *halfConn) set13(st *suite, secret []byte) error {
	key, iv, err := trafficKeys13(st, secret)
	if err != nil {
		return err
	}
	h.seq = 0
	copy(h.secret[:], secret)
	copy(h.iv[:], iv)
	return h.setKey(st, key)
}

// set12 installs TLS 1.2 keys.
func (h *halfConn) set12(st *suite, key, iv []byte) error {
	copy(h.iv[:], iv)
	return h.setKey(st, key)
}

// setKey keeps key and makes the AEAD from it.
func (h *halfConn) setKey(st *suite, key []byte) error {
	copy(h.key[:], key)
	h.aead = nil
	_, err := h.cipher(st)
	return err
}

// cipher returns the AEAD, made from the key if the session was idle.
func (h *halfConn) cipher(st *suite) (cipher.AEAD, error) {
	if h.aead == nil {
		a, err := st.newAEAD(h.key[:st.keyLen])
		if err != nil {
			return nil, err
		}
		h.aead = a
	}
	return h.aead, nil
}

// setNonce computes the nonce of h's next record: iv XOR the sequence
// number (RFC 8446 §5.3, RFC 7905 §2).
func (h *halfConn) setNonce(nonce *[12]byte) {
	*nonce = h.iv
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], h.seq)
	for i := range seq {
		nonce[4+i] ^= seq[i]
	}
}

// setAAD12 computes TLS 1.2's additional data of h's next record, of typ
// with n bytes of plaintext.
func (h *halfConn) setAAD12(aad *[13]byte, typ byte, n int) {
	binary.BigEndian.PutUint64(aad[:8], h.seq)
	aad[8] = typ
	aad[9], aad[10] = 3, 3
	binary.BigEndian.PutUint16(aad[11:], uint16(n))
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
	x := s.x
	if x.scratch == nil {
		x.scratch = make([]byte, maxPlaintext)
	}
	n, err := x.conn.Read(x.scratch[:cap(x.scratch)])
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
	return x.scratch[:n], nil
}

// recordLen returns the length of the record at the start of b (header
// included), or the header length if b does not hold a whole header.
func (s *Session) recordLen(b []byte) (int, error) {
	if len(b) < recordHeaderLen {
		return recordHeaderLen, nil
	}
	n := int(binary.BigEndian.Uint16(b[3:5]))
	if n > s.maxRecord() {
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
	a, err := h.cipher(s.st)
	if err != nil {
		return nil, 0, err
	}
	body := rec[recordHeaderLen:]
	var plain []byte
	if s.version == tls.VersionTLS13 {
		if rec[0] != recAppData {
			return nil, 0, fmt.Errorf("tls: unexpected record type %d", rec[0])
		}
		h.setNonce(&s.nonce)
		plain, err = a.Open(body[:0], s.nonce[:], body, rec[:recordHeaderLen])
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
		s.nonce = h.iv
		copy(s.nonce[4:], body[:8])
		body = body[8:]
	} else {
		if len(body) < tagLen {
			return nil, 0, errors.New("tls: bad record MAC")
		}
		h.setNonce(&s.nonce)
	}
	h.setAAD12(&s.aad, typ, len(body)-tagLen)
	plain, err = a.Open(body[:0], s.nonce[:], body, s.aad[:])
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
	x := s.x
	x.scratch = append(x.scratch[:0], rec...)
	plain, typ, err := s.open(x.scratch)
	if err != nil {
		return nil, 0, err
	}
	if typ == recHandshake && onlyTickets(plain) {
		x.src = rec
		n, err := x.conn.Read(x.one[:])
		x.src = nil
		switch {
		case n != 0:
			return nil, 0, errors.New("tls: session ticket record carried data")
		case err != error(errWouldBlock):
			return nil, 0, fmt.Errorf("tls: session ticket: %w", err)
		}
		return nil, recHandshake, nil
	}
	// Application data: crypto/tls is done with. plain is in x.scratch,
	// which stays reachable through the returned slice until used.
	s.inSync = false
	s.x = nil
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
			secret, err := nextSecret13(s.st, s.rd.secret[:s.st.hashLen])
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
		x := s.x
		x.out = dst
		_, err := x.conn.Write(plain)
		out := x.out
		x.out = nil
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
	var err error
	if s.keyUpd {
		s.keyUpd = false
		dst, err = s.sealRecord(dst, recHandshake, []byte{24, 0, 0, 1, 0})
		var secret []byte
		if err == nil {
			secret, err = nextSecret13(s.st, s.wr.secret[:s.st.hashLen])
		}
		if err == nil {
			err = s.wr.set13(s.st, secret)
		}
		if err != nil {
			s.fail(err)
			return dst, err
		}
	}
	for len(plain) > 0 && err == nil {
		n := min(len(plain), maxPlaintext)
		dst, err = s.sealRecord(dst, recAppData, plain[:n])
		plain = plain[n:]
	}
	if err != nil {
		s.fail(err)
	}
	return dst, err
}

// Close appends a close_notify alert to dst and returns it: the polite
// end of the session (the caller writes it, then closes the socket when
// the peer's close_notify or EOF arrives, or at once).
func (s *Session) Close(dst []byte) ([]byte, error) {
	switch s.mode {
	case modeFast:
		return s.sealRecord(dst, recAlert, []byte{1, 0}) // warning, close_notify
	case modeStd:
		x := s.x
		x.out = dst
		err := x.conn.CloseWrite()
		out := x.out
		x.out = nil
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
func (s *Session) sealRecord(dst []byte, typ byte, data []byte) ([]byte, error) {
	h := &s.wr
	a, err := h.cipher(s.st)
	if err != nil {
		return dst, err
	}
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
		h.setNonce(&s.nonce)
		h.seq++
		sealed := a.Seal(body[:0], s.nonce[:], body, hdr)
		return dst[:hdrEnd+len(sealed)], nil
	case s.st.explicit:
		// TLS 1.2 GCM: header, explicit nonce (the sequence number), data.
		dst = dst[:hdrEnd+8+len(data)]
		hdr := dst[start:hdrEnd]
		hdr[0], hdr[1], hdr[2] = typ, 3, 3
		binary.BigEndian.PutUint16(hdr[3:], uint16(8+len(data)+tagLen))
		binary.BigEndian.PutUint64(dst[hdrEnd:], h.seq)
		s.nonce = h.iv
		copy(s.nonce[4:], dst[hdrEnd:hdrEnd+8])
		body := dst[hdrEnd+8:]
		copy(body, data)
		h.setAAD12(&s.aad, typ, len(data))
		h.seq++
		sealed := a.Seal(body[:0], s.nonce[:], body, s.aad[:])
		return dst[:hdrEnd+8+len(sealed)], nil
	default:
		// TLS 1.2 ChaCha20-Poly1305 (RFC 7905): no explicit nonce.
		dst = dst[:hdrEnd+len(data)]
		hdr := dst[start:hdrEnd]
		hdr[0], hdr[1], hdr[2] = typ, 3, 3
		binary.BigEndian.PutUint16(hdr[3:], uint16(len(data)+tagLen))
		body := dst[hdrEnd:]
		copy(body, data)
		h.setNonce(&s.nonce)
		h.setAAD12(&s.aad, typ, len(data))
		h.seq++
		sealed := a.Seal(body[:0], s.nonce[:], body, s.aad[:])
		return dst[:hdrEnd+len(sealed)], nil
	}
}

// maxRecord is the longest record body the version allows.
func (s *Session) maxRecord() int {
	if s.version == tls.VersionTLS13 {
		return maxCipher13
	}
	return maxCipher12
}
