package report

import (
	"math"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
)

func TestDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0ns"},
		{30, "30ns"},
		{999, "999ns"},
		{time.Microsecond, "1.00us"},
		{850314, "850.31us"},
		{850315, "850.32us"}, // half up
		{999994, "999.99us"},
		{999995, "1.00ms"}, // never "1000.00us"
		{1234567, "1.23ms"},
		{12345678, "12.35ms"},
		{999995 * time.Microsecond, "1.00s"},
		{2600 * time.Millisecond, "2.60s"},
		{59994 * time.Millisecond, "59.99s"},
		{59995 * time.Millisecond, "1m0.00s"},
		{62504 * time.Millisecond, "1m2.50s"},
		{62505 * time.Millisecond, "1m2.51s"},
		{time.Hour + 5*time.Second, "1h0m5.00s"},
		{-1500 * time.Microsecond, "-1.50ms"},
	}
	for _, tt := range tests {
		if got := Duration(tt.in); got != tt.want {
			t.Errorf("Duration(%d) = %q, want %q", int64(tt.in), got, tt.want)
		}
	}
}

func TestNumber(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{35012.345, "35012.3"},
		{28000, "28000"},
		{2000000, "2000000"},
		{0.5, "0.5"},
		{0.0004, "0.0004"},
		{1e12, "1000000000000"},
		{1e20, "1e+20"},
		{math.Inf(1), "+Inf"},
	}
	for _, tt := range tests {
		if got := Number(tt.in); got != tt.want {
			t.Errorf("Number(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDelta(t *testing.T) {
	tests := []struct {
		cur, base float64
		want      string
	}{
		{110, 100, " (+10.0%)"},
		{90, 100, " (-10.0%)"},
		{100, 100, " (+0.0%)"},
		{100.0001, 100, " (+0.0%)"},
		{99.9999, 100, " (+0.0%)"}, // never "-0.0%"
		{5, 0, ""},
		{-5, -10, " (+50.0%)"},
	}
	for _, tt := range tests {
		if got := delta(tt.cur, tt.base); got != tt.want {
			t.Errorf("delta(%v, %v) = %q, want %q", tt.cur, tt.base, got, tt.want)
		}
	}
}

func TestShort(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"context deadline exceeded", "context deadline exceeded"},
		{"3 of 1000 connections failed: dial tcp: refused ×3", "3 of 1000 connections failed"},
		{"first line\nsecond", "first line"},
		{"a very long reason that goes on and on and on without any colon at all", "a very long reason that goes on and on and on w…"},
		{": leading colon", ": leading colon"},
		{"server exited (signal: killed) during the phase: echo: read tcp", "server exited (signal: killed) during the phase"},
		{"unbalanced) paren: x", "unbalanced) paren"},
	}
	for _, tt := range tests {
		if got := short(tt.in); got != tt.want {
			t.Errorf("short(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestUnits(t *testing.T) {
	if got := Percent(12.345); got != "12.35%" && got != "12.34%" {
		t.Errorf("Percent = %q", got)
	}
	if got := Percent(195.5); got != "195.50%" {
		t.Errorf("Percent(195.5) = %q", got)
	}
	if got := MiB(66*1<<20 + 1<<19); got != "66.50M" {
		t.Errorf("MiB = %q", got)
	}
	if got := GiB(24683548 * 1024); got != "23.54 GiB" {
		t.Errorf("GiB = %q", got)
	}
	for _, c := range []struct {
		n    int64
		want string
	}{{544, "544 B"}, {1403, "1.37 KiB"}, {1<<20 - 1, "1024.00 KiB"}} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	// Per-connection sizes are small: the generic tables show them in bytes.
	if got := value(metrics.Bytes, metrics.Values{"m": int64(1403)}, "m"); got != "1.37 KiB" {
		t.Errorf("value(1403 B) = %q", got)
	}
	if got := value(metrics.Bytes, metrics.Values{"m": int64(54046720)}, "m"); got != "51.54M" {
		t.Errorf("value(51.54 MiB) = %q", got)
	}
}
