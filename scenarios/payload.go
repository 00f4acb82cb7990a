package scenarios

import (
	"fmt"
	"io"
	"os"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/payload"
)

// WireDefs are the byte counts of the phases that send messages: what
// permessage-deflate saved.
var WireDefs = []metrics.Def{
	{Name: metrics.BytesPayload, Kind: metrics.Bytes, Doc: "message bytes sent and received (uncompressed), warm-up included"},
	{Name: metrics.BytesWire, Kind: metrics.Bytes, Doc: "the same messages as their frames carried them: compressed under permessage-deflate (frame headers and TLS not counted)"},
	{Name: metrics.WireRatio, Kind: metrics.Float, Doc: "bytes_wire / bytes_payload: 1 without compression, lower is better"},
}

// WireValues records the byte counts and their ratio.
func WireValues(v metrics.Values, payloadBytes, wire int64) {
	v[metrics.BytesPayload] = payloadBytes
	v[metrics.BytesWire] = wire
	v[metrics.WireRatio] = 1.0 // nothing sent: nothing saved
	if payloadBytes > 0 {
		v[metrics.WireRatio] = float64(wire) / float64(payloadBytes)
	}
}

// ValidatePayloadKind checks payload_kind and file: the kind is one of
// internal/payload's, a file is given exactly with kind file, and it can
// be read (the client needs size bytes of it).
func ValidatePayloadKind(kind, file string, size int) []FieldError {
	var errs []FieldError
	switch kind {
	case "", payload.Random, payload.Text:
		if file != "" {
			errs = append(errs, FieldError{Field: "file", Msg: fmt.Sprintf("only with payload_kind: %s, got payload_kind: %s", payload.File, kindOrDefault(kind))})
		}
	case payload.File:
		if file == "" {
			errs = append(errs, FieldError{Field: "file", Msg: "is required with payload_kind: file: the file whose bytes messages hold"})
		} else if b, err := readPayloadFile(file, size); err != nil {
			errs = append(errs, FieldError{Field: "file", Msg: err.Error()})
		} else if len(b) == 0 && size > 0 {
			errs = append(errs, FieldError{Field: "file", Msg: fmt.Sprintf("%s is empty: messages of %d bytes need content", file, size)})
		}
	default:
		errs = append(errs, FieldError{Field: "payload_kind", Msg: fmt.Sprintf("want one of %v, got %q", payload.Kinds, kind)})
	}
	return errs
}

func kindOrDefault(kind string) string {
	if kind == "" {
		return payload.Random
	}
	return kind
}

// PayloadFile returns the bytes of a payload_kind: file phase (at most
// size: the client cycles them to the payload size), nil for other kinds.
func PayloadFile(kind, file string, size int) ([]byte, error) {
	if kind != payload.File {
		return nil, nil
	}
	return readPayloadFile(file, size)
}

// readPayloadFile reads the first size bytes of a file (the client cycles
// them, so no more are needed).
func readPayloadFile(path string, size int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(size)))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return b, nil
}
