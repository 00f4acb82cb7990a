package plan

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// The bounds of every key are tested as a class: the keys are found by
// walking the declarations (the plan's sections, every phase kind's
// parameters, a phase's faults, a script's steps and their sub-keys at
// two depths of loops), so a key added with a bound is covered without
// an edit here.

// seg is one step of a key's path: a mapping key, or a list's first item
// ("").
type seg string

// boundedKey is a declared key with a min or max tag, where a plan writes
// it.
type boundedKey struct {
	path  []seg
	field reflect.StructField
}

func (k boundedKey) String() string {
	var b strings.Builder
	for _, s := range k.path {
		switch {
		case s == "":
			b.WriteString("[0]")
		case b.Len() > 0:
			b.WriteString("." + string(s))
		default:
			b.WriteString(string(s))
		}
	}
	return b.String()
}

// declaredKeys walks the struct type t (at path) and returns its keys
// that pick takes, and those of the structs it holds. seen counts the
// types on the way down: a type nests at most twice (a loop in a loop).
func declaredKeys(t reflect.Type, path []seg, seen map[reflect.Type]int, pick func(reflect.StructField) bool) []boundedKey {
	if seen[t] >= 2 {
		return nil
	}
	seen[t]++
	defer func() { seen[t]-- }()
	var out []boundedKey
	for _, f := range decl.Fields(reflect.New(t)) {
		at := append(append([]seg(nil), path...), seg(f.Key))
		ft := f.Struct.Type
		if pick(f.Struct) {
			out = append(out, boundedKey{at, f.Struct})
		}
		if selfDescribed(ft) {
			continue
		}
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice {
			ft, at = ft.Elem(), append(at, "")
		}
		if declared(ft) {
			out = append(out, declaredKeys(ft, at, seen, pick)...)
		}
	}
	return out
}

// outside returns a value of the key just outside its bounds, as YAML: a
// step past min or max, never zero (a key's zero is "not given").
func outside(f reflect.StructField) (string, bool) {
	t := f.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	lo, hasLo := f.Tag.Lookup("min")
	hi, hasHi := f.Tag.Lookup("max")
	if t.Kind() == reflect.Slice {
		// A list's bounds count its items; zero items is no list.
		n := 0
		switch lv, _ := strconv.Atoi(lo); {
		case hasLo && lv > 1:
			n = lv - 1
		case hasHi:
			hv, _ := strconv.Atoi(hi)
			n = hv + 1
		default:
			return "", false
		}
		item, _ := yaml.Marshal(reflect.Zero(t.Elem()).Interface())
		return "[" + strings.Repeat(strings.TrimSpace(string(item))+", ", n-1) + strings.TrimSpace(string(item)) + "]", true
	}
	text, step := lo, -1.0
	if !hasLo {
		text, step = hi, 1
	}
	v, err := decl.Parse(t, text)
	if err != nil {
		panic(err)
	}
	var x float64
	switch {
	case v.CanInt():
		x = float64(v.Int())
	case v.CanUint():
		x = float64(v.Uint())
	case v.CanFloat():
		x = v.Float()
	default:
		return "", false
	}
	x += step
	if x == 0 {
		x += step
	}
	if x < 0 && v.CanUint() {
		return "", false // no value of the type lies below
	}
	if t == reflect.TypeFor[units.Duration]() {
		return time.Duration(x).String(), true
	}
	return strconv.FormatFloat(x, 'f', -1, 64), true
}

// classPlan is a plan whose key k holds value, built on a plan that loads
// (a server and a connect phase), and the line of that key.
func classPlan(k boundedKey, value string) ([]byte, int) {
	root := map[string]any{
		"servers": []any{map[string]any{"name": "fake_plan_test"}},
		"phases":  []any{map[string]any{"connect": map[string]any{"connections": 1}}},
	}
	// A phase's key goes in a second phase, after the connect phase.
	path := k.path
	var node any = root
	if path[0] == "phases" {
		phase := map[string]any{}
		root["phases"] = append(root["phases"].([]any), phase)
		node, path = phase, path[2:]
	}
	if path[0] == "servers" {
		node, path = root["servers"].([]any)[0], path[2:]
	}
	for i, s := range path {
		last := i == len(path)-1
		switch m := node.(type) {
		case map[string]any:
			if last {
				var v yaml.Node
				if err := yaml.Unmarshal([]byte(value), &v); err != nil {
					panic(err)
				}
				m[string(s)] = v.Content[0]
				break
			}
			next, ok := m[string(s)]
			if !ok {
				if path[i+1] == "" {
					next = []any{map[string]any{}}
				} else {
					next = map[string]any{}
				}
				m[string(s)] = next
			}
			node = next
		case []any:
			node = m[0]
		}
	}
	data, err := yaml.Marshal(root)
	if err != nil {
		panic(err)
	}
	return data, lineOfKey(data, k.path)
}

