package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/metrics"
)

func TestValidatePayloadKind(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "chat.txt")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(full, []byte("hello, world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind, file string
		want       string // "" = valid; else a substring of the one error
	}{
		{"", "", ""},
		{"random", "", ""},
		{"text", "", ""},
		{"file", full, ""},
		{"file", "", "file: is required with payload_kind: file"},
		{"file", filepath.Join(dir, "missing"), "file: open "},
		{"file", empty, "is empty: messages of 1024 bytes need content"},
		{"text", full, "file: only with payload_kind: file, got payload_kind: text"},
		{"", full, "got payload_kind: random"},
		{"json", "", `payload_kind: want one of [random text file], got "json"`},
	}
	for _, tt := range tests {
		errs := ValidatePayloadKind(tt.kind, tt.file, 1024)
		switch {
		case tt.want == "" && len(errs) > 0:
			t.Errorf("%q %q: %v, want valid", tt.kind, tt.file, errs)
		case tt.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Field+": "+errs[0].Msg, tt.want)):
			t.Errorf("%q %q: %v, want %q", tt.kind, tt.file, errs, tt.want)
		}
	}
	b, err := PayloadFile("file", full, 5)
	if err != nil || string(b) != "hello" {
		t.Errorf("PayloadFile = %q, %v; want the first 5 bytes", b, err)
	}
	if b, err := PayloadFile("text", full, 5); b != nil || err != nil {
		t.Errorf("PayloadFile for text = %q, %v; want nothing", b, err)
	}
}

func TestWireValues(t *testing.T) {
	for _, tt := range []struct {
		payload, wire int64
		ratio         float64
	}{{2048, 2048, 1}, {4000, 1000, 0.25}, {0, 0, 1}} {
		v := metrics.Values{}
		WireValues(v, tt.payload, tt.wire)
		if v["wire_ratio"] != tt.ratio || v["bytes_payload"] != tt.payload || v["bytes_wire"] != tt.wire {
			t.Errorf("WireValues(%d, %d) = %v, want ratio %v", tt.payload, tt.wire, v, tt.ratio)
		}
	}
}
