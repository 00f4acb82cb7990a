package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/wsplan/wsplan/internal/decl"
)

// A phase kind is one contract, declared in a package of its own
// (scenarios/K/, which imports this one) or, for kinds not yet moved
// there, in its own files here (K.go, K_*.go; connect.go's dial is the
// one every kind's connections come from): its Params (JSON, split over
// event loops and shards by one Split), what one event loop runs for it
// (a LoopRun), and its Result with one Merge used for loops and shards
// alike. The loop's protocol layer (loop.go) and the shard transport name
// no kind, and no kind uses another's files: deleting a kind's package
// or files removes only its registration (internal/layering's
// TestKindPackagesApart and TestKindFilesApart).

// Params are one phase kind's parameters. A params
// struct is also the declaration of its kind's plan keys: yaml, json and
// decl tags on one field each (the plan side holds it inline), so the
// plan, the JSON Schema, the shard wire and the client read the same
// fields and defaults (Ready).
// Its kind's name is the one it registered with (KindName).
type Params interface {
	// Validate returns every problem with the parameters at once.
	Validate() error
	// Split divides the phase over parts (event loops or shards) whose
	// weights are their open connections; a nil entry has nothing to do.
	Split(weights []int) []Params
	// Start prepares the phase on the client's loops.
	Start(ph *PhaseEnv) (*PhasePlan, error)
}

// Ready fills p's zero keys with their declared defaults (decl.Defaults)
// and validates it: what a driver (Client.Run, a shard group) does first.
// A plan's params come defaulted already; a test's or a shard's may not.
func Ready(p Params) error {
	decl.Defaults(p)
	return p.Validate()
}

// CheckParams returns the problems of p's keys against their declared
// bounds (decl.Check) and the kind's own rules (extra, nil ones skipped),
// as one error naming the kind; nil when there are none.
func CheckParams(p Params, extra ...error) error {
	var errs []error
	for _, e := range decl.Check(p) {
		errs = append(errs, e)
	}
	for _, e := range extra {
		if e != nil {
			errs = append(errs, e)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("client: %s: %w", KindName(p), errors.Join(errs...))
}

// Result is what one phase kind measured: a struct that embeds Ended (its
// stop reason, which Client.Run settles). Merge adds another part's result
// of the same kind (an event loop's, or a shard's) into this one: counts
// summed, histograms merged exactly, timelines merged second by second,
// stop reasons by MergeStop.
type Result interface {
	Merge(other Result)
	ended() *Ended // Ended's: only a type that embeds it is a Result
}

// Ended is the stop reason every Result embeds (JSON "stopped"): why the
// phase ended early, "" = it ran to its end. A loop's share sets
// StopNoConnections when it lost every connection with work left (or the
// kind's PhasePlan.Done does, for the whole phase); Merge merges it with
// MergeStop; Client.Run settles it last: the reason the run itself saw
// (canceled, deadline, closed) wins over the one the parts left.
type Ended struct {
	Stopped StopReason `json:"stopped"`
}

func (e *Ended) ended() *Ended { return e }

// settle makes why, or when the run saw none the reason res's parts left,
// res's stop reason, and returns it.
func settle(res Result, why StopReason) StopReason {
	if res == nil {
		return why // params of no registered kind (a test's), and no part
	}
	e := res.ended()
	if why == "" {
		why = e.Stopped
	}
	e.Stopped = why
	return why
}

// Kind registers a phase kind's name and types with the client; KindOf
// makes one.
type Kind struct {
	Name string
	// Forget drops what the kind keeps for a client beyond one phase
	// (broadcast's subscriber sets); Client.Close calls it. nil = nothing.
	Forget func(c *Client)

	newParams func() Params // a pointer to zero params, for JSON decoding
	newResult func() Result // a pointer to an empty result, for JSON decoding
}

// KindOf is the Kind name whose params and result are *P and *R: their
// constructors derived from the types, which the compiler checks against
// Params and Result. A kind registers with Register(KindOf[Params,
// Result](Name)) and sets Forget on it when it needs one.
func KindOf[P, R any, PP interface {
	*P
	Params
}, RP interface {
	*R
	Result
}](name string) Kind {
	return Kind{Name: name, newParams: func() Params { return PP(new(P)) }, newResult: func() Result { return RP(new(R)) }}
}

var (
	kindsMu sync.RWMutex
	kinds   = map[string]Kind{}
	names   = map[reflect.Type]string{} // a kind's params type -> its name
)

// Register adds a phase kind made by KindOf; kind files call it from init.
func Register(k Kind) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if _, dup := kinds[k.Name]; dup {
		panic("client: duplicate kind " + k.Name)
	}
	if k.newParams == nil {
		panic("client: kind " + k.Name + " not made by KindOf")
	}
	kinds[k.Name] = k
	names[reflect.TypeOf(k.newParams())] = k.Name
}

// KindName returns the name p's kind registered with, e.g. "echo"; ""
// for params of no registered kind.
func KindName(p Params) string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	return names[reflect.TypeOf(p)]
}

