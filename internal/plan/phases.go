package plan

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/scenarios"
)

// phases decodes every phase (kind key first, then its body strictly into
// that kind's config), applies each kind's defaults and validates it.
//
// Each phase is validated with a scenarios.Context: Conns is the sum of
// the connections the phases before it open (scenarios.Opener). A phase
// whose body has errors is not validated, nor is any phase after an
// opening phase whose body has errors or that opens no connection because
// of an error, since their context would be a guess (that phase's own
// error says what to fix).
func (l *loader) phases(items []yaml.Node) []Phase {
	type decoded struct {
		Phase
		path string // phases[i].kind
		ok   bool   // decoded without a problem
	}
	var ds []decoded
	named := map[string]string{} // explicit names -> path, for duplicates
	count := map[string]int{}
	for i := range items {
		n := &items[i]
		path := indexPath("phases", i)
		before := l.problems()
		ph, ok := l.phase(n, path)
		if !ok {
			continue
		}
		bodyOK := l.problems() == before
		count[ph.Kind]++
		kp := keyPath(path, ph.Kind)
		if ph.Name == "" {
			ph.Name = ph.Kind
			if c := count[ph.Kind]; c > 1 {
				ph.Name = fmt.Sprintf("%s#%d", ph.Kind, c)
			}
		} else {
			if other, dup := named[ph.Name]; dup {
				l.fieldErr(kp+".name", "duplicate phase name %s (also %s)", quoteClipped(ph.Name), other)
			}
			named[ph.Name] = kp
			if _, isKind := scenarios.Lookup(ph.Name); isKind && ph.Name != ph.Kind {
				l.fieldErr(kp+".name", "%q is a phase kind: give this %s phase another name", ph.Name, ph.Kind)
			}
		}
		ds = append(ds, decoded{Phase: ph, path: kp, ok: bodyOK})
	}
	// A default name may collide with an explicit one ("echo#2").
	for _, d := range ds {
		if other, dup := named[d.Name]; dup && other != d.path {
			l.fieldErr(other+".name", "duplicate phase name %s (also %s)", quoteClipped(d.Name), d.path)
		}
	}

	conns := 0
	connsKnown := true
	out := make([]Phase, 0, len(ds))
	for _, d := range ds {
		ctx := scenarios.Context{Conns: conns, Dir: filepath.Dir(l.file)}
		scenarios.Defaults(d.Spec, ctx)
		var errs []scenarios.FieldError
		if d.ok && connsKnown {
			errs = scenarios.Check(d.Spec, ctx)
			for _, fe := range errs {
				field := d.path
				if fe.Field != "" {
					field += "." + fe.Field
				}
				l.fieldErr(field, "%s", fe.Msg)
			}
		}
		if d.Allow != nil {
			for _, fe := range scenarios.CheckAllow(d.Allow, scenarios.PhaseFaults(d.Kind, d.Spec)) {
				l.fieldErr(d.path+".allow."+fe.Field, "%s", fe.Msg)
			}
		}
		if o, opens := d.Spec.(scenarios.Opener); opens {
			n, _ := o.Opens()
			conns += n
			// An opener that opens none without an error (a search that
			// varies the rate) leaves the count known.
			if !d.ok || (n <= 0 && (len(errs) > 0 || !connsKnown)) {
				connsKnown = false
			}
		}
		out = append(out, d.Phase)
	}
	return out
}

// phaseKeyReaders read each of PhaseKeys' keys into a phase (a test
// checks there is one per declared key).
var phaseKeyReaders = map[string]func(l *loader, n *yaml.Node, path string, ph *Phase){
	"name": func(l *loader, n *yaml.Node, path string, ph *Phase) {
		if l.decode(n, path, reflect.ValueOf(&ph.Name).Elem()) && ph.Name == "" {
			l.fieldErr(path, "must not be empty (leave name: out for the default, %s)", ph.Kind)
		}
	},
	"faults": (*loader).faults,
	"allow":  (*loader).allow,
}

// phase reads one item of `phases:`: a mapping with one key, the kind,
// whose value is the body. It reports false when there is no usable kind.
func (l *loader) phase(n *yaml.Node, path string) (Phase, bool) {
	if l.kindNames == nil {
		l.kindNames = scenarios.Names()
	}
	known := l.kindNames
	if isNull(n) {
		l.fieldErr(path, "empty phase: want one key naming its kind (%s)", strings.Join(known, ", "))
		return Phase{}, false
	}
	if n.Kind != yaml.MappingNode {
		l.errf(n.Line, path, "want a mapping with one key naming the phase kind (%s), got %s", strings.Join(known, ", "), describe(n))
		return Phase{}, false
	}
	ps := l.pairs(n, path)
	if len(ps) != 1 {
		var keys []string
		for _, p := range ps {
			keys = append(keys, p.key.Value)
		}
		l.errf(n.Line, path, "want one key naming the phase kind, got %d (%s): put settings inside the kind's mapping, and start each phase with its own -", len(ps), strings.Join(keys, ", "))
		return Phase{}, false
	}
	k, body := ps[0].key, ps[0].value
	if k.Kind != yaml.ScalarNode {
		l.errf(k.Line, path, "want a phase kind (%s) as the key, got %s", strings.Join(known, ", "), describe(k))
		return Phase{}, false
	}
	kind, ok := scenarios.Lookup(k.Value)
	if !ok {
		l.errf(k.Line, path, "%s", unknownMsg("phase kind", k.Value, known))
		return Phase{}, false
	}
	kp := keyPath(path, k.Value)
	l.lines.set(kp, k.Line)
	ph := Phase{Kind: kind.Name, Spec: kind.New(), Line: k.Line}

	body = deref(body)
	if isNull(body) {
		return ph, true
	}
	if l.bad[body] {
		l.badHits++
		return ph, true
	}
	if body.Kind != yaml.MappingNode {
		l.errf(body.Line, kp, "want a mapping of the phase's settings, got %s", describe(body))
		return ph, true
	}
	// The keys every phase has (PhaseKeys) belong to the plan, not to the
	// kind: take them out.
	stripped := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: body.Line, Column: body.Column}
	for _, p := range l.pairs(body, kp) {
		if p.key.Kind == yaml.ScalarNode {
			if read, ok := phaseKeyReaders[p.key.Value]; ok {
				path := kp + "." + p.key.Value
				l.lines.set(path, p.key.Line)
				read(l, p.value, path, &ph)
				continue
			}
		}
		stripped.Content = append(stripped.Content, p.key, p.value)
	}
	v := reflect.ValueOf(ph.Spec)
	if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		l.decodeStruct(stripped, kp, v.Elem(), nil)
	} else if err := stripped.Decode(ph.Spec); err != nil {
		l.fieldErr(kp, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return ph, true
}
