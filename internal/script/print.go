package script

import (
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/decl"
)

// Lines returns steps as wsplan validate prints them: a line a step, in
// the plan's own short form (send: '{"op":"login"}', expect: {json:
// {$.op: ok}, as: login}, think: 100ms, close: true), only the fields a
// step sets. A loop's line carries its count, duration and inflight; its
// steps follow, indented by four more spaces.
func Lines(steps []Step) []string {
	var out []string
	for i := range steps {
		verb, body := stepBody(&steps[i])
		out = append(out, "- "+verb+": "+shortBody(body))
		if l, ok := body.(*Loop); ok {
			for _, line := range Lines(l.Steps) {
				out = append(out, "    "+line)
			}
		}
	}
	return out
}

// stepBody returns the key and the value of the step's set field.
func stepBody(s *Step) (string, any) {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			return yamlKey(v.Type().Field(i)), f.Interface()
		}
	}
	return "", nil
}

// shortBody is a step's value in its shortest form: its scalar form
// where it has one (decl.Shorthand: a send's text, a fixed think's
// duration, close's true), a loop without its steps.
func shortBody(body any) string {
	if sh, ok := body.(decl.Shorthand); ok {
		if v, ok := sh.Shorten(); ok {
			if s, isString := v.(string); isString {
				return scalar(s)
			}
			return Short(v)
		}
	}
	if b, ok := body.(*Loop); ok {
		l := *b
		l.Steps = nil
		return Short(l)
	}
	return Short(body)
}

// Short returns v — a step's value, a Match, a Data — as one flow mapping
// of the fields it sets, by their YAML keys, in declaration order (inline
// fields in place): {json: {$.op: ok}, as: login}.
func Short(v any) string { return OneLine(shortNode(reflect.ValueOf(v))) }

// shortNode is v's set fields as a mapping node; a value other than a
// struct as YAML encodes it.
func shortNode(v reflect.Value) *yaml.Node {
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		var n yaml.Node
		if err := n.Encode(v.Interface()); err != nil {
			return &yaml.Node{Kind: yaml.ScalarNode, Value: err.Error()}
		}
		return &n
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	addSet(n, v)
	return n
}

// addSet appends the set fields of struct v to mapping n.
func addSet(n *yaml.Node, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if !f.IsExported() || fv.IsZero() {
			continue
		}
		if strings.HasSuffix(f.Tag.Get("yaml"), ",inline") {
			addSet(n, reflect.Indirect(fv))
			continue
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: yamlKey(f)}, shortNode(fv))
	}
}

// yamlKey is a field's key in a plan.
func yamlKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return k
}

// scalar is s as YAML writes a string: quoted where it must be.
func scalar(s string) string {
	var n yaml.Node
	if err := n.Encode(s); err != nil {
		return err.Error()
	}
	return OneLine(&n)
}

// OneLine renders n on one line: every mapping and sequence in flow style,
// every multi-line string double-quoted (its breaks written \n).
func OneLine(n *yaml.Node) string {
	oneLine(n)
	b, err := yaml.Marshal(n)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(b))
}

// oneLine sets n and everything in it to a one-line style.
func oneLine(n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		n.Style = yaml.FlowStyle
	case yaml.ScalarNode:
		if strings.Contains(n.Value, "\n") {
			n.Style = yaml.DoubleQuotedStyle
		}
	}
	for _, c := range n.Content {
		oneLine(c)
	}
}
