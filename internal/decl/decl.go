// Package decl reads the declaration of a plan's keys: a struct's fields
// and their tags. A key is declared once, as a field of the struct the
// plan decodes into:
//
//	Payload *units.Size `yaml:"payload" default:"1KiB" min:"0" max:"64MiB" doc:"bytes per message"`
//	Total   int64       `yaml:"total" required:"true" min:"1" doc:"echoes to measure"`
//	QoS     int         `yaml:"qos" min:"0" max:"2" doc:"MQTT QoS"`
//
// Tag values are written as a plan would write the value and parsed with
// the field's own type (units.Size takes 1KiB, units.Duration 10s).
// `default` fills a zero field (nil for a pointer); `min` and `max` bound
// it (inclusive); `required:"true"` marks a field the plan must give;
// `hint` adds a parenthesised reason to the error of a value below min;
// `doc` is the key's one-line documentation. Fields tagged
// `yaml:",inline"` are read as part of the struct that holds them.
//
// Everything that needs a key's facts reads them here: decoding (Keys),
// defaults (Defaults), bounds (Check), and through the struct's type the
// JSON Schema (internal/schema), `wsplan validate`'s print and the
// reference tables in docs/. Adding a key is one field plus the code that
// uses it.
//
// decl imports nothing of the module but internal/units' types' methods
// it calls through interfaces; internal/client and the protocols may use
// it.
package decl

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// FieldError is a problem with one key; the loader adds its file and
// line.
type FieldError struct {
	Field string // YAML key, e.g. "payload"; "" = the whole mapping
	Msg   string // e.g. "must be > 0, got -5"
}

func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// Name is a field's YAML key; "" for a field plans cannot set.
func Name(f reflect.StructField) string {
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

// inline reports whether f is read as part of the struct holding it.
func inline(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return opts == "inline" && f.Type.Kind() == reflect.Struct
}

// Keys returns the YAML keys of struct type t (or a pointer to one), in
// declaration order, inline structs' keys in place.
func Keys(t reflect.Type) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if inline(f) {
			keys = append(keys, Keys(f.Type)...)
			continue
		}
		if n := Name(f); n != "" {
			keys = append(keys, n)
		}
	}
	return keys
}

// Field is one declared key: its struct field (and the field's value in
// the struct Fields was given), and the field's index in the struct
// (through inline structs, for reflect.Value.FieldByIndex).
type Field struct {
	Key    string
	Struct reflect.StructField
	Value  reflect.Value
	Index  []int
}

// Fields returns the keys of struct v (a pointer to a struct, or a struct
// value), inline structs' in place.
func Fields(v reflect.Value) []Field {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	keys := keysOf(v.Type())
	out := make([]Field, len(keys))
	for i, k := range keys {
		out[i] = Field{Key: k.name, Struct: k.field, Value: v.FieldByIndex(k.index), Index: k.index}
	}
	return out
}

// key is a declared key of a struct type: its name, field, and the
// field's index (through inline structs); whether it has a default, and
// whether Check has anything to check (a bound, required, an Enum).
type key struct {
	name    string
	field   reflect.StructField
	index   []int
	def     bool
	checked bool
}

var enumType = reflect.TypeFor[Enum]()

func newKey(name string, f reflect.StructField, index []int) key {
	_, def := f.Tag.Lookup("default")
	_, lo := f.Tag.Lookup("min")
	_, hi := f.Tag.Lookup("max")
	checked := lo || hi || f.Tag.Get("required") == "true" || elem(f.Type).Implements(enumType)
	return key{name, f, index, def, checked}
}

// each calls fn with the keys of struct v (a pointer to a struct, or a
// struct value) that pick takes, and their values.
func each(v reflect.Value, pick func(key) bool, fn func(k key, fv reflect.Value)) {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	for _, k := range keysOf(v.Type()) {
		if pick(k) {
			fn(k, v.FieldByIndex(k.index))
		}
	}
}

// keyCache holds each struct type's keys (keysOf): every load reads the
// same types again, at every depth.
var keyCache sync.Map // reflect.Type -> []key

// keysOf returns struct type t's keys, inline structs' in place.
func keysOf(t reflect.Type) []key {
	if k, ok := keyCache.Load(t); ok {
		return k.([]key)
	}
	var out []key
	for i := range t.NumField() {
		f := t.Field(i)
		if inline(f) {
			for _, k := range keysOf(f.Type) {
				k.index = append([]int{i}, k.index...)
				out = append(out, k)
			}
			continue
		}
		if n := Name(f); n != "" {
			out = append(out, newKey(n, f, []int{i}))
		}
	}
	keyCache.Store(t, out)
	return out
}

// Parse parses a tag's text as YAML into a new value of type t. Values
// of scalar types are parsed once: every phase of a plan reads the same
// tags.
func Parse(t reflect.Type, s string) (reflect.Value, error) {
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

// tagValues holds the tag values Parse parsed, by type and text; a value
// is only ever copied out, never changed.
var tagValues sync.Map

type tagKey struct {
	t reflect.Type
	s string
}

// mustParse parses a tag the code declared: a bad one is a bug.
func mustParse(f reflect.StructField, t reflect.Type, key, s string) reflect.Value {
	v, err := Parse(t, s)
	if err != nil {
		panic(fmt.Sprintf("decl: field %s: tag %s:%q: %v", f.Name, key, s, err))
	}
	return v
}

// elem is a field's value type: the pointed-to type for a pointer.
func elem(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// Default returns the default tag of the key of struct v (a pointer to a
// struct, or its type's zero value), parsed with the field's value type;
// ok is false when the key has none. Code that needs a default before
// Defaults ran reads it here, so that the tag stays its one source.
func Default(v any, key string) (any, bool) {
	for _, f := range Fields(reflect.New(elem(reflect.TypeOf(v)))) {
		def, has := f.Struct.Tag.Lookup("default")
		if f.Key == key && has {
			return mustParse(f.Struct, elem(f.Struct.Type), "default", def).Interface(), true
		}
	}
	return nil, false
}

// Defaults fills the zero fields of the struct v points to with their
// default tags.
func Defaults(v any) {
	each(reflect.ValueOf(v), func(k key) bool { return k.def }, func(k key, fv reflect.Value) {
		if !fv.IsZero() {
			return
		}
		def, t := k.field.Tag.Get("default"), k.field.Type
		if t.Kind() == reflect.Pointer {
			p := reflect.New(t.Elem())
			p.Elem().Set(mustParse(k.field, t.Elem(), "default", def))
			fv.Set(p)
			return
		}
		fv.Set(mustParse(k.field, t, "default", def))
	})
}
