package plan

import (
	"reflect"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/script"
)

// The plan's sections take their defaults and bounds from their
// declarations (package decl), at every depth: a struct a key holds
// (client.reconnect, client.kubernetes, a server, an assertion, a
// phase's faults) is declared like the plan itself, and visited here.
// What is not a plain default or bound stays a check of its own in
// check.go (a relation between keys, a name that must exist), and is
// reported instead of the bound when both find the same key.

// describer is a type that decodes and describes itself (a switch or a
// mapping, a phase's body): its keys are its own, not visited.
type describer interface{ JSONSchema() map[string]any }

var describerType = reflect.TypeFor[describer]()

// eachDeclared calls fn with every declared struct of the struct v points
// to, v first, then the structs its keys hold (through a pointer or a
// list), depth first, each with its path.
func eachDeclared(v reflect.Value, path string, fn func(v any, path string)) {
	fn(v.Interface(), path)
	for _, c := range childrenOf(v.Type().Elem()) {
		fv := v.Elem().FieldByIndex(c.index)
		switch {
		case fv.Kind() == reflect.Pointer && !fv.IsNil():
			eachDeclared(fv, keyPath(path, c.key), fn)
		case fv.Kind() == reflect.Struct:
			eachDeclared(fv.Addr(), keyPath(path, c.key), fn)
		case fv.Kind() == reflect.Slice && fv.Len() > 0:
			at := keyPath(path, c.key)
			for i := range fv.Len() {
				eachDeclared(fv.Index(i).Addr(), indexPath(at, i), fn)
			}
		}
	}
}

// child is a key of a struct type that holds declared structs: directly,
// through a pointer or in a list.
type child struct {
	key   string
	index []int
}

var childCache sync.Map // reflect.Type -> []child

// childrenOf returns the keys of struct type t that hold declared
// structs.
func childrenOf(t reflect.Type) []child {
	if c, ok := childCache.Load(t); ok {
		return c.([]child)
	}
	var out []child
	v := reflect.New(t).Elem()
	for _, f := range decl.Fields(v) {
		ft := f.Struct.Type
		if selfDescribed(ft) {
			continue // a list that decodes itself: matrix:
		}
		if ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if declared(ft) {
			out = append(out, child{f.Key, f.Index})
		}
	}
	childCache.Store(t, out)
	return out
}

// selfDescribed reports whether values of t decode and describe
// themselves (a short form is not that: decl.Shorthand).
func selfDescribed(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return !p.Implements(shorthandType) && (p.Implements(describerType) || p.Implements(unmarshalerType))
}

// declared reports whether values of t are structs decoded by their
// declaration.
func declared(t reflect.Type) bool { return t.Kind() == reflect.Struct && !selfDescribed(t) }

// declaredDefaults fills every zero key of p with its default tag (a
// phase's faults take theirs as they are decoded).
func declaredDefaults(p *Plan) {
	eachDeclared(reflect.ValueOf(p), "", func(v any, _ string) { decl.Defaults(v) })
}

// checkDeclared reports every key of p outside its bounds, or required
// and missing, unless a check has reported on the key already.
func (l *loader) checkDeclared(p *Plan) {
	said := map[string]bool{}
	for _, e := range l.errs {
		said[e.Field] = true
	}
	check := func(v any, path string) {
		for _, e := range decl.Check(v) {
			at := path
			if e.Field != "" {
				at = keyPath(path, e.Field)
			}
			if !said[at] {
				l.fieldErr(at, "%s", e.Msg)
			}
		}
	}
	eachDeclared(reflect.ValueOf(p), "", check)
	for i, ph := range p.Phases {
		for j := range ph.Faults {
			check(&ph.Faults[j], ph.Faults[j].path(i, ph.Kind))
		}
	}
}

// Changed returns the keys of the section v points to (a declared struct
// of the plan: &p.Client) whose values differ from their defaults, as
// one flow mapping ({loops: 2, reconnect: {policy: backoff}}); "" when
// every key holds its default. `wsplan validate` prints it.
func Changed(v any) string {
	n := changed(reflect.ValueOf(v).Elem())
	if n == nil {
		return ""
	}
	return script.OneLine(n)
}

// changed is the mapping of v's keys that differ from its type's
// defaults, nested sections by their own changed keys; nil for none.
func changed(v reflect.Value) *yaml.Node {
	def := reflect.New(v.Type())
	eachDeclared(def, "", func(s any, _ string) { decl.Defaults(s) })
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i, f := range decl.Fields(v.Addr()) {
		d := decl.Fields(def)[i].Value
		if reflect.DeepEqual(f.Value.Interface(), d.Interface()) {
			continue
		}
		var val *yaml.Node
		switch fv := f.Value; {
		case fv.Kind() == reflect.Struct && declared(fv.Type()):
			val = changed(fv)
		case fv.Kind() == reflect.Pointer && !fv.IsNil() && declared(fv.Type().Elem()):
			if val = changed(fv.Elem()); val == nil {
				val = &yaml.Node{Kind: yaml.MappingNode} // given, every key its default
			}
		default:
			val = &yaml.Node{}
			if err := val.Encode(f.Value.Interface()); err != nil {
				val = &yaml.Node{Kind: yaml.ScalarNode, Value: err.Error()}
			}
		}
		if val != nil {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: f.Key}, val)
		}
	}
	if len(n.Content) == 0 {
		return nil
	}
	return n
}
