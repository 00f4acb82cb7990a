package payload

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// legacy is internal/client's makePayload before payload kinds: the random
// kind must keep producing exactly its bytes.
func legacy(n int, text bool) []byte {
	b := make([]byte, n)
	var seed [32]byte
	r := rand.NewChaCha8(seed)
	_, _ = r.Read(b)
	if text {
		for i := range b {
			b[i] = 'a' + b[i]%26
		}
	}
	return b
}

func TestRandomIsTodaysPayload(t *testing.T) {
	for _, n := range []int{0, 1, 125, 1024, 70000} {
		b, err := Payload(Random, n, nil)
		if err != nil || !bytes.Equal(b, legacy(n, false)) {
			t.Errorf("Payload(random, %d) differs from the legacy payload (err %v)", n, err)
		}
		b, err = TextPayload(Random, n, nil)
		if err != nil || !bytes.Equal(b, legacy(n, true)) {
			t.Errorf("TextPayload(random, %d) differs from the legacy payload (err %v)", n, err)
		}
	}
}

func TestText(t *testing.T) {
	a, err := Payload(Text, 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := TextPayload(Text, 4096, nil)
	if len(a) != 4096 || !bytes.Equal(a, b) || !utf8.Valid(a) {
		t.Fatalf("text payload: len %d, same for text messages %v, utf8 %v", len(a), bytes.Equal(a, b), utf8.Valid(a))
	}
	short, _ := Payload(Text, 100, nil)
	if !bytes.Equal(short, a[:100]) {
		t.Errorf("a shorter text payload is not a prefix of a longer one")
	}
	if !strings.HasPrefix(string(a), `{"type":"message","channel":"`) || !strings.Contains(string(a[:200]), `"time":"09:`) {
		t.Errorf("not chat lines: %q", a[:200])
	}
	if e, _ := Payload(Text, 0, nil); len(e) != 0 {
		t.Errorf("0 bytes: got %d", len(e))
	}
}

func TestFile(t *testing.T) {
	b, err := Payload(File, 7, []byte("abc"))
	if err != nil || string(b) != "abcabca" {
		t.Fatalf("got %q, %v", b, err)
	}
	if b, err := TextPayload(File, 4, []byte("hé")); err != nil || string(b) != "héh" {
		t.Errorf("valid UTF-8 file: %q, %v", b, err)
	}
	if b, err := Payload(File, 0, nil); err != nil || len(b) != 0 {
		t.Errorf("empty payload from no file: %q, %v", b, err)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"kind", func() error { _, err := Payload("zeros", 1, nil); return err }(), `payload_kind must be one of [random text file], got "zeros"`},
		{"size", func() error { _, err := Payload(Random, -1, nil); return err }(), "payload size must be >= 0, got -1"},
		{"empty file", func() error { _, err := Payload(File, 10, nil); return err }(), "payload_kind file: the file is empty, and the payload is 10 bytes"},
		{"cut rune", func() error { _, err := TextPayload(File, 2, []byte("hé")); return err }(), "payload_kind file: 2 bytes cycled from the file are not valid UTF-8, which text messages must be: use binary messages"},
		{"text kind", func() error { _, err := TextPayload("x", 1, nil); return err }(), `payload_kind must be one of [random text file], got "x"`},
	} {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("%s: got %v, want %q", tc.name, tc.err, tc.want)
		}
	}
}
