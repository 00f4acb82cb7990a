package client

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histograms: one set of bounds for every histogram, so that
// those of different loops, processes and shards merge exactly, and their
// exact form on the shard wire.

// Histogram bounds shared by every latency histogram, so histograms of
// different processes merge exactly.
const (
	HistMin     = 1                        // 1 ns
	HistMax     = int64(120 * time.Second) // longest recordable latency
	HistSigFigs = 3
)

// NewHistogram returns an empty latency histogram with the shared bounds.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(HistMin, HistMax, HistSigFigs)
}

// Record adds a latency to h.
func Record(h *hdrhistogram.Histogram, v int64) {
	if err := h.RecordValue(v); err != nil {
		// Only values above HistMax (120 s) fail; count them at the top.
		_ = h.RecordValue(HistMax) // HistMax is within the bounds: cannot fail
	}
}

// Hist is a latency histogram (ns) with the shared bounds of NewHistogram.
// It marshals to JSON as the base64 of its V2 compressed encoding, so a
// histogram crosses the shard wire exactly.
type Hist struct{ *hdrhistogram.Histogram }

// NewHist returns an empty latency histogram.
func NewHist() Hist { return Hist{NewHistogram()} }

// Add merges o into h (allocating h if it is empty).
func (h *Hist) Add(o Hist) {
	if o.Histogram == nil {
		return
	}
	if h.Histogram == nil {
		h.Histogram = NewHistogram()
	}
	h.Histogram.Merge(o.Histogram)
}

// MarshalJSON implements json.Marshaler.
func (h Hist) MarshalJSON() ([]byte, error) {
	if h.Histogram == nil {
		return []byte(`""`), nil
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, err
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

// UnmarshalJSON implements json.Unmarshaler.
func (h *Hist) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == "" {
		h.Histogram = nil
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	out, err := hdrhistogram.Decode(raw)
	if err != nil {
		return fmt.Errorf("decoding histogram: %w", err)
	}
	h.Histogram = out
	return nil
}
