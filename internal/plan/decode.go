package plan

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/secret"
)

// The strict decoder. yaml.v3 only honours KnownFields on a yaml.Decoder,
// not on Node.Decode, and it stops at the first type error; so the loader
// walks the node tree itself: it checks every mapping key against the
// target struct's yaml tags (recursively), decodes each leaf on its own, and
// records the line of every key it sees, so that later validation can name
// the line of any field by its path.

// loader holds the state of one Load.
type loader struct {
	file  string
	errs  Errors
	more  int        // problems past MaxErrors, counted only
	lines *lineIndex // field path -> line of its key
	nodes int        // nodes visited, aliases expanded
	// expanded counts the bytes variable references expanded to;
	// valueBytes the bytes of the values decoded (chargeValue).
	expanded    int
	valueBytes  int
	valuesSpent bool
	// bad holds scalars whose text could not be resolved (an undefined
	// variable): their decode errors would repeat the same problem.
	bad map[*yaml.Node]bool
	// badHits counts attempts to decode a bad node: a value that failed,
	// though the problem was reported before decoding.
	badHits int
	// kindNames and frameworkNames are the registries' names, read once
	// a load.
	kindNames, frameworkNames []string
	// secrets holds the values of ${env:NAME} references, then the
	// plan's own credentials (literalSecrets).
	secrets *secret.Set
	// secretLines are the lines whose values hold a secret once their
	// variables are expanded: a problem reported there quotes nothing.
	secretLines map[int]bool
}

// problems counts the problems found so far, including values that could
// not be decoded because of a problem reported earlier.
func (l *loader) problems() int { return len(l.errs) + l.more + l.badHits }

func newLoader(file string) *loader {
	return &loader{file: file, lines: newLineIndex(), bad: map[*yaml.Node]bool{}, secrets: &secret.Set{}, secretLines: map[int]bool{}}
}

// full reports whether the problems listed have reached MaxErrors: the
// rest are only counted, so a costly message need not be made.
func (l *loader) full() bool { return len(l.errs) >= MaxErrors }

// errf records a problem at a line and field path; past MaxErrors it only
// counts it.
func (l *loader) errf(line int, field, format string, args ...any) {
	if l.full() {
		l.more++
		return
	}
	msg := cut(fmt.Sprintf(format, args...), maxMessage) // a value quoted whole
	l.errs = append(l.errs, &Error{File: l.file, Line: max(line, 0), Field: field, Msg: msg})
}

// fieldErr records a problem with a field by its path, at the line of the
// nearest key on that path that appears in the file (0 if none does).
func (l *loader) fieldErr(field, format string, args ...any) {
	l.errf(l.lineOf(field), field, format, args...)
}

// lineOf returns the line of the key at path, or of its closest ancestor
// present in the file.
func (l *loader) lineOf(path string) int { return l.lines.line(path) }

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// keyPath appends a mapping key to a field path; keys that would be
// ambiguous in a dotted path (sysctl names) are bracketed and quoted.
func keyPath(path, key string) string {
	if !plainKey.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// indexPath appends a sequence index to a field path.
func indexPath(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// visit counts one node against MaxNodes; it reports false (once, as an
// error) when the document is too large.
func (l *loader) visit() bool {
	l.nodes++
	if l.nodes == MaxNodes+1 {
		l.errf(0, "", "the document has more than %d nodes once aliases are expanded", MaxNodes)
	}
	return l.nodes <= MaxNodes
}

// deref follows aliases to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// isNull reports whether n is absent or an explicit null (`key:`, `~`, `null`).
func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what a node holds, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!str" {
			return quoteClipped(n.Value)
		}
		return clipped(n.Value)
	}
	return "nothing"
}

// pair is one key and value of a mapping.
type pair struct{ key, value *yaml.Node }

// pairs returns the entries of a mapping with YAML merge keys (`<<: *x`)
// expanded: explicit keys win over merged ones, and earlier merged mappings
// over later ones. A key written twice is an error.
func (l *loader) pairs(n *yaml.Node, path string) []pair {
	var out []pair
	seen := map[string]int{} // key -> line
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind == yaml.ScalarNode {
			if line, dup := seen[k.Value]; dup {
				l.errf(k.Line, path, "key %q is written twice (first at line %d)", k.Value, line)
				continue
			}
			seen[k.Value] = k.Line
		}
		out = append(out, pair{k, v})
	}
	for _, m := range merges {
		for _, src := range l.mergeSources(m, path) {
			for _, p := range l.pairs(src, path) {
				if p.key.Kind == yaml.ScalarNode {
					if _, dup := seen[p.key.Value]; dup {
						continue
					}
					seen[p.key.Value] = p.key.Line
				}
				out = append(out, p)
			}
		}
	}
	return out
}

