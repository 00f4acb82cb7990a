package scenarios

import (
	"reflect"

	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/units"
)

// A kind's parameter struct declares each field's default and bounds as
// struct tags, written as a plan would write the value and parsed with the
// field's own type (units.Size takes 1KiB, units.Duration 10s):
//
//	Payload *units.Size `yaml:"payload" default:"1KiB" min:"0" max:"64MiB" doc:"bytes per message"`
//	Total   int64       `yaml:"total" required:"true" min:"1" doc:"echoes to measure"`
//
// `default` fills a zero field (nil for a pointer); `min` and `max` bound
// it (inclusive); `required:"true"` marks a field the plan must give;
// `hint` adds a parenthesised reason to the error of a value below min
// (and to the schema's description); `doc` is the field's one-line
// documentation. A default that depends on the rest of the plan has no
// `default` tag, says so in `doc`, and is set by the phase's
// ContextDefaults. Defaults and Check apply the tags for every kind, here;
// internal/schema generates the JSON Schema (wsplan schema) from the same
// tags.

// ContextDefaults is implemented by phases with defaults that depend on
// the rest of the plan (e.g. "every open connection") or on other fields.
type ContextDefaults interface {
	// Defaults fills what the tags cannot; it runs after the tag defaults.
	Defaults(c Context)
}

// Defaults fills p's zero fields with their tag defaults, then calls its
// ContextDefaults if it has them.
func Defaults(p Phase, c Context) {
	if isStructPtr(p) {
		decl.Defaults(p)
	}
	if d, ok := p.(ContextDefaults); ok {
		d.Defaults(c)
	}
}

// Check returns every problem with p: its fields against their tag bounds
// (required, min, max), then its own cross-field rules (Phase.Validate).
// A field Validate reports on is not also reported "is required": its
// rule says more (rate: "must be > 0 messages per connection per second").
func Check(p Phase, c Context) []FieldError {
	var tagErrs []FieldError
	if isStructPtr(p) {
		tagErrs = decl.Check(p)
	}
	own := p.Validate(c)
	said := map[string]bool{}
	for _, e := range own {
		said[e.Field] = true
	}
	var errs []FieldError
	for _, e := range tagErrs {
		if !(e.Msg == "is required" && said[e.Field]) {
			errs = append(errs, e)
		}
	}
	return append(errs, own...)
}

func isStructPtr(p any) bool {
	v := reflect.ValueOf(p)
	return v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct
}

// SizeOr returns *s, or the tag default of p's field with YAML key key
// when s is nil (a payload before Defaults ran).
func SizeOr(p any, key string, s *units.Size) int {
	if s != nil {
		return int(*s)
	}
	d, _ := decl.Default(p, key)
	n, _ := d.(units.Size)
	return int(n)
}
