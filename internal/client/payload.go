package client

import (
	"fmt"

	"github.com/wsplan/wsplan/internal/payload"
	"github.com/wsplan/wsplan/internal/units"
)

// The bytes a phase sends are made once per phase from internal/payload's
// kinds, by the helpers below, shared by every kind that sends data
// messages (echo, rate, broadcast, script); the client re-masks them per
// message.

// maxPayload bounds a message's payload: each loop keeps one masked copy.
const maxPayload = 64 << 20

// SizeOf is a declared size key's value in bytes: nil (not given, and no
// default applied) is 0.
func SizeOf(s *units.Size) int {
	if s == nil {
		return 0
	}
	return int(*s)
}

// CheckPayloadKind checks a phase's payload kind and file.
func CheckPayloadKind(kind string, file []byte) error {
	switch kind {
	case "", payload.Random, payload.Text:
		if len(file) > 0 {
			return fmt.Errorf("payload file given for payload kind %q: only %q uses one", kind, payload.File)
		}
		return nil
	case payload.File:
		if len(file) == 0 {
			return fmt.Errorf("payload kind %q needs the file's content, got none", kind)
		}
		return nil
	}
	return fmt.Errorf("payload kind must be one of %v, got %q", payload.Kinds, kind)
}

// MakeKindPayload returns n bytes of the given payload kind, valid UTF-8
// for text messages.
func MakeKindPayload(kind string, n int, text bool, file []byte) ([]byte, error) {
	if kind == "" {
		kind = payload.Random
	}
	var b []byte
	var err error
	if text {
		b, err = payload.TextPayload(kind, n, file)
	} else {
		b, err = payload.Payload(kind, n, file)
	}
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return b, nil
}

// MakePayload returns n bytes of the default kind (random): ChaCha8
// bytes, or lowercase letters (valid UTF-8) for text.
func MakePayload(n int, text bool) []byte {
	b, err := MakeKindPayload(payload.Random, n, text, nil)
	if err != nil {
		panic(err) // the random kind fails only for n < 0, a caller's bug
	}
	return b
}
