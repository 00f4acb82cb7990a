package frameworks

import (
	"strings"
	"testing"
)

// Every default and every preset value passes its own declaration, and
// every declared bound fits its option's type.
func TestDeclarationsAreConsistent(t *testing.T) {
	for _, a := range Adapters() {
		for _, o := range a.AllOptions() {
			if err := o.check(o.Default); err != nil {
				t.Errorf("%s: default of %s: %v", a.Name, o.Name, err)
			}
			if o.Type != TypeInt && (o.Min != 0 || o.Max != 0) {
				t.Errorf("%s: option %s is %s but declares bounds", a.Name, o.Name, o.Type)
			}
			if o.Max != 0 && o.Max < o.Min {
				t.Errorf("%s: option %s: Max %d < Min %d", a.Name, o.Name, o.Max, o.Min)
			}
			if o.Type == TypeEnum && len(o.Enum) == 0 {
				t.Errorf("%s: enum option %s has no values", a.Name, o.Name)
			}
		}
		if _, _, errs := Resolve(a.Name, "", nil); len(errs) > 0 {
			t.Errorf("adapter %s with its defaults: %v", a.Name, errs)
		}
	}
	for _, p := range Presets() {
		if _, _, errs := Resolve(p.Name, "", nil); len(errs) > 0 {
			t.Errorf("preset %s: %v", p.Name, errs)
		}
		a, ok := LookupAdapter(p.Framework)
		if !ok {
			t.Errorf("preset %s: unknown framework %s", p.Name, p.Framework)
			continue
		}
		for k, v := range p.Options {
			if err := a.CheckOption(k, v); err != nil {
				t.Errorf("preset %s: option %s=%s: %v", p.Name, k, v, err)
			}
		}
	}
}

func TestOptionBounds(t *testing.T) {
	o := Option{Name: "n", Type: TypeInt, Min: 1, Max: 10}
	cases := []struct {
		v, err string
	}{
		{"1", ""}, {"10", ""}, {"5", ""},
		{"0", "must be >= 1, got 0"},
		{"-3", "must be >= 1, got -3"},
		{"11", "must be <= 10, got 11"},
		{"x", `want an integer, got "x"`},
	}
	for _, tc := range cases {
		err := o.check(tc.v)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("check(%q) = %v, want nil", tc.v, err)
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("check(%q) = %v, want %q", tc.v, err, tc.err)
		}
	}
	if got := o.Bounds(); got != "1..10" {
		t.Errorf("Bounds() = %q, want 1..10", got)
	}
	if got := (Option{Type: TypeInt}).Bounds(); got != ">= 0" {
		t.Errorf("Bounds() of an unbounded int = %q, want >= 0", got)
	}
	if got := (Option{Type: TypeBool}).Bounds(); got != "" {
		t.Errorf("Bounds() of a bool = %q, want empty", got)
	}
	a, _ := LookupAdapter("greatws")
	if err := a.CheckOption("pool_max", "0"); err == nil || err.Error() != "must be >= 1, got 0" {
		t.Errorf("CheckOption(pool_max, 0) = %v", err)
	}
	if err := a.CheckOption("colour", "red"); err == nil || !strings.Contains(err.Error(), `has no option "colour"`) {
		t.Errorf("CheckOption(colour) = %v", err)
	}
}
