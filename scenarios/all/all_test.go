package all_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/scenarios"
	_ "github.com/wsplan/wsplan/scenarios/all"
)

// The rules every kind keeps, over every built-in kind: the ones in a
// package of their own register only when this package imports them.

// TestEveryKindDeclaresFaults: every kind that counts units that can go
// wrong declares them, and each fault is a Count metric of the kind (its
// Of too), so that no count slips past the rule.
func TestEveryKindDeclaresFaults(t *testing.T) {
	for _, k := range scenarios.Kinds() {
		defs := map[string]metrics.Def{}
		for _, d := range scenarios.MetricDefs(k.Name) {
			defs[d.Name] = d
		}
		for _, f := range k.Faults {
			if d, ok := defs[f.Metric]; !ok || d.Kind != metrics.Count {
				t.Errorf("%s: fault %q is not a count metric of the kind", k.Name, f.Metric)
			}
			if d, ok := defs[f.Of]; f.Of != "" && (!ok || d.Kind != metrics.Count) {
				t.Errorf("%s: fault %q counts of %q, not a count metric of the kind", k.Name, f.Metric, f.Of)
			}
			if f.What == "" {
				t.Errorf("%s: fault %q says nothing", k.Name, f.Metric)
			}
		}
		// A metric named like a fault count is declared as one.
		for _, name := range []string{metrics.Failed, metrics.Lost, metrics.Dropped, "errors", "downgraded", "timeouts", "mismatched"} {
			if _, has := defs[name]; !has {
				continue
			}
			declared := false
			for _, f := range k.Faults {
				declared = declared || f.Metric == name
			}
			if !declared && !(k.Name == "broadcast" && (name == metrics.Lost || name == metrics.Dropped)) {
				t.Errorf("%s: metric %q counts units that went wrong but is not a declared fault", k.Name, name)
			}
		}
	}
}

// TestEveryKindsTags: every registered kind's tags parse, and a zero
// phase with its defaults reports only what is required.
func TestEveryKindsTags(t *testing.T) {
	for _, k := range scenarios.Kinds() {
		p := k.New()
		scenarios.Defaults(p, scenarios.Context{Conns: 10})
		scenarios.Check(p, scenarios.Context{Conns: 10}) // panics on a bad tag
	}
}

// TestKeysDeclaredOnce: a kind that drives a client kind declares its
// keys once, as fields of the client's params that its phase struct holds
// inline (decoding, bounds, schema and the shard wire read the same
// fields); only keys of the plan side alone are declared here. Adding a
// key to such a kind is one field of its client params.
func TestKeysDeclaredOnce(t *testing.T) {
	params := reflect.TypeFor[client.Params]()
	own := map[string]string{ // kind → why it declares keys of its own
		"conformance": "it runs internal/autobahn, no client kind",
		"search":      "vary, start, step… steer the search; the steps' keys are rate.Send",
	}
	for _, k := range scenarios.Kinds() {
		typ := reflect.TypeOf(k.New()).Elem()
		var here, inline []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			switch {
			case decl.Name(f) == "":
			case f.Anonymous && reflect.PointerTo(f.Type).Implements(params):
				inline = append(inline, f.Type.Name())
			default:
				here = append(here, decl.Name(f))
			}
		}
		switch why, ok := own[k.Name]; {
		case ok:
			t.Logf("%s declares %d keys of its own: %s", k.Name, len(here), why)
		case len(here) > 0 || len(inline) != 1:
			t.Errorf("%s: keys %v declared in scenarios, client params inline %v; want none and one", k.Name, here, inline)
		}
	}
}

// TestKindsRegistered: every kind's client params and result decode by
// name, as the shard wire decodes them.
func TestKindsRegistered(t *testing.T) {
	for _, name := range client.KindNames() {
		p, err := client.DecodeParams(name, []byte("{}"))
		if err != nil {
			t.Fatalf("kind %s: %v", name, err)
		}
		if client.KindName(p) != name {
			t.Errorf("kind %s: params say %s", name, client.KindName(p))
		}
		b, _ := json.Marshal(p)
		if _, err := client.DecodeParams(name, b); err != nil {
			t.Errorf("kind %s: %v", name, err)
		}
		b, _ = json.Marshal(client.NewResult(p))
		if _, err := client.DecodeResult(name, b); err != nil {
			t.Errorf("kind %s: %v", name, err)
		}
	}
	for _, k := range scenarios.Names() {
		if _, ok := client.LookupKind(k); !ok && k != "conformance" && k != "search" {
			t.Errorf("kind %s: no client kind of that name", k)
		}
	}
}