// forgetClient drops what every kind keeps for c (Kind.Forget).
func forgetClient(c *Client) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	for _, k := range kinds {
		if k.Forget != nil {
			k.Forget(c)
		}
	}
}

// LookupKind returns the registered kind with that name.
func LookupKind(name string) (Kind, bool) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// KindNames returns every registered kind's name, sorted.
func KindNames() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	out := make([]string, 0, len(kinds))
	for n := range kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DecodeParams decodes a kind's JSON parameters.
func DecodeParams(kind string, b []byte) (Params, error) {
	k, ok := LookupKind(kind)
	if !ok {
		return nil, fmt.Errorf("client: unknown phase kind %q", kind)
	}
	p := k.newParams()
	if err := json.Unmarshal(b, p); err != nil {
		return nil, fmt.Errorf("client: %s params: %w", kind, err)
	}
	return p, nil
}

// DecodeResult decodes a kind's JSON result.
func DecodeResult(kind string, b []byte) (Result, error) {
	k, ok := LookupKind(kind)
	if !ok {
		return nil, fmt.Errorf("client: unknown phase kind %q", kind)
	}
	r := k.newResult()
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("client: %s result: %w", kind, err)
	}
	return r, nil
}

// NewResult returns an empty result of p's kind.
func NewResult(p Params) Result {
	k, ok := LookupKind(KindName(p))
	if !ok {
		return nil
	}
	return k.newResult()
}

// StopReason says why a phase ended early; "" = it ran to its end.
type StopReason string

// Reasons a phase stopped early.
const (
	StopCanceled      StopReason = "canceled"       // the context was canceled
	StopDeadline      StopReason = "deadline"       // the phase's deadline passed (PhasePlan.Deadline)
	StopClosed        StopReason = "closed"         // Close was called
	StopNoConnections StopReason = "no connections" // every usable connection was lost with work left
)

// MergeStop is the stop reason of two parts of a phase: the first other
// than StopNoConnections, which holds only when both parts lost all of
// their connections. Merging starts from the first part (not from ""), so
// that "every part" is what StopNoConnections means.
func MergeStop(a, b StopReason) StopReason {
	switch {
	case a != "" && a != StopNoConnections:
		return a
	case b != "" && b != StopNoConnections:
		return b
	case a == StopNoConnections && b == StopNoConnections:
		return StopNoConnections
	}
	return ""
}

// Reason is why a message or a connection failed. Fixed reasons are the
// constants below; system call failures read "<call>: <errno text>", a
// server's close "server close <code>", a bad handshake its own text.
type Reason string

// Failure reasons.
const (
	ReasonTimeout         Reason = "timeout"                 // no echo, pong or handshake in time
	ReasonEOF             Reason = "eof"                     // the server closed the TCP connection
	ReasonHandshakeEOF    Reason = "handshake eof"           // closed during the upgrade
	ReasonServerClose     Reason = "server close"            // a close frame without a code
	ReasonWrongLength     Reason = "wrong length"            // an echo of another length
	ReasonPayloadMismatch Reason = "payload mismatch"        // an echo with other bytes
	ReasonWrongOpcode     Reason = "wrong opcode"            // text for binary or the reverse
	ReasonMarkerMismatch  Reason = "marker mismatch"         // a rate echo out of order or altered
	ReasonUnexpected      Reason = "unexpected message"      // a message nobody sent
	ReasonBadSubprotocol  Reason = "subprotocol not offered" // the server picked a subprotocol the client did not offer (or answered twice)
	// ReasonDeclined is a handshake whose server answered an offer of
	// permessage-deflate without it (pmdeflate.ErrDeclined's text).
	ReasonDeclined Reason = "compression asked, server declined"
)

