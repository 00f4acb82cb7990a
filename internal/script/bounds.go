package script

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// A step's numbers are bounded by the min and max tags of its fields
// (inclusive, written as a plan writes the value: 0, 2, 0s), the same
// tags the JSON Schema reads; Compile checks them for every step at every
// depth, so a QoS of 3, a loop count of -1 or a negative timeout fails
// the plan's load instead of running forever or falling back to a
// default.

// bounds records a problem for every field of the struct s points to that
// lies outside its tags, following inline structs (a verb's Answer, an
// expect's Match); at is the struct's path. It reports whether every
// field is within its bounds.
func (c *compiler) bounds(s any, at string) bool {
	v := reflect.ValueOf(s)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return true
	}
	return c.structBounds(v.Elem(), at)
}

func (c *compiler) structBounds(v reflect.Value, at string) bool {
	ok := true
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		fv := v.Field(i)
		if opts == "inline" && fv.Kind() == reflect.Struct {
			ok = c.structBounds(fv, at) && ok
			continue
		}
		if fv.Kind() < reflect.Int || fv.Kind() > reflect.Int64 {
			continue
		}
		lo, hasLo := tagBound(f, "min")
		hi, hasHi := tagBound(f, "max")
		x := fv.Int()
		if hasLo && x < lo || hasHi && x > hi {
			c.fail(at+"."+name, "must be %s, got %s", boundsText(f, lo, hi, hasLo, hasHi), show(fv))
			ok = false
		}
	}
	return ok
}

// tagBound parses f's bound tag key with f's own type (units.Duration
// takes 0s).
func tagBound(f reflect.StructField, key string) (int64, bool) {
	s, ok := f.Tag.Lookup(key)
	if !ok {
		return 0, false
	}
	p := reflect.New(f.Type)
	if u, isText := p.Interface().(encoding.TextUnmarshaler); isText {
		if err := u.UnmarshalText([]byte(s)); err != nil {
			panic(fmt.Sprintf("script: field %s: tag %s:%q: %v", f.Name, key, s, err))
		}
		return p.Elem().Int(), true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("script: field %s: tag %s:%q: %v", f.Name, key, s, err))
	}
	return n, true
}

// boundsText says what a field takes: "0, 1 or 2" for a few values,
// else its range.
func boundsText(f reflect.StructField, lo, hi int64, hasLo, hasHi bool) string {
	switch {
	case hasLo && hasHi && hi-lo <= 3:
		var vals []string
		for x := lo; x <= hi; x++ {
			vals = append(vals, strconv.FormatInt(x, 10))
		}
		return strings.Join(vals[:len(vals)-1], ", ") + " or " + vals[len(vals)-1]
	case hasLo && hasHi:
		return fmt.Sprintf("in [%s, %s]", f.Tag.Get("min"), f.Tag.Get("max"))
	case hasLo:
		return ">= " + f.Tag.Get("min")
	}
	return "<= " + f.Tag.Get("max")
}

// show is a field's value as a plan writes it.
func show(v reflect.Value) string {
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	return strconv.FormatInt(v.Int(), 10)
}
