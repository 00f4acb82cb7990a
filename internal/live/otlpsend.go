package live

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// OTLP/HTTP (opentelemetry-proto's docs/specification.md, "OTLP/HTTP").
const (
	// protobufType is the binary protobuf encoding's Content-Type, of the
	// request and of a response that carries a message.
	protobufType = "application/x-protobuf"
	// maxOTLPResponse bounds the response body read (a 2xx's is empty or a
	// small ExportMetricsServiceResponse, an error's a status or a text).
	maxOTLPResponse = 64 << 10
	// maxExcerpt bounds the part of an error's body an error quotes.
	maxExcerpt = 200
)

// send posts samples as one export request. A non-2xx answer is an error
// quoting its status and the start of its body; so is a 2xx whose
// partial_success says points were rejected. Nothing is retried: the next
// push carries the cumulative values anyway.
func (o *otlp) send(ctx context.Context, samples []Sample, at time.Time) error {
	body, err := exportRequest(o.resourceMetrics(samples, at))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", protobufType)
	req.Header.Set("User-Agent", "wsplan")
	for k, v := range o.headers {
		req.Header.Set(k, v)
	}
	resp, err := o.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxOTLPResponse+1))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("otlp: %s (body: %s)", resp.Status, excerpt(b))
	}
	if err != nil {
		return fmt.Errorf("otlp: %s: reading the response: %w", resp.Status, err)
	}
	if len(b) > maxOTLPResponse {
		return fmt.Errorf("otlp: %s: response body over %d bytes", resp.Status, maxOTLPResponse)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != protobufType {
		return nil // a 2xx with no message (or one in JSON, never asked for)
	}
	return partialSuccess(b)
}

// exportRequest frames rms as an OTLP ExportMetricsServiceRequest, whose
// one field is 1: repeated ResourceMetrics. Each element is a
// length-delimited record: the tag (field 1, wire type 2), the length as a
// varint, then the marshalled ResourceMetrics. The generated Go type of
// the request lives in go.opentelemetry.io/proto/otlp/collector/metrics/v1
// beside its gRPC service and gateway, which import gRPC: framing the one
// field here keeps gRPC out of the build.
func exportRequest(rms ...*metricspb.ResourceMetrics) ([]byte, error) {
	var b []byte
	for _, rm := range rms {
		m, err := proto.Marshal(rm)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b, nil
}

// partialSuccess reads an ExportMetricsServiceResponse: field 1,
// partial_success, a message of rejected_data_points (1, int64) and
// error_message (2, string). Rejected points or a message make an error,
// as they did with OpenTelemetry's exporter; unknown fields are skipped.
func partialSuccess(b []byte) error {
	var rejected int64
	var msg string
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		return fields(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
			switch {
			case num == 1 && typ == protowire.VarintType:
				n, _ := protowire.ConsumeVarint(v)
				rejected = int64(n)
			case num == 2 && typ == protowire.BytesType:
				msg = string(v)
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("otlp: bad ExportMetricsServiceResponse: %w", err)
	}
	if rejected == 0 && msg == "" {
		return nil
	}
	if msg == "" {
		msg = "empty message"
	}
	return fmt.Errorf("otlp: partial success: %s (%d metric data points rejected)", excerpt([]byte(msg)), rejected)
}

// fields calls f with each field of the protobuf message b: its number,
// wire type and value (a varint's bytes, a length-delimited field's
// contents, a fixed field's bytes).
func fields(b []byte, f func(protowire.Number, protowire.Type, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		v := b[:n]
		if typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(v)
		}
		if err := f(num, typ, v); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// excerpt is the start of a response body on one line: whitespace runs
// become one space, invalid UTF-8 and control characters are replaced,
// and past maxExcerpt bytes it is cut (on a rune) and ends in "…".
func excerpt(b []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "\uFFFD")), " ")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '\uFFFD'
		}
		return r
	}, s)
	if s == "" {
		return "(empty)"
	}
	if len(s) <= maxExcerpt {
		return s
	}
	cut := maxExcerpt
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
