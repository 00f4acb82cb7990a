package scenarios

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

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
	v := reflect.ValueOf(p)
	if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		tagDefaults(v.Elem())
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
	v := reflect.ValueOf(p)
	if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		tagErrs = tagBounds(v.Elem())
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

// tagDefault returns the default tag of the field of phase p (a pointer to
// a kind's struct) whose YAML key is key, parsed with the field's type
// (the pointed-to type for a pointer field); ok is false when the field
// has none. Code that needs a default before Defaults ran reads it here,
// so that the tag stays its one source.
func tagDefault(p any, key string) (v any, ok bool) {
	t := reflect.TypeOf(p)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		def, has := f.Tag.Lookup("default")
		if yamlName(f) != key || !has {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		return mustParseTag(f, ft, "default", def).Interface(), true
	}
	return nil, false
}

// sizeOr returns *s, or the tag default of p's field with YAML key key
// when s is nil (a payload before Defaults ran).
func sizeOr(p any, key string, s *units.Size) int {
	if s != nil {
		return int(*s)
	}
	d, _ := tagDefault(p, key)
	n, _ := d.(units.Size)
	return int(n)
}

// yamlName is a field's YAML key; "" for a field plans cannot set.
func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name
}

// parseTag parses a tag value as YAML into a new value of type t.
// Values of scalar types are parsed once (tagValues): every phase of a
// plan reads the same tags.
func parseTag(t reflect.Type, s string) (reflect.Value, error) {
	scalar := t.Kind() != reflect.Slice && t.Kind() != reflect.Map && t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface
	key := tagKey{t, s}
	if v, ok := tagValues.Load(key); ok && scalar {
		return v.(reflect.Value), nil
	}
	p := reflect.New(t)
	if err := yaml.Unmarshal([]byte(s), p.Interface()); err != nil {
		return reflect.Value{}, err
	}
	if scalar {
		tagValues.Store(key, p.Elem())
	}
	return p.Elem(), nil
}

// tagValues holds the tag values parseTag parsed, by type and text; a
// value is only ever copied out, never changed.
var tagValues sync.Map

type tagKey struct {
	t reflect.Type
	s string
}

// mustParseTag parses a tag the code declared: a bad one is a bug.
func mustParseTag(f reflect.StructField, t reflect.Type, key, s string) reflect.Value {
	v, err := parseTag(t, s)
	if err != nil {
		panic(fmt.Sprintf("scenarios: field %s: tag %s:%q: %v", f.Name, key, s, err))
	}
	return v
}

func tagDefaults(s reflect.Value) {
	t := s.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		def, ok := f.Tag.Lookup("default")
		if !ok || !f.IsExported() {
			continue
		}
		fv := s.Field(i)
		if !fv.IsZero() {
			continue
		}
		if f.Type.Kind() == reflect.Pointer {
			p := reflect.New(f.Type.Elem())
			p.Elem().Set(mustParseTag(f, f.Type.Elem(), "default", def))
			fv.Set(p)
			continue
		}
		fv.Set(mustParseTag(f, f.Type, "default", def))
	}
}

func tagBounds(s reflect.Value) []FieldError {
	var errs []FieldError
	t := s.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" {
			continue
		}
		fv := s.Field(i)
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				if f.Tag.Get("required") == "true" {
					errs = append(errs, FieldError{name, "is required"})
				}
				continue
			}
			fv = fv.Elem()
		}
		hint := ""
		if h := f.Tag.Get("hint"); h != "" {
			hint = " (" + h + ")"
		}
		if m, ok := f.Tag.Lookup("min"); ok {
			b := mustParseTag(f, fv.Type(), "min", m)
			if compare(fv, b) < 0 {
				op, bound := ">=", showBound(b)
				if isInt(b) && b.Int() == 1 {
					op, bound = ">", "0"
				}
				errs = append(errs, FieldError{name, fmt.Sprintf("must be %s %s%s, got %s", op, bound, hint, show(fv))})
				continue
			}
		}
		if m, ok := f.Tag.Lookup("max"); ok {
			b := mustParseTag(f, fv.Type(), "max", m)
			if compare(fv, b) > 0 {
				errs = append(errs, FieldError{name, fmt.Sprintf("must be <= %s, got %s", showBound(b), show(fv))})
				continue
			}
		}
		if f.Tag.Get("required") == "true" && fv.IsZero() {
			errs = append(errs, FieldError{name, "is required"})
		}
	}
	return errs
}

func isInt(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}

// compare orders two values of one numeric type: -1, 0 or 1.
func compare(a, b reflect.Value) int {
	switch {
	case isInt(a):
		return cmp3(a.Int() < b.Int(), a.Int() > b.Int())
	case a.CanUint():
		return cmp3(a.Uint() < b.Uint(), a.Uint() > b.Uint())
	case a.CanFloat():
		return cmp3(a.Float() < b.Float(), a.Float() > b.Float())
	}
	return 0
}

func cmp3(lt, gt bool) int {
	switch {
	case lt:
		return -1
	case gt:
		return 1
	}
	return 0
}

// showBound formats a bound: 0 as "0" whatever its type, else as show.
func showBound(v reflect.Value) string {
	if v.IsZero() {
		return "0"
	}
	return show(v)
}

// show formats a value as a plan would write it (through its String
// method: units.Size 64MiB, units.Duration 10s).
func show(v reflect.Value) string {
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprint(v.Interface())
}
