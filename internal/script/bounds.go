package script

import (
	"reflect"

	"github.com/wsplan/wsplan/internal/decl"
)

// A step's keys take their defaults from the default tags of their
// fields (decl.Defaults), on a copy: the plan's document stays as it was
// written, which `wsplan validate` prints. A default that depends on the
// rest of the script (an expect's timeout is the phase's, its count 1
// unless until: ends it) is stated in its doc tag and set by Compile.
//
// A step's numbers are bounded by the min and max tags of its fields
// (inclusive, written as a plan writes the value: 0, 2, 0s), the same
// declarations the JSON Schema reads (package decl); Compile checks them
// for every step at every depth, so a QoS of 3, a loop count of -1 or a
// negative timeout fails the plan's load instead of running forever or
// falling back to a default.

// bounds records a problem for every key of the struct s points to that
// lies outside its declaration, inline structs' (a verb's Answer, an
// expect's Match) included; at is the struct's path. It reports whether
// every key is within its bounds.
func (c *compiler) bounds(s any, at string) bool {
	errs := decl.Check(s)
	for _, e := range errs {
		c.fail(at+"."+e.Field, "%s", e.Msg)
	}
	return len(errs) == 0
}

// withDefaults returns a copy of step s whose body holds its declared
// defaults.
func withDefaults(s *Step) *Step {
	out := *s
	v := reflect.ValueOf(&out).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			body := reflect.New(f.Type().Elem())
			body.Elem().Set(f.Elem())
			decl.Defaults(body.Interface())
			f.Set(body)
		}
	}
	return &out
}
