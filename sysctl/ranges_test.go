package sysctl

import (
	"reflect"
	"testing"
)

func TestParsePortList(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Ranges
		out  string // String of the result
		err  string
	}{
		{in: "", out: ""},
		{in: "\n", out: ""}, // the kernel's "nothing reserved"
		{in: "8080", want: Ranges{{8080, 8080}}, out: "8080"},
		{in: "9000-9999", want: Ranges{{9000, 9999}}, out: "9000-9999"},
		{in: "8080,9000-9999\n", want: Ranges{{8080, 8080}, {9000, 9999}}, out: "8080,9000-9999"},
		{in: "9000-9999,8080", want: Ranges{{8080, 8080}, {9000, 9999}}, out: "8080,9000-9999"},
		{in: " 1 , 3-4 ", want: Ranges{{1, 1}, {3, 4}}, out: "1,3-4"},
		{in: "5-5", want: Ranges{{5, 5}}, out: "5"},
		{in: "1,2,3", want: Ranges{{1, 3}}, out: "1-3"},                           // adjacent ports merge
		{in: "9000-9005,9003-9010", want: Ranges{{9000, 9010}}, out: "9000-9010"}, // overlapping ranges merge
		{in: "9000,9000", want: Ranges{{9000, 9000}}, out: "9000"},                // repeats: the kernel keeps a bitmap
		{in: "0-65535", want: Ranges{{0, 65535}}, out: "0-65535"},
		{in: "3-1", err: `bad port list "3-1": range 3-1 goes down`},
		{in: "65536", err: `bad port list "65536": port 65536 is above 65535`},
		{in: "1-99999999999999999999", err: `bad port list "1-99999999999999999999": port 99999999999999999999 is above 65535`},
		{in: "a", err: `bad port list "a": want ports and ranges such as 8080,9000-9999, got "a"`},
		{in: "1,,2", err: `bad port list "1,,2": want ports and ranges such as 8080,9000-9999, got ""`},
		{in: "1,", err: `bad port list "1,": want ports and ranges such as 8080,9000-9999, got ""`},
		{in: "-1", err: `bad port list "-1": want ports and ranges such as 8080,9000-9999, got ""`},
		{in: "+1", err: `bad port list "+1": want ports and ranges such as 8080,9000-9999, got "+1"`},
		{in: "1-2-3", err: `bad port list "1-2-3": want ports and ranges such as 8080,9000-9999, got "2-3"`},
		{in: "1024 65535", err: `bad port list "1024 65535": want ports and ranges such as 8080,9000-9999, got "1024 65535"`},
		{in: "0x10", err: `bad port list "0x10": want ports and ranges such as 8080,9000-9999, got "0x10"`},
	} {
		got, err := ParsePortList(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParsePortList(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParsePortList(%q) = %#v, %v; want %#v", tt.in, got, err, tt.want)
		}
		if s := got.String(); s != tt.out {
			t.Errorf("ParsePortList(%q).String() = %q, want %q", tt.in, s, tt.out)
		}
	}
}

