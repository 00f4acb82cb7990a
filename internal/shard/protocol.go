// Package shard spreads the load-generating client over several processes.
//
// A shard is a `wsplan shard` child: one client.Client with its own fd limit
// and its own source addresses. The orchestrator's Group speaks to each shard
// in JSON lines over its stdin/stdout: a request per phase, progress lines
// while it runs, then a reply with the phase's result. Results merge exactly:
// counts are summed, HDR histograms merged (never percentiles averaged), and
// the phase's wall time is the longest shard's, since all shards start
// together.
//
// Data flow: engine → Group.Connect/Echo/Rate/Hold → every shard at once →
// merge → scenarios. A shard that dies fails the phase with its exit reason
// and log tail; the others are stopped cleanly.
package shard

import (
	"encoding/base64"
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/wsplan/wsplan/internal/client"
)

// Request is one line from the orchestrator to a shard.
type Request struct {
	Op      string                `json:"op"` // "connect", "echo", "rate", "hold", "cancel", "close"
	Connect *client.ConnectParams `json:"connect,omitempty"`
	Echo    *client.EchoParams    `json:"echo,omitempty"`
	Rate    *client.RateParams    `json:"rate,omitempty"`
	Hold    *client.HoldParams    `json:"hold,omitempty"`
}

// Reply is one line from a shard to the orchestrator: progress while a
// phase runs (Op "progress"), then the phase's result (Op = the request's).
type Reply struct {
	Op       string             `json:"op"`
	Done     int64              `json:"done,omitempty"` // progress: units finished so far
	Conns    int                `json:"conns"`          // open connections after the phase
	Connect  *ConnectResult     `json:"connect,omitempty"`
	Echo     *EchoResult        `json:"echo,omitempty"`
	Rate     *RateResult        `json:"rate,omitempty"`
	Hold     *client.HoldResult `json:"hold,omitempty"`
	Err      string             `json:"err,omitempty"`
	Ready    bool               `json:"ready,omitempty"` // first line: the shard is up
	Pid      int                `json:"pid,omitempty"`
	Warnings []string           `json:"warnings,omitempty"`
}

// Histogram is an HDR histogram on the wire (compressed V2 encoding).
type Histogram string

func encodeHist(h *hdrhistogram.Histogram) (Histogram, error) {
	if h == nil {
		return "", nil
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", err
	}
	return Histogram(base64.StdEncoding.EncodeToString(b)), nil
}

func (h Histogram) decode() (*hdrhistogram.Histogram, error) {
	if h == "" {
		return client.NewHistogram(), nil
	}
	b, err := base64.StdEncoding.DecodeString(string(h))
	if err != nil {
		return nil, err
	}
	out, err := hdrhistogram.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("decoding histogram: %w", err)
	}
	return out, nil
}

// ConnectResult is client.ConnectResult on the wire.
type ConnectResult struct {
	client.ConnectResult
	Latency Histogram `json:"latency"`
}

// EchoResult is client.EchoResult on the wire.
type EchoResult struct {
	client.EchoResult
	Latency Histogram `json:"latency"`
}

func wireConnect(r client.ConnectResult) (*ConnectResult, error) {
	h, err := encodeHist(r.Latency)
	r.Latency = nil
	return &ConnectResult{ConnectResult: r, Latency: h}, err
}

func wireEcho(r client.EchoResult) (*EchoResult, error) {
	h, err := encodeHist(r.Latency)
	r.Latency = nil
	return &EchoResult{EchoResult: r, Latency: h}, err
}

// RateResult is client.RateResult on the wire: the timeline carries each
// second's latencies (sparse histograms), and the overall latency
// histogram is rebuilt from them, so merged shards give exact percentiles
// overall and per second.
type RateResult struct {
	client.RateResult
	Timeline []RateSecond `json:"timeline"`
}

// RateSecond is client.RateSecond on the wire.
type RateSecond struct {
	Sent    int64     `json:"sent"`
	Recv    int64     `json:"recv"`
	Late    int64     `json:"late"`
	Latency Histogram `json:"latency,omitempty"` // "" = no echo completed
}

func wireRate(r client.RateResult) (*RateResult, error) {
	out := &RateResult{Timeline: make([]RateSecond, len(r.Seconds))}
	for i, s := range r.Seconds {
		w := RateSecond{Sent: s.Sent, Recv: s.Recv, Late: s.Late}
		if s.Latency != nil && s.Latency.TotalCount() > 0 {
			b, err := s.Latency.Encode()
			if err != nil {
				return nil, err
			}
			w.Latency = Histogram(b)
		}
		out.Timeline[i] = w
	}
	r.Latency, r.Seconds = nil, nil
	out.RateResult = r
	return out, nil
}

// seconds decodes the timeline.
func (r *RateResult) seconds() ([]client.RateSecond, error) {
	out := make([]client.RateSecond, len(r.Timeline))
	for i, w := range r.Timeline {
		out[i] = client.RateSecond{Sent: w.Sent, Recv: w.Recv, Late: w.Late}
		if w.Latency == "" {
			continue
		}
		h, err := hdrhistogram.DecodePacked([]byte(w.Latency))
		if err != nil {
			return nil, fmt.Errorf("decoding histogram of second %d: %w", i, err)
		}
		out[i].Latency = h
	}
	return out, nil
}