// mergeSources returns the mappings a merge key's value names: a mapping,
// or a list of mappings.
func (l *loader) mergeSources(v *yaml.Node, path string) []*yaml.Node {
	if !l.visit() {
		return nil
	}
	v = deref(v)
	switch {
	case v == nil:
		return nil
	case v.Kind == yaml.MappingNode:
		return []*yaml.Node{v}
	case v.Kind == yaml.SequenceNode:
		var out []*yaml.Node
		for _, item := range v.Content {
			if !l.visit() {
				return out
			}
			if m := deref(item); m != nil && m.Kind == yaml.MappingNode {
				out = append(out, m)
			} else {
				l.errf(item.Line, path, "a merge key (<<) takes a mapping or a list of mappings, got %s in the list", describe(item))
			}
		}
		return out
	}
	l.errf(v.Line, path, "a merge key (<<) takes a mapping or a list of mappings, got %s", describe(v))
	return nil
}

var (
	nodeType        = reflect.TypeFor[yaml.Node]()
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	shorthandType   = reflect.TypeFor[decl.Shorthand]()
)

// field is one decodable field of a struct.
type field struct {
	name  string
	index []int
}

// structFields lists the yaml keys of a struct type, following yaml.v3's
// rules: the tag name, else the lower-cased field name; "-" skips a field;
// ",inline" merges an embedded struct's keys.
type structInfo struct {
	byName map[string]field
	names  []string // in declaration order, for messages
}

var structCache sync.Map // reflect.Type -> *structInfo

func fieldsOf(t reflect.Type) *structInfo {
	if si, ok := structCache.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{byName: map[string]field{}}
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("yaml")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), index...), i)
			if strings.Contains(","+opts+",", ",inline,") && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			if _, dup := si.byName[name]; !dup {
				si.names = append(si.names, name)
			}
			si.byName[name] = field{name: name, index: idx}
		}
	}
	walk(t, nil)
	structCache.Store(t, si)
	return si
}

// decode decodes n into v (addressable) strictly, recording problems at
// path. It reports whether v was decoded without a problem.
func (l *loader) decode(n *yaml.Node, path string, v reflect.Value) bool {
	if !l.visit() {
		return false
	}
	if n != nil && n.Kind == yaml.AliasNode {
		if n = deref(n); n == nil {
			l.errf(0, path, "alias chain too long")
			return false
		}
	}
	if l.bad[n] {
		l.badHits++
		return false
	}
	if n != nil && n.Kind == yaml.ScalarNode && !l.chargeValue(len(n.Value)) {
		return false
	}
	t := v.Type()
	if t == nodeType {
		if n != nil {
			v.Set(reflect.ValueOf(*n))
		}
		return true
	}
	if isNull(n) {
		return true // null leaves the zero value: the documented default
	}
	l.lines.setGiven(path)
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return true
		}
		return l.decode(n.Content[0], path, v)
	}
	if reflect.PointerTo(t).Implements(shorthandType) {
		if n.Kind != yaml.MappingNode {
			return l.short(n, path, v)
		}
		if w, ok := v.Addr().Interface().(written); ok {
			w.markWritten()
		}
		return l.decodeStruct(n, path, v, nil)
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return l.leaf(n, path, v)
	}
	switch t.Kind() {
	case reflect.Pointer:
		if needsWalk(t.Elem()) {
			p := reflect.New(t.Elem())
			ok := l.decode(n, path, p.Elem())
			v.Set(p)
			return ok
		}
	case reflect.Struct:
		return l.decodeStruct(n, path, v, nil)
	case reflect.Slice:
		return l.decodeSlice(n, path, v)
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			return l.decodeMap(n, path, v)
		}
	}
	return l.leaf(n, path, v)
}

