package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

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