// lineOfKey is the line of the last key of path in the YAML data.
func lineOfKey(data []byte, path []seg) int {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		panic(err)
	}
	n, line := doc.Content[0], 0
	if path[0] == "phases" {
		path = append([]seg{"phases", "1"}, path[2:]...)
	}
	for _, s := range path {
		switch {
		case n.Kind == yaml.SequenceNode:
			i, _ := strconv.Atoi(string(s))
			n = n.Content[i]
		default:
			for j := 0; j < len(n.Content); j += 2 {
				if n.Content[j].Value == string(s) {
					line, n = n.Content[j].Line, n.Content[j+1]
					break
				}
			}
		}
	}
	return line
}

// allKeys returns the keys pick takes of every declaration a plan holds:
// the plan's sections, each phase kind's parameters (with a script's
// steps), a phase's faults.
func allKeys(pick func(reflect.StructField) bool) []boundedKey {
	keys := declaredKeys(reflect.TypeOf(Plan{}), nil, map[reflect.Type]int{}, pick)
	for _, kind := range scenarios.Kinds() {
		typ := reflect.TypeOf(kind.New()).Elem()
		at := []seg{"phases", "", seg(kind.Name)}
		keys = append(keys, declaredKeys(typ, at, map[reflect.Type]int{}, pick)...)
	}
	return append(keys, declaredKeys(reflect.TypeFor[Fault](), []seg{"phases", "", "hold", "faults", ""}, map[reflect.Type]int{}, pick)...)
}

// loadsWithError loads a plan whose key k holds value and reports whether
// an error names the plan's file, the key's line and its path; if none
// does, why says what the load gave instead.
func loadsWithError(k boundedKey, value string) (ok bool, why string) {
	data, line := classPlan(k, value)
	want := fmt.Sprintf("c.yaml:%d: %s:", line, strings.Replace(k.String(), "phases[0]", "phases[1]", 1))
	_, err := LoadBytes("c.yaml", data, LoadOptions{})
	var errs Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			if strings.HasPrefix(e.Error(), want) {
				return true, ""
			}
		}
	}
	return false, fmt.Sprintf("got %v, want an error %s …\n%s", err, want, data)
}

// TestBoundsClass: every declared key with a bound, at every depth, just
// outside its bound fails the plan's load with an error that names the
// plan's file, the key's line and its path.
func TestBoundsClass(t *testing.T) {
	keys := allKeys(func(f reflect.StructField) bool {
		_, lo := f.Tag.Lookup("min")
		return lo || f.Tag.Get("max") != ""
	})
	tested := 0
	for _, k := range keys {
		value, ok := outside(k.field)
		if !ok {
			continue
		}
		if ok, why := loadsWithError(k, value); !ok {
			t.Errorf("%s: %s just outside its bounds (min %q, max %q): %s", k, value, k.field.Tag.Get("min"), k.field.Tag.Get("max"), why)
		}
		tested++
	}
	if tested < 100 {
		t.Errorf("%d bounded keys tested: the walk lost its way", tested)
	}
	t.Logf("%d bounded keys of %d found", tested, len(keys))
}

// TestFiniteClass: every declared key that takes a number with a
// fraction (a rate, a factor), at every depth, refuses .inf, -.inf and
// .nan at load, naming the file, the line and the key.
func TestFiniteClass(t *testing.T) {
	keys := allKeys(func(f reflect.StructField) bool {
		t := f.Type
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		return t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32
	})
	for _, k := range keys {
		value := ".inf"
		if k.field.Type.Kind() == reflect.Slice {
			value = "[.inf]"
		}
		for _, v := range []string{value, strings.Replace(value, ".inf", "-.inf", 1), strings.Replace(value, ".inf", ".nan", 1)} {
			if ok, why := loadsWithError(k, v); !ok {
				t.Errorf("%s: %s: %s", k, v, why)
			}
		}
	}
	if len(keys) < 3 {
		t.Errorf("%d keys take a fraction: the walk lost its way", len(keys))
	}
	t.Logf("%d keys take a fraction", len(keys))
}

// TestOutside: the values the class test writes.
func TestOutside(t *testing.T) {
	type s struct {
		A int            `min:"1"`
		B int            `min:"0" max:"2"`
		C units.Duration `min:"1ns"`
		D units.Duration `min:"0s" max:"10ms"`
		E []int          `min:"2" max:"2"`
		F float64        `min:"0.5"`
		G *int           `max:"5"`
	}
	want := []string{"-1", "-1", "-1ns", "-1ns", "[0]", "-0.5", "6"}
	typ := reflect.TypeFor[s]()
	for i, w := range want {
		if got, _ := outside(typ.Field(i)); got != w {
			t.Errorf("%s: got %q, want %q", typ.Field(i).Name, got, w)
		}
	}
}

// TestDocClass: every declared key at every depth (the walk of
// TestBoundsClass) has its line of documentation, which the schema and
// the docs' reference tables print.
func TestDocClass(t *testing.T) {
	all := allKeys(func(reflect.StructField) bool { return true })
	for _, k := range allKeys(func(f reflect.StructField) bool { return strings.TrimSpace(f.Tag.Get("doc")) == "" }) {
		t.Errorf("%s: no doc tag", k)
	}
	if len(all) < 300 {
		t.Errorf("%d keys: the walk lost its way", len(all))
	}
}
