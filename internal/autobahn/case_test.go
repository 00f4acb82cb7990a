package autobahn

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCatalog pins how many cases each section has; the numbers are
// Autobahn|Testsuite's own (section 6: 145, section 7: 37).
func TestCatalog(t *testing.T) {
	per := map[string]int{}
	for _, c := range Cases() {
		per[strings.SplitN(c.ID, ".", 2)[0]]++
		if c.Description == "" || c.Expectation == "" {
			t.Errorf("%s: description or expectation missing", c.ID)
		}
	}
	want := map[string]int{"1": 16, "2": 11, "3": 7, "4": 10, "5": 20, "6": 145, "7": 37, "9": 54, "10": 1, "12": 90, "13": 126}
	for sec, n := range want {
		if per[sec] != n {
			t.Errorf("section %s: %d cases, want %d", sec, per[sec], n)
		}
	}
	if len(per) != len(want) {
		t.Errorf("sections %v, want %v", per, want)
	}
	var bigs []string
	for _, c := range Cases() {
		if c.Big && !strings.HasPrefix(c.ID, "12.") && !strings.HasPrefix(c.ID, "13.") {
			bigs = append(bigs, c.ID)
		}
		if deflate := c.key[0] == 12 || c.key[0] == 13; deflate && c.Big != (c.key[2] >= 5) {
			t.Errorf("%s: Big %v, want it for 4 KiB messages and up", c.ID, c.Big)
		}
	}
	want9 := []string{"9.1.3", "9.1.4", "9.1.5", "9.1.6", "9.2.3", "9.2.4", "9.2.5", "9.2.6"}
	for _, sec := range []string{"9.3", "9.4"} {
		for i := 1; i <= 9; i++ {
			want9 = append(want9, fmt.Sprintf("%s.%d", sec, i))
		}
	}
	for _, sec := range []string{"9.5", "9.6"} {
		for i := 1; i <= 6; i++ {
			want9 = append(want9, fmt.Sprintf("%s.%d", sec, i))
		}
	}
	if want := want9; !slices.Equal(bigs, want) {
		t.Errorf("big cases outside 12/13: %v, want %v", bigs, want)
	}
}

func TestSelect(t *testing.T) {
	for _, c := range []struct {
		in, ex []string
		n      int
		first  string
		last   string
		err    string
	}{
		{nil, nil, 517, "1.1.1", "13.7.18", ""},
		{nil, []string{"12.*", "13.*"}, 301, "1.1.1", "10.1.1", ""},
		{[]string{"1.*"}, nil, 16, "1.1.1", "1.2.8", ""},
		{[]string{"2.1"}, nil, 1, "2.1", "2.1", ""},
		{[]string{"2.1*"}, nil, 3, "2.1", "2.11", ""},
		{[]string{"6.4.*"}, nil, 4, "6.4.1", "6.4.4", ""},
		{[]string{"*.1"}, []string{"6.*"}, 34, "1.1.1", "13.7.1", ""},
		{[]string{"12.*"}, nil, 90, "12.1.1", "12.5.18", ""},
		{[]string{"7.*"}, []string{"7.7.*", "7.9.*"}, 15, "7.1.1", "7.13.2", ""},
		{[]string{"5.2", "5.10", "5.1"}, nil, 3, "5.1", "5.10", ""},
		{[]string{"14.*"}, nil, 0, "", "", `case pattern "14.*" matches no implemented case`},
		{nil, []string{"1.1.9"}, 0, "", "", `case pattern "1.1.9" matches no implemented case`},
	} {
		got, err := Select(c.in, c.ex)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("Select(%v, %v): error %v, want %q", c.in, c.ex, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Select(%v, %v): %v", c.in, c.ex, err)
			continue
		}
		if len(got) != c.n || got[0].ID != c.first || got[len(got)-1].ID != c.last {
			t.Errorf("Select(%v, %v): %d cases %s..%s, want %d %s..%s", c.in, c.ex, len(got), got[0].ID, got[len(got)-1].ID, c.n, c.first, c.last)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		p, id string
		want  bool
	}{
		{"*", "6.4.1", true}, {"6.*", "6.4.1", true}, {"6.*", "16.1", false}, {"6.4", "6.4.1", false},
		{"*.1", "6.4.1", true}, {"*.1", "6.4.10", false}, {"6.*.1", "6.4.1", true}, {"6.*.1", "6.1", false},
		{"2.1", "2.10", false}, {"2.1*", "2.10", true},
	} {
		if got := match(c.p, c.id); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.p, c.id, got, c.want)
		}
	}
}

