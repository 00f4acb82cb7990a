package plan

import (
	"reflect"

	"github.com/wsplan/wsplan/internal/decl"
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
	for _, f := range decl.Fields(v) {
		at := keyPath(path, f.Key)
		fv := f.Value
		switch {
		case fv.Kind() == reflect.Pointer && !fv.IsNil() && declared(fv.Type().Elem()):
			eachDeclared(fv, at, fn)
		case fv.Kind() == reflect.Struct && declared(fv.Type()):
			eachDeclared(fv.Addr(), at, fn)
		case fv.Kind() == reflect.Slice && declared(fv.Type().Elem()):
			for i := range fv.Len() {
				eachDeclared(fv.Index(i).Addr(), indexPath(at, i), fn)
			}
		}
	}
}

// declared reports whether values of t are structs decoded by their
// declaration.
func declared(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(describerType) && !reflect.PointerTo(t).Implements(unmarshalerType)
}

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
