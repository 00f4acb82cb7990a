package decl

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Shorthand is a struct a plan may also write as a scalar: think: 100ms,
// send: "text", close: true. Its mapping form is its declaration, decoded
// as any other struct's (the plan loader walks it, with the line of every
// key); the scalar form is the only part the type writes itself.
type Shorthand interface {
	// UnmarshalShort decodes n, a node that is not a mapping, into the
	// value: what the scalar stands for.
	UnmarshalShort(n *yaml.Node) error
	// Shorten returns the value in its scalar form (the zero value gives
	// the form's type), and whether the value can be written so: only
	// the key the scalar stands for is set.
	Shorten() (any, bool)
}

// Unmarshal decodes n into v: a mapping strictly by v's declaration
// (DecodeMapping), anything else by v's UnmarshalShort. It is the
// UnmarshalYAML of a Shorthand type, for yaml.v3's own decoder.
func Unmarshal(n *yaml.Node, v Shorthand) error {
	if n.Kind != yaml.MappingNode {
		return v.UnmarshalShort(n)
	}
	return DecodeMapping(n, v)
}

// DecodeMapping decodes mapping n into the struct v points to, each key
// into the field that declares it; a key v does not declare is an error
// that lists the keys it does.
func DecodeMapping(n *yaml.Node, v any) error {
	rv := reflect.ValueOf(v)
	keys := Keys(rv.Type())
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("want a mapping with %s", strings.Join(keys, ", "))
	}
	fields := Fields(rv)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		j := slices.IndexFunc(fields, func(f Field) bool { return f.Key == k })
		if j < 0 {
			return fmt.Errorf("unknown key %q: want %s", k, strings.Join(keys, ", "))
		}
		if err := n.Content[i+1].Decode(fields[j].Value.Addr().Interface()); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

// OnlySet reports whether every key of the struct v points to but keys
// holds its zero value.
func OnlySet(v any, keys ...string) bool {
	for _, f := range Fields(reflect.ValueOf(v)) {
		if !slices.Contains(keys, f.Key) && !f.Value.IsZero() {
			return false
		}
	}
	return true
}
