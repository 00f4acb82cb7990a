package pmdeflate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Extension is the extension token of permessage-deflate (RFC 7692 §7).
const Extension = "permessage-deflate"

// RSV1 is the bit of a frame's first byte that marks the first frame of a
// compressed message (RFC 7692 §6). Continuation frames never carry it.
const RSV1 = 0x40

// Window bits bounds (RFC 7692 §7.1.2): LZ77 windows of 2^8 to 2^15 bytes.
const (
	MinWindowBits = 8
	MaxWindowBits = 15
)

// ErrDeclined is returned by Accept when the server answered without the
// extension: the client asked for compression and got none. A run must
// fail with it rather than measure uncompressed traffic.
var ErrDeclined = errors.New("compression asked, server declined")

// Params are permessage-deflate extension parameters (RFC 7692 §7.1), in
// an offer (what the client asks for and allows) or as negotiated (what
// both ends must honour). The zero value offers plain permessage-deflate
// with both contexts taken over and 32 KiB windows.
type Params struct {
	// ServerNoContextTakeover: in an offer, asks the server to compress
	// each message on its own (the server must then agree, or decline
	// the extension); negotiated, the server does so, and the client
	// keeps no inflate history for it. Default false.
	ServerNoContextTakeover bool
	// ClientNoContextTakeover: in an offer, tells the server the client
	// compresses each message on its own; negotiated (offered by the
	// client or required by the server), the client does so. Default
	// false.
	ClientNoContextTakeover bool
	// ServerMaxWindowBits: in an offer, 0 (the default) sends no
	// server_max_window_bits, 8..15 asks the server to use at most a
	// 2^n-byte window (the server must agree); negotiated, the server's
	// window bits, 15 when it named none. A smaller server window is what
	// shrinks the client's per-connection inflate history.
	ServerMaxWindowBits int
	// ClientMaxWindowBits: in an offer, 0 (the default) sends
	// client_max_window_bits without a value (the server may pick any
	// limit, the compressor honours all of them), 8..15 sends it with that
	// value (a promise not to exceed it); negotiated, the limit the client
	// honours: the server's value, else the one offered, else 15.
	ClientMaxWindowBits int
}

// Validate reports every out-of-range field of an offer.
func (p Params) Validate() []error {
	var errs []error
	if b := p.ServerMaxWindowBits; b != 0 && (b < MinWindowBits || b > MaxWindowBits) {
		errs = append(errs, fmt.Errorf("server_max_window_bits: must be 0 (not sent) or in [%d, %d], got %d", MinWindowBits, MaxWindowBits, b))
	}
	if b := p.ClientMaxWindowBits; b != 0 && (b < MinWindowBits || b > MaxWindowBits) {
		errs = append(errs, fmt.Errorf("client_max_window_bits: must be 0 (sent without a value) or in [%d, %d], got %d", MinWindowBits, MaxWindowBits, b))
	}
	return errs
}

// Offer returns the Sec-WebSocket-Extensions request value for offer p,
// e.g. "permessage-deflate; client_no_context_takeover; client_max_window_bits".
// client_max_window_bits is always sent: the compressor can honour any
// limit a server sets. p must be valid (Validate).
func Offer(p Params) string {
	var b strings.Builder
	b.WriteString(Extension)
	if p.ClientNoContextTakeover {
		b.WriteString("; client_no_context_takeover")
	}
	if p.ServerNoContextTakeover {
		b.WriteString("; server_no_context_takeover")
	}
	b.WriteString("; client_max_window_bits")
	if p.ClientMaxWindowBits != 0 {
		b.WriteString("=" + strconv.Itoa(p.ClientMaxWindowBits))
	}
	if p.ServerMaxWindowBits != 0 {
		b.WriteString("; server_max_window_bits=" + strconv.Itoa(p.ServerMaxWindowBits))
	}
	return b.String()
}

// String renders negotiated parameters as a response would carry them,
// every parameter explicit: "permessage-deflate; client_no_context_takeover;
// server_max_window_bits=15; client_max_window_bits=15". Results record it.
func (p Params) String() string {
	var b strings.Builder
	b.WriteString(Extension)
	if p.ServerNoContextTakeover {
		b.WriteString("; server_no_context_takeover")
	}
	if p.ClientNoContextTakeover {
		b.WriteString("; client_no_context_takeover")
	}
	b.WriteString("; server_max_window_bits=" + strconv.Itoa(windowBits(p.ServerMaxWindowBits)))
	b.WriteString("; client_max_window_bits=" + strconv.Itoa(windowBits(p.ClientMaxWindowBits)))
	return b.String()
}