func TestBehaviorPasses(t *testing.T) {
	for _, c := range []struct {
		b    Behavior
		v    Verdict
		want bool
	}{
		{Strict, OK, true}, {Strict, NonStrict, false}, {Strict, Informational, true}, {Strict, Unimplemented, true}, {Strict, Failed, false},
		{Lenient, OK, true}, {Lenient, NonStrict, true}, {Lenient, Informational, true}, {Lenient, Unimplemented, true}, {Lenient, Failed, false},
	} {
		if got := c.b.Passes(c.v); got != c.want {
			t.Errorf("%s.Passes(%s) = %v, want %v", c.b, c.v, got, c.want)
		}
	}
}

// TestValidPrefix checks the incremental validator against utf8.Valid on
// every stress-test payload and every prefix of it, and that it fails fast.
func TestValidPrefix(t *testing.T) {
	for _, g := range utf8Groups() {
		for _, p := range g.payloads {
			for i := 0; i <= len(p); i++ {
				b := []byte(p[:i])
				n, ok := validPrefix(b)
				if full := ok && n == len(b); full != utf8.Valid(b) {
					t.Errorf("validPrefix(%x) = %d, %v; utf8.Valid = %v", b, n, ok, utf8.Valid(b))
				}
			}
		}
	}
	for _, c := range []struct {
		in   string
		n    int
		ok   bool
		what string
	}{
		{kosme + "\xf4\x90", 11, false, "0x110000 fails on its second byte"},
		{kosme + "\xf4", 11, true, "an incomplete code point is not an error yet"},
		{"ab\xed\xa0", 2, false, "a surrogate fails on its second byte"},
		{"ab\xed\x9f", 2, true, "U+D7FF prefix"},
		{"\xc0", 0, false, "C0 never starts a sequence"},
	} {
		if n, ok := validPrefix([]byte(c.in)); n != c.n || ok != c.ok {
			t.Errorf("%s: validPrefix(%x) = %d, %v; want %d, %v", c.what, c.in, n, ok, c.n, c.ok)
		}
	}
}

func TestFrameRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 125, 126, 127, 65535, 65536, 70000} {
		f := fr(opBinary, "\x00\xfe\x23").repeatTo(n)
		if n == 0 {
			f = fr(opBinary, "")
		}
		f.rsv, f.fin = 5, false
		got, err := readFrame(bufio.NewReader(bytes.NewReader(f.encode())))
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if !got.masked || got.fin || got.rsv != 5 || got.op != opBinary || got.long || !bytes.Equal(got.payload, f.body()) {
			t.Errorf("n=%d: decoded %+v", n, got)
		}
	}
	// A 16-bit length below 126 is flagged as not minimal.
	got, err := readFrame(bufio.NewReader(bytes.NewReader([]byte{0x81, 126, 0, 3, 'a', 'b', 'c'})))
	if err != nil || !got.long || string(got.payload) != "abc" {
		t.Errorf("non-minimal length: %+v, %v", got, err)
	}
	if _, err := readFrame(bufio.NewReader(bytes.NewReader([]byte{0x82, 127, 0, 0, 0, 1, 0, 0, 0, 0}))); err == nil {
		t.Error("4 GiB frame accepted")
	}
}

