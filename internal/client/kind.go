package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/wsplan/wsplan/internal/decl"
)

// A phase kind is one contract, declared in a package of its own
// (scenarios/K/, which imports this one; connect.go here is the dial
// every kind's connections come from): its Params (JSON, split over event
// loops and shards by one Split), what one event loop runs for it (a
// LoopRun), and its Result with one Merge used for loops and shards
// alike. This file is the contract's types and the registry of kinds;
// phase.go runs one. The loop's protocol layer (loop.go) and the shard
// transport name no kind: deleting a kind's package removes only its
// registration (internal/layering's TestKindPackagesApart).

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