// windowBits maps "not set" (0) to the RFC default, 15.
func windowBits(b int) int {
	if b == 0 {
		return MaxWindowBits
	}
	return b
}

// Accept checks the server's Sec-WebSocket-Extensions response value
// (all header lines joined with ", ") against the offer it answers and
// returns the negotiated parameters. It is strict, as RFC 7692 §7.1 asks
// of a client: an empty header is ErrDeclined; any other extension, more
// than one, an unknown or repeated parameter, a value where none belongs,
// window bits outside 8..15 or above what was offered, or an offered
// server parameter the server left out, is an error naming the reason.
func Accept(header string, offered Params) (Params, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return Params{}, ErrDeclined
	}
	fail := func(format string, a ...any) (Params, error) {
		return Params{}, fmt.Errorf("sec-websocket-extensions %q: %s", header, fmt.Sprintf(format, a...))
	}
	if exts := splitList(header, ','); len(exts) != 1 {
		return fail("%d extensions in the response, the client offered one (%s)", len(exts), Extension)
	}
	parts := splitList(header, ';')
	if name := parts[0]; !strings.EqualFold(name, Extension) {
		return fail("extension %q was not offered", name)
	}
	got := Params{ClientNoContextTakeover: offered.ClientNoContextTakeover}
	seen := make(map[string]bool, len(parts))
	for _, part := range parts[1:] {
		name, value, hasValue := strings.Cut(part, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			return fail("empty parameter")
		}
		if seen[name] {
			return fail("%s: given twice", name)
		}
		seen[name] = true
		switch name {
		case "server_no_context_takeover", "client_no_context_takeover":
			if hasValue {
				return fail("%s: takes no value, got %q", name, strings.TrimSpace(value))
			}
			if name == "server_no_context_takeover" {
				got.ServerNoContextTakeover = true
			} else {
				got.ClientNoContextTakeover = true
			}
		case "server_max_window_bits", "client_max_window_bits":
			if !hasValue {
				return fail("%s: needs a value in a response", name)
			}
			bits, err := parseBits(value)
			if err != nil {
				return fail("%s: %v", name, err)
			}
			limit := offered.ServerMaxWindowBits
			if name == "client_max_window_bits" {
				limit = offered.ClientMaxWindowBits
			}
			if limit != 0 && bits > limit {
				return fail("%s=%d: above the %d offered", name, bits, limit)
			}
			if name == "server_max_window_bits" {
				got.ServerMaxWindowBits = bits
			} else {
				got.ClientMaxWindowBits = bits
			}
		default:
			return fail("unknown parameter %q", name)
		}
	}
	switch {
	case offered.ServerNoContextTakeover && !got.ServerNoContextTakeover:
		return fail("server_no_context_takeover was asked and not agreed to")
	case offered.ServerMaxWindowBits != 0 && got.ServerMaxWindowBits == 0:
		return fail("server_max_window_bits=%d was asked and not agreed to", offered.ServerMaxWindowBits)
	}
	if got.ClientMaxWindowBits == 0 {
		// The server set no limit; the client keeps the one it offered.
		got.ClientMaxWindowBits = offered.ClientMaxWindowBits
	}
	got.ServerMaxWindowBits = windowBits(got.ServerMaxWindowBits)
	got.ClientMaxWindowBits = windowBits(got.ClientMaxWindowBits)
	return got, nil
}

// parseBits parses a window bits value: a decimal 8..15 without leading
// zeros, optionally as a quoted string (RFC 7692 §7.1.2.1, RFC 6455 §9.1).
func parseBits(v string) (int, error) {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	n, err := strconv.Atoi(v)
	if err != nil || v[0] == '0' || v[0] == '+' || n < MinWindowBits || n > MaxWindowBits {
		return 0, fmt.Errorf("must be in [%d, %d], got %q", MinWindowBits, MaxWindowBits, v)
	}
	return n, nil
}

// splitList splits s at sep, trimming spaces; an empty s gives no element.
func splitList(s string, sep byte) []string {
	var out []string
	for part := range strings.SplitSeq(s, string(sep)) {
		out = append(out, strings.TrimSpace(part))
	}
	return out
}