// TestSplitFrame: the parts of 6.4.3/6.4.4's frame, written one after the
// other, read back as one frame with the whole payload.
func TestSplitFrame(t *testing.T) {
	parts := []string{kosme, "\xf4\x90\x80\x80", "edited"}
	chunks := splitFrame(opText, parts)
	if len(chunks) != 3 {
		t.Fatalf("%d chunks", len(chunks))
	}
	got, err := readFrame(bufio.NewReader(bytes.NewReader(bytes.Join(chunks, nil))))
	if err != nil || !got.fin || got.op != opText || string(got.payload) != strings.Join(parts, "") {
		t.Errorf("%+v, %v", got, err)
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add(fr(opText, "hello").encode())
	f.Add([]byte{0x81, 126, 0, 3, 'a', 'b', 'c'})
	f.Add([]byte{0x88, 0x02, 0x03, 0xe8})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := readFrame(bufio.NewReader(bytes.NewReader(b)))
		if err == nil && len(got.payload) > len(b) {
			t.Fatalf("payload of %d bytes from %d input bytes", len(got.payload), len(b))
		}
	})
}

func TestParseDeflateResponse(t *testing.T) {
	for _, c := range []struct {
		h    string
		want deflateParams
		err  string
	}{
		{"permessage-deflate", deflateParams{}, ""},
		{"permessage-deflate; server_no_context_takeover; client_no_context_takeover", deflateParams{serverNoContextTakeover: true, clientNoContextTakeover: true}, ""},
		{"permessage-deflate;server_max_window_bits=9; client_max_window_bits=\"12\"", deflateParams{serverMaxWindowBits: 9, clientMaxWindowBits: 12}, ""},
		{"x-webkit-deflate-frame", deflateParams{}, `server accepted extension "x-webkit-deflate-frame" that was not offered`},
		{"permessage-deflate, permessage-deflate", deflateParams{}, `server accepted 2 extensions "permessage-deflate, permessage-deflate", want one permessage-deflate`},
		{"permessage-deflate; server_max_window_bits=7", deflateParams{}, `permessage-deflate server_max_window_bits="7": must be 8-15`},
		{"permessage-deflate; client_max_window_bits", deflateParams{}, `permessage-deflate client_max_window_bits="": must be 8-15`},
		{"permessage-deflate; server_no_context_takeover; server_no_context_takeover", deflateParams{}, "permessage-deflate parameter server_no_context_takeover given twice"},
		{"permessage-deflate; mystery=1", deflateParams{}, `permessage-deflate parameter "mystery" unknown`},
	} {
		got, err := parseDeflateResponse(c.h)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: error %v, want %q", c.h, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.h, got, err, c.want)
		}
	}
}

// TestDeflateRoundTrip compresses messages with and without context
// takeover and inflates them with a peer that keeps (or not) its window.
func TestDeflateRoundTrip(t *testing.T) {
	msg := bytes.Repeat([]byte("context takeover pays when messages repeat. "), 20)
	for _, noTakeover := range []bool{false, true} {
		p := deflateParams{clientNoContextTakeover: noTakeover, serverNoContextTakeover: noTakeover}
		tx, err := newDeflater(p)
		if err != nil {
			t.Fatal(err)
		}
		rx, _ := newDeflater(p)
		var sizes []int
		for range 3 {
			c, err := tx.compress(msg)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(c))
			out, err := rx.inflate(c)
			if err != nil || !bytes.Equal(out, msg) {
				t.Fatalf("noTakeover=%v: inflate: %v (%d bytes back)", noTakeover, err, len(out))
			}
		}
		if shrinks := sizes[1] < sizes[0]/2; shrinks == noTakeover {
			t.Errorf("noTakeover=%v: compressed sizes %v", noTakeover, sizes)
		}
	}
	// An empty message compresses to one byte (RFC 7692 7.2.3.6).
	d, _ := newDeflater(deflateParams{})
	if c, err := d.compress(nil); err != nil || len(c) != 1 {
		t.Errorf("empty message: %x, %v", c, err)
	}
}