// decodeSlice decodes a list, each item at path[i].
func (l *loader) decodeSlice(n *yaml.Node, path string, v reflect.Value) bool {
	if n.Kind != yaml.SequenceNode {
		l.errf(n.Line, path, "want a list, got %s", describe(n))
		return false
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	ok := true
	for i, item := range n.Content {
		p := indexPath(path, i)
		l.lines.set(p, item.Line)
		ok = l.decode(item, p, s.Index(i)) && ok
	}
	v.Set(s)
	return ok
}

// decodeMap decodes a mapping with string keys into a map, keeping the
// entries whose values decode.
func (l *loader) decodeMap(n *yaml.Node, path string, v reflect.Value) bool {
	if n.Kind != yaml.MappingNode {
		l.errf(n.Line, path, "want a mapping, got %s", describe(n))
		return false
	}
	t := v.Type()
	m := reflect.MakeMap(t)
	ok := true
	for _, p := range l.pairs(n, path) {
		if p.key.Kind != yaml.ScalarNode {
			l.errf(p.key.Line, path, "keys must be strings, got %s", describe(p.key))
			ok = false
			continue
		}
		kp := keyPath(path, p.key.Value)
		l.lines.set(kp, p.key.Line)
		e := reflect.New(t.Elem()).Elem()
		if l.decode(p.value, kp, e) {
			m.SetMapIndex(reflect.ValueOf(p.key.Value).Convert(t.Key()), e)
		} else {
			ok = false
		}
	}
	v.Set(m)
	return ok
}

// needsWalk reports whether values of t are decoded by the loader itself
// (containers, structs) rather than handed to yaml.v3 as leaves.
func needsWalk(t reflect.Type) bool {
	if t == nodeType || reflect.PointerTo(t).Implements(shorthandType) {
		return true
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return false
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Slice:
		return true
	case reflect.Map:
		return t.Key().Kind() == reflect.String
	}
	return false
}

// decodeStruct decodes a mapping into a struct, rejecting unknown keys.
// The value of a key in own is decoded into the value own names instead
// of the struct's field: the loader reads those keys itself (ownKeys).
func (l *loader) decodeStruct(n *yaml.Node, path string, v reflect.Value, own map[string]reflect.Value) bool {
	if n.Kind != yaml.MappingNode {
		l.errf(n.Line, path, "want a mapping, got %s", describe(n))
		return false
	}
	si := fieldsOf(v.Type())
	ok := true
	for _, p := range l.pairs(n, path) {
		if p.key.Kind != yaml.ScalarNode {
			l.errf(p.key.Line, path, "keys must be strings, got %s", describe(p.key))
			ok = false
			continue
		}
		f, known := si.byName[p.key.Value]
		if !known {
			l.errf(p.key.Line, path, "%s", unknownMsg("key", p.key.Value, si.names))
			ok = false
			continue
		}
		kp := keyPath(path, f.name)
		l.lines.set(kp, p.key.Line)
		target, mine := own[f.name]
		if !mine {
			target = fieldByIndex(v, f.index)
		}
		ok = l.decode(p.value, kp, target) && ok
	}
	return ok
}

// fieldByIndex is v.FieldByIndex, allocating nil embedded pointers.
func fieldByIndex(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// short decodes the short form of a struct that has one (decl.Shorthand:
// think: 100ms), a node other than a mapping; its mapping form is
// decoded as any struct's.
func (l *loader) short(n *yaml.Node, path string, v reflect.Value) bool {
	tmp := reflect.New(v.Type())
	if w, ok := tmp.Interface().(written); ok {
		w.markWritten()
	}
	if err := tmp.Interface().(decl.Shorthand).UnmarshalShort(n); err != nil {
		if l.secrets.Holds(n.Value) {
			l.errf(n.Line, path, "got a value that holds a secret (not shown)")
		} else {
			l.errf(n.Line, path, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return false
	}
	v.Set(tmp.Elem())
	return true
}

// leaf decodes a scalar (or a type with its own UnmarshalYAML) through
// yaml.v3, turning its errors into messages about the field.
func (l *loader) leaf(n *yaml.Node, path string, v reflect.Value) bool {
	if l.bad[n] {
		l.badHits++
		return false // already reported
	}
	t := v.Type()
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	custom := reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(base).Implements(unmarshalerType)
	if !custom && n.Kind != yaml.ScalarNode {
		l.errf(n.Line, path, "want %s, got %s", want(base), describe(n))
		return false
	}
	// Decode into a fresh value, so a failed decode leaves the zero value.
	tmp := reflect.New(t)
	if err := n.Decode(tmp.Interface()); err != nil {
		var te *yaml.TypeError
		switch {
		case errors.As(err, &te) && l.secrets.Holds(n.Value):
			// yaml.v3 quotes the value's first bytes: a piece of the secret
			// no redaction would recognise.
			l.errf(n.Line, path, "want %s, got a value that holds a secret (not shown)", want(base))
		case custom || te == nil:
			l.errf(n.Line, path, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		default:
			l.errf(n.Line, path, "want %s, got %s", want(base), describe(n))
		}
		return false
	}
	if !custom && isInt(base) && n.ShortTag() == "!!float" {
		// yaml.v3 truncates 1.5 to 1; only whole numbers (1e6) are integers.
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || f != math.Trunc(f) {
			l.errf(n.Line, path, "want %s, got %s", want(base), describe(n))
			return false
		}
	}
	if k := base.Kind(); k == reflect.Float32 || k == reflect.Float64 {
		e := tmp.Elem()
		for e.Kind() == reflect.Pointer && !e.IsNil() {
			e = e.Elem()
		}
		if f := e; f.CanFloat() && (math.IsNaN(f.Float()) || math.IsInf(f.Float(), 0)) {
			l.errf(n.Line, path, "want a finite number, got %s", describe(n))
			return false
		}
	}
	v.Set(tmp.Elem())
	return true
}

func isInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// want names what a field of type t takes.
func want(t reflect.Type) string {
	switch {
	case isInt(t):
		return "an integer"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Slice:
		return "a list"
	case t.Kind() == reflect.Map || t.Kind() == reflect.Struct:
		return "a mapping"
	}
	return "a " + t.String()
}
