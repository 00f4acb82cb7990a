package decl

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Check returns a problem for every key of the struct v points to that
// is required and missing, or lies outside its min and max tags.
func Check(v any) []FieldError {
	var errs []FieldError
	each(reflect.ValueOf(v), func(k key) bool { return k.checked }, func(k key, fv reflect.Value) {
		if e, bad := checkField(Field{Key: k.name, Struct: k.field, Value: fv, Index: k.index}); bad {
			errs = append(errs, e)
		}
	})
	return errs
}

func checkField(f Field) (FieldError, bool) {
	fv, tag := f.Value, f.Struct.Tag
	if fv.Kind() == reflect.Pointer {
		if fv.IsNil() {
			return FieldError{Field: f.Key, Msg: "is required"}, tag.Get("required") == "true"
		}
		fv = fv.Elem()
	}
	if fv.Kind() == reflect.Slice {
		return checkLen(f, fv)
	}
	if fv.Type().Implements(enumType) && !fv.IsZero() {
		if names := fv.Interface().(Enum).Values(); !slices.Contains(names, fv.String()) {
			return FieldError{Field: f.Key, Msg: fmt.Sprintf("must be %s, got %q", OneOf(names), fv.String())}, true
		}
	}
	lo, hasLo := bound(f.Struct, fv.Type(), "min")
	hi, hasHi := bound(f.Struct, fv.Type(), "max")
	below, above := hasLo && compare(fv, lo) < 0, hasHi && compare(fv, hi) > 0
	if below || above {
		// The side crossed, unless a few values are all there is.
		var want, hint string
		if h := tag.Get("hint"); h != "" && below {
			hint = " (" + h + ")"
		}
		switch {
		case hasLo && hasHi && isInt(lo) && hi.Int()-lo.Int() <= 3:
			want = Range(f.Struct)
		case below:
			want = lowerBound(lo)
		default:
			want = "<= " + showBound(hi)
		}
		return FieldError{Field: f.Key, Msg: fmt.Sprintf("must be %s%s, got %s", want, hint, Show(fv))}, true
	}
	if tag.Get("required") == "true" && fv.IsZero() {
		return FieldError{Field: f.Key, Msg: "is required"}, true
	}
	return FieldError{}, false
}

// Enum is a string type whose values are a few names (reconnect's
// policy: none, immediate or backoff): Check refuses any other, and the
// JSON Schema lists them.
type Enum interface {
	// Values returns the names, the default first.
	Values() []string
}

// OneOf says a few names as a sentence: "a", "a or b", "a, b or c".
func OneOf(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// checkLen checks a list's length against its min and max tags, which
// count items; an empty list is one not given (required says if it must
// be).
func checkLen(f Field, fv reflect.Value) (FieldError, bool) {
	lo, hasLo := lenBound(f.Struct, "min")
	hi, hasHi := lenBound(f.Struct, "max")
	n := fv.Len()
	var want string
	switch {
	case n == 0:
		return FieldError{Field: f.Key, Msg: "is required"}, f.Struct.Tag.Get("required") == "true"
	case hasLo && hasHi && lo == hi && n != lo:
		want = items(lo)
	case hasLo && n < lo:
		want = "at least " + items(lo)
	case hasHi && n > hi:
		want = "at most " + items(hi)
	default:
		return FieldError{}, false
	}
	return FieldError{Field: f.Key, Msg: fmt.Sprintf("must have %s, got %d", want, n)}, true
}

func items(n int) string {
	if n == 1 {
		return "1 item"
	}
	return fmt.Sprintf("%d items", n)
}

// lenBound parses a list's min or max tag: a count of items.
func lenBound(f reflect.StructField, key string) (int, bool) {
	s, ok := f.Tag.Lookup(key)
	if !ok {
		return 0, false
	}
	return mustParse(f, reflect.TypeFor[int](), key, s).Interface().(int), true
}

// bound parses f's tag key (min or max) with value type t.
func bound(f reflect.StructField, t reflect.Type, key string) (reflect.Value, bool) {
	s, ok := f.Tag.Lookup(key)
	if !ok {
		return reflect.Value{}, false
	}
	return mustParse(f, t, key, s), true
}

// Range says what a field's bounds allow, as an error or a reference
// table says it: "> 0", ">= 1KiB", "<= 64MiB", "in [1, 1000]", or
// "0, 1 or 2" for a few integers; "" when it has no bounds.
func Range(f reflect.StructField) string {
	t := elem(f.Type)
	if t.Kind() == reflect.Slice {
		t = reflect.TypeFor[int]()
	}
	lo, hasLo := bound(f, t, "min")
	hi, hasHi := bound(f, t, "max")
	switch {
	case hasLo && hasHi && isInt(lo) && hi.Int()-lo.Int() <= 3:
		var vals []string
		for x := lo.Int(); x <= hi.Int(); x++ {
			vals = append(vals, fmt.Sprint(x))
		}
		return strings.Join(vals[:len(vals)-1], ", ") + " or " + vals[len(vals)-1]
	case hasLo && hasHi:
		return fmt.Sprintf("in [%s, %s]", showBound(lo), showBound(hi))
	case hasLo:
		return lowerBound(lo)
	case hasHi:
		return "<= " + showBound(hi)
	}
	return ""
}

// lowerBound says a lower bound: "> 0" for an integer's 1.
func lowerBound(lo reflect.Value) string {
	if isInt(lo) && lo.Int() == 1 {
		return "> 0"
	}
	return ">= " + showBound(lo)
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

// showBound formats a bound: 0 as "0" whatever its type, else as Show.
func showBound(v reflect.Value) string {
	if v.IsZero() {
		return "0"
	}
	return Show(v)
}

// Show formats a value as a plan would write it (through its String
// method: units.Size 64MiB, units.Duration 10s).
func Show(v reflect.Value) string {
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprint(v.Interface())
}