// Corrupt reports whether r is a message that came back wrong, as opposed
// to a connection that was lost.
func (r Reason) Corrupt() bool {
	switch r {
	case ReasonWrongLength, ReasonPayloadMismatch, ReasonWrongOpcode, ReasonMarkerMismatch, ReasonUnexpected:
		return true
	}
	return false
}

// Reasons counts failures by reason.
type Reasons map[Reason]int64

// Add counts one failure; it allocates the map on first use.
func (m *Reasons) Add(r Reason) {
	if *m == nil {
		*m = Reasons{}
	}
	(*m)[r]++
}

// Merge adds o's counts.
func (m *Reasons) Merge(o Reasons) {
	if len(o) == 0 {
		return
	}
	if *m == nil {
		*m = Reasons{}
	}
	for k, v := range o {
		(*m)[k] += v
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

// PhaseEnv is what a kind's Start sees of the client.
type PhaseEnv struct {
	Client   *Client
	ID       int64     // the phase's number
	Open     []int     // open connections per loop
	Start    time.Time // when the phase started
	Progress *Progress
	kind     string // the phase's kind, for Need's error
}

// OpenTotal is the number of connections open over every loop when the
// phase started.
func (ph *PhaseEnv) OpenTotal() int {
	total := 0
	for _, o := range ph.Open {
		total += o
	}
	return total
}

// PhasePlan is a phase prepared for the loops.
type PhasePlan struct {
	// Starts holds, per loop, what begins the phase there (on the loop's
	// goroutine: it sets l.ph); nil = nothing to do on that loop.
	Starts []func(l *Loop)
	// Deadline bounds the phase's wall time; 0 = none.
	Deadline time.Duration
	// Done, when set, completes the merged result (wall time, derived
	// counts, empty histograms for the JSON); Client.Run then settles its
	// stop reason (Ended).
	Done func(res Result, wall time.Duration)
}

// Run runs one phase of any kind over the open connections and returns
// its merged result. A phase cut short returns what was measured with its
// stop reason; cancellation also returns ctx.Err(), Close ErrClosed.
// pr.Live, when set, follows this client's connections from here on.
func (c *Client) Run(ctx context.Context, p Params, pr *Progress) (Result, error) {
	pr.Following().follow(c)
	if err := Ready(p); err != nil {
		return nil, err
	}
	c.phaseMu.Lock()
	defer c.phaseMu.Unlock()
	if c.closed.Load() {
		return nil, ErrClosed
	}
	open := make([]int, len(c.loops))
	for i, l := range c.loops {
		open[i] = int(l.counts.open.Load())
	}
	env := &PhaseEnv{Client: c, ID: c.phase + 1, Open: open, Start: time.Now(), Progress: pr, kind: KindName(p)}
	plan, err := p.Start(env)
	if err != nil {
		return nil, err
	}
	c.phase++
	var posted []*Loop
	for i, s := range plan.Starts {
		if s != nil && c.loops[i].post(command{kind: cmdRun, phase: c.phase, start: s}) {
			posted = append(posted, c.loops[i])
		}
	}
	results, why := c.collect(ctx, plan.Deadline, posted)
	var rc ReconnectStats
	for _, r := range results {
		rc.Merge(r.rc)
	}
	c.rcMu.Lock()
	c.rcLast = rc
	c.rcMu.Unlock()
	var res Result
	for _, r := range results {
		if r.part == nil {
			continue
		}
		if res == nil {
			res = r.part
		} else {
			res.Merge(r.part)
		}
	}
	if res == nil {
		res = NewResult(p)
	}
	if plan.Done != nil {
		plan.Done(res, time.Since(env.Start))
	}
	return res, stopErr(ctx, settle(res, why))
}

// RunAs runs p and returns its result as R (the zero R when none).
func RunAs[R any](c *Client, ctx context.Context, p Params, pr *Progress) (R, error) {
	res, err := c.Run(ctx, p, pr)
	var out R
	if r, ok := any(res).(*R); ok && r != nil {
		out = *r
	}
	return out, err
}