func TestRangesSetOps(t *testing.T) {
	list := func(s string) Ranges {
		t.Helper()
		r, err := ParsePortList(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tt := range []struct {
		a, b                 string
		union, minus, within string // within: a between b's first and last port
	}{
		{a: "", b: "", union: "", minus: "", within: ""},
		{a: "9000-9009", b: "", union: "9000-9009", minus: "9000-9009", within: ""},
		{a: "", b: "9000-9009", union: "9000-9009", minus: "", within: ""},
		{a: "9000-9009", b: "8080", union: "8080,9000-9009", minus: "9000-9009", within: ""},
		{a: "9000-9009", b: "9010-9019", union: "9000-9019", minus: "9000-9009", within: ""},
		{a: "9000-9009", b: "9003,9005-9006", union: "9000-9009", minus: "9000-9002,9004,9007-9009", within: "9003-9006"},
		{a: "9000-9009", b: "8000-9999", union: "8000-9999", minus: "", within: "9000-9009"},
		{a: "1,3,5-9", b: "2-6", union: "1-9", minus: "1,7-9", within: "3,5-6"},
		{a: "1024-65535", b: "9000-9149", union: "1024-65535", minus: "1024-8999,9150-65535", within: "9000-9149"},
	} {
		a, b := list(tt.a), list(tt.b)
		if got := a.Union(b).String(); got != tt.union {
			t.Errorf("%q ∪ %q = %q, want %q", tt.a, tt.b, got, tt.union)
		}
		if got := a.Minus(b).String(); got != tt.minus {
			t.Errorf("%q − %q = %q, want %q", tt.a, tt.b, got, tt.minus)
		}
		within := Ranges(nil)
		if len(b) > 0 {
			within = a.Within(b[0].Lo, b[len(b)-1].Hi)
		}
		if got := within.String(); got != tt.within {
			t.Errorf("%q within %q = %q, want %q", tt.a, tt.b, got, tt.within)
		}
	}
	if got := RangesOf(9002, 9000, 9001, 9001, 9005).String(); got != "9000-9002,9005" {
		t.Errorf("RangesOf = %q", got)
	}
	if got := list("1-3,10").Len(); got != 4 {
		t.Errorf("Len = %d, want 4", got)
	}
}

// FuzzParsePortList checks ParsePortList against a bitmap, as the kernel
// keeps the list: a list it accepts is compact, names the same ports as
// the bitmap, formats to text that parses back to itself, and its set
// operations agree with the bitmap's.
func FuzzParsePortList(f *testing.F) {
	for _, s := range []string{"", "8080", "8080,9000-9999", "9000-9005,9003-9010", "1,2,3", "0-65535", "3-1", "1,,2", " 7 , 9-10\n"} {
		f.Add(s, "9000-9009")
	}
	f.Fuzz(func(t *testing.T, s, other string) {
		a, err := ParsePortList(s)
		if err != nil {
			return
		}
		b, err := ParsePortList(other)
		if err != nil {
			return
		}
		checkCompact(t, a)
		back, err := ParsePortList(a.String())
		if err != nil || !reflect.DeepEqual(back, a) {
			t.Fatalf("%q: String %q parses to %v, %v", s, a.String(), back, err)
		}
		ba, bb := bitmap(a), bitmap(b)
		lo, hi := 0, -1 // the span of b (nothing when b is empty)
		if len(b) > 0 {
			lo, hi = b[0].Lo, b[len(b)-1].Hi
		}
		for _, op := range []struct {
			name string
			got  Ranges
			want func(p int, x, y bool) bool
		}{
			{"union", a.Union(b), func(_ int, x, y bool) bool { return x || y }},
			{"minus", a.Minus(b), func(_ int, x, y bool) bool { return x && !y }},
			{"within", a.Within(lo, hi), func(p int, x, _ bool) bool { return x && p >= lo && p <= hi }},
		} {
			checkCompact(t, op.got)
			g := bitmap(op.got)
			for p := range g {
				if g[p] != op.want(p, ba[p], bb[p]) {
					t.Fatalf("%q %s %q: port %d is %v", s, op.name, other, p, g[p])
				}
			}
		}
		if n := a.Len(); n != count(ba) {
			t.Fatalf("%q: Len %d, bitmap has %d", s, n, count(ba))
		}
	})
}

// checkCompact fails unless s is sorted, disjoint, never adjacent and
// within 0..MaxPort.
func checkCompact(t *testing.T, s Ranges) {
	t.Helper()
	for i, r := range s {
		if r.Lo < 0 || r.Hi > MaxPort || r.Hi < r.Lo || i > 0 && r.Lo <= s[i-1].Hi+1 {
			t.Fatalf("not compact: %v", s)
		}
	}
}

func bitmap(s Ranges) []bool {
	b := make([]bool, MaxPort+1)
	for _, r := range s {
		for p := r.Lo; p <= r.Hi; p++ {
			b[p] = true
		}
	}
	return b
}

func count(b []bool) int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}
