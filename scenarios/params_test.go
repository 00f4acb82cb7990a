package scenarios

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/units"
)

// tagged exercises every tag the generic defaults and bounds read.
type tagged struct {
	N    int            `yaml:"n" required:"true" min:"1" max:"10" doc:"a count"`
	Size *units.Size    `yaml:"size" default:"1KiB" min:"16" max:"1MiB" hint:"a marker"`
	Wait units.Duration `yaml:"wait" default:"5s" min:"1ns"`
	On   *bool          `yaml:"on" default:"true"`
	Opt  int            `yaml:"opt" min:"-1"`
}

func (*tagged) Validate(Context) []FieldError { return nil }

func (*tagged) Run(context.Context, *Env) (Outcome, error) { return Outcome{}, nil }

func TestTagDefaultsAndBounds(t *testing.T) {
	p := &tagged{N: 3}
	Defaults(p, Context{})
	if *p.Size != 1024 || p.Wait.D() != 5*time.Second || p.On == nil || !*p.On || p.Opt != 0 {
		t.Errorf("defaults: %+v", p)
	}
	if errs := Check(p, Context{}); len(errs) != 0 {
		t.Errorf("valid: %v", errs)
	}
	// A value given is kept, even when it is the zero of a pointer.
	f := false
	q := &tagged{N: 1, On: &f}
	Defaults(q, Context{})
	if *q.On {
		t.Error("default overwrote a given false")
	}
	for _, c := range []struct {
		edit func(p *tagged)
		want string
	}{
		{func(p *tagged) { p.N = 0 }, "[n: must be > 0, got 0]"},
		{func(p *tagged) { p.N = 11 }, "[n: must be <= 10, got 11]"},
		{func(p *tagged) { s := units.Size(8); p.Size = &s }, "[size: must be >= 16 (a marker), got 8]"},
		{func(p *tagged) { s := units.Size(2 << 20); p.Size = &s }, "[size: must be <= 1MiB, got 2MiB]"},
		{func(p *tagged) { p.Wait = 0 }, "[wait: must be > 0, got 0s]"},
		{func(p *tagged) { p.Opt = -2 }, "[opt: must be >= -1, got -2]"},
	} {
		p := &tagged{N: 3}
		Defaults(p, Context{})
		c.edit(p)
		if got := fmt.Sprint(Check(p, Context{})); got != c.want {
			t.Errorf("got %s, want %s", got, c.want)
		}
	}
}

// TestEveryKindsTags: every registered kind's tags parse, and a zero
// phase with its defaults reports only what is required.
func TestEveryKindsTags(t *testing.T) {
	for _, k := range Kinds() {
		p := k.New()
		Defaults(p, Context{Conns: 10})
		Check(p, Context{Conns: 10}) // panics on a bad tag
	}
}

// TestKeysDeclaredOnce: a kind that drives a client kind declares its
// keys once, as fields of the client's params that its phase struct holds
// inline (decoding, bounds, schema and the shard wire read the same
// fields); only keys of the plan side alone are declared here. Adding a
// key to such a kind is one field of its client params.
func TestKeysDeclaredOnce(t *testing.T) {
	clientPkg := reflect.TypeFor[client.RateParams]().PkgPath()
	own := map[string]string{ // kind → why it declares keys of its own
		"conformance": "it runs internal/autobahn, no client kind",
		"search":      "vary, start, step… steer the search; the steps' keys are client.RateSend",
	}
	for _, k := range Kinds() {
		typ := reflect.TypeOf(k.New()).Elem()
		var here, inline []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			switch {
			case decl.Name(f) == "":
			case f.Anonymous && f.Type.PkgPath() == clientPkg:
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
