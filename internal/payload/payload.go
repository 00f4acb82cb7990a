// Package payload makes the bytes an echo or stream phase sends: what the
// message holds decides what permessage-deflate can do with it, so a
// compression benchmark must choose it (issue 15, item 5). Scenarios call
// Payload (binary messages) or TextPayload (text messages) once per phase; the
// client sends the result, pre-encoded, over and over.
//
// Compression ratio of each kind at 1 KiB, deflate level 1 (BestSpeed),
// each message compressed on its own (internal/pmdeflate's compressor,
// measured by TestRatios there; wire bytes / payload bytes, smaller is
// better):
//
//	random (binary)   1.006  ChaCha8 bytes do not compress at all
//	random (text)     1.006  level 1 finds no match in random letters and
//	                         stores the block (a Huffman-only block: 0.61)
//	text              0.335  JSON chat events: repeated keys, names, times
//	file              depends on the file (this package's deflate.go: 0.59)
//
// The text kind has a fixed seed and an embedded message list, so every
// run sends the same bytes; it imitates what a chat application sends,
// not any one real corpus.
//
// Payload imports no other package of this module.
package payload

import (
	"bytes"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"strconv"
	"unicode/utf8"
)

// Payload kinds, the values of a phase's payload_kind.
const (
	// Random is the default kind, wsplan's behaviour before payload_kind
	// existed: ChaCha8 bytes from a zero seed (lowercase letters in text
	// messages). It is incompressible by design.
	Random = "random"
	// Text is chat-like English as a chat application sends it: JSON
	// chat events, one a line, built deterministically from an embedded
	// list of chat messages.
	Text = "text"
	// File is the bytes of a file, cycled to the payload size.
	File = "file"
)

// Kinds lists the payload kinds, the default first.
var Kinds = []string{Random, Text, File}

// chat holds the embedded chat messages, one a line.
//
//go:embed chat.txt
var chat []byte

// chatChannels are the channels of the text kind.
var chatChannels = []string{"general", "dev", "ops", "random", "support"}

// chatNames are the speakers of the text kind.
var chatNames = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar"}

// Payload returns n bytes for binary messages of the given kind. file is
// the content of the payload file, used (and required non-empty when n >
// 0) by the file kind only. The result is the same for the same
// arguments.
func Payload(kind string, n int, file []byte) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("payload size must be >= 0, got %d", n)
	}
	switch kind {
	case Random:
		return randomBytes(n), nil
	case Text:
		return chatText(n), nil
	case File:
		if n > 0 && len(file) == 0 {
			return nil, fmt.Errorf("payload_kind file: the file is empty, and the payload is %d bytes", n)
		}
		b := make([]byte, n)
		for i := 0; i < n; i += len(file) {
			copy(b[i:], file)
		}
		return b, nil
	}
	return nil, fmt.Errorf("payload_kind must be one of %v, got %q", Kinds, kind)
}

// TextPayload returns n bytes of valid UTF-8 for text messages of the
// given kind: random gives lowercase letters, text the same chat text as
// Payload, file the cycled file bytes, an error if they are not valid
// UTF-8 (a rune cut at the end of the payload counts).
func TextPayload(kind string, n int, file []byte) ([]byte, error) {
	b, err := Payload(kind, n, file)
	if err != nil {
		return nil, err
	}
	switch kind {
	case Random:
		for i := range b {
			b[i] = 'a' + b[i]%26
		}
	case File:
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("payload_kind file: %d bytes cycled from the file are not valid UTF-8, which text messages must be: use binary messages", n)
		}
	}
	return b, nil
}

// randomBytes returns n ChaCha8 bytes from the zero seed.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	var seed [32]byte
	// ChaCha8.Read never fails.
	_, _ = rand.NewChaCha8(seed).Read(b)
	return b
}

// chatText returns n bytes of chat events as a chat application sends
// them over a WebSocket, one JSON object a line:
//
//	{"type":"message","channel":"general","user":"alice","time":"09:00","text":"morning all"}
//
// channels, users and texts drawn from a seeded ChaCha8, the clock
// advancing 0-2 minutes an event, the last line cut at n bytes.
func chatText(n int) []byte {
	lines := bytes.Split(bytes.TrimSpace(chat), []byte("\n"))
	r := rand.New(rand.NewChaCha8([32]byte{'w', 's', 'p', 'l', 'a', 'n'}))
	b := make([]byte, 0, n+256)
	minute := 9 * 60
	for len(b) < n {
		minute += r.IntN(3)
		b = append(b, `{"type":"message","channel":"`...)
		b = append(b, chatChannels[r.IntN(len(chatChannels))]...)
		b = append(b, `","user":"`...)
		b = append(b, chatNames[r.IntN(len(chatNames))]...)
		b = append(b, `","time":"`...)
		b = appendTwo(b, minute/60%24)
		b = append(b, ':')
		b = appendTwo(b, minute%60)
		b = append(b, `","text":"`...)
		b = append(b, lines[r.IntN(len(lines))]...)
		b = append(b, "\"}\n"...)
	}
	return b[:n]
}

// appendTwo appends v (0..99) as two decimal digits.
func appendTwo(b []byte, v int) []byte {
	if v < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(v), 10)
}
