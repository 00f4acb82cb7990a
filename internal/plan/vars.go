package plan

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/secret"
)

// Variables.
//
// `vars:` is a mapping of names to scalar values; --set NAME=VALUE replaces
// the value of a declared variable (setting an undeclared one is an error).
// A --set value is typed as if it had been written unquoted in the YAML
// file: --set conns=2000 is an integer, --set d=10s a string.
//
// `${name}` may appear in any scalar value of the plan (never in a key):
//
//   - an unquoted scalar that is exactly `${name}` becomes the variable's
//     value with the variable's own YAML type, so `connections: ${conns}`
//     decodes as an integer when conns is 10000, and as a string (an error)
//     when conns is "10000" in quotes;
//   - anywhere else `${name}` is replaced textually; the result of an
//     unquoted scalar is then typed as if it had been written there
//     (`total: ${k}000` is an integer), a quoted one stays a string;
//   - `$${` writes a literal `${`.
//
// A variable's value may use variables declared above it (`b: ${a}0`); the
// reference sees the final value of the earlier variable, after --set. A
// reference to the variable itself or to one declared below it is an error,
// so there are no cycles and the result does not depend on evaluation
// order. --set values are taken literally, never expanded.
//
// `${env:NAME}` takes the environment variable NAME (explicitly: the
// environment is never read otherwise); an unset variable is an error. Its
// value is a secret: Plan.Secrets lists it and Plan.Redact replaces it with
// *** in everything wsplan prints or writes.

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// envPrefix starts a reference to an environment variable: ${env:NAME}.
const envPrefix = "env:"

// MinSecretLen is the shortest value ${env:NAME} may have: shorter ones
// could not be redacted without garbling ordinary output.
const MinSecretLen = secret.MinLen

// validRef reports whether ref (the text between ${ and }) is a variable
// name or env:NAME.
func validRef(ref string) bool {
	return varName.MatchString(strings.TrimPrefix(ref, envPrefix))
}

// envLookup resolves ${env:NAME} and records its value as a secret.
func (l *loader) envLookup(ref string) (*yaml.Node, string) {
	name := strings.TrimPrefix(ref, envPrefix)
	v, ok := os.LookupEnv(name)
	switch {
	case !ok:
		return nil, fmt.Sprintf("environment variable %s is not set (referenced as ${%s})", name, ref)
	case len(v) < MinSecretLen:
		return nil, fmt.Sprintf("environment variable %s is shorter than %d bytes: too short to be redacted from the output as a secret", name, MinSecretLen)
	}
	l.secrets.Add(v)
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: yaml.DoubleQuotedStyle}, ""
}

// varTable is the resolved `vars:`.
type varTable struct {
	names  []string              // declared, in plan order
	values map[string]*yaml.Node // resolved scalar; nil = declared but broken (already reported)
	// full reports that no more problems will be listed: a message is
	// then not worth its suggestions.
	full func() bool
}

// resolveVars reads the `vars:` node (nil when absent), applies --set, and
// resolves references between variables.
func (l *loader) resolveVars(n *yaml.Node, sets map[string]string) *varTable {
	vt := &varTable{values: map[string]*yaml.Node{}, full: l.full}
	declared := map[string]bool{}
	var entries []pair
	if n = deref(n); !isNull(n) {
		if n.Kind != yaml.MappingNode {
			l.errf(n.Line, "vars", "want a mapping of names to values, got %s", describe(n))
		} else {
			for _, p := range l.pairs(n, "vars") {
				if p.key.Kind != yaml.ScalarNode || !varName.MatchString(p.key.Value) {
					l.errf(p.key.Line, "vars", "bad variable name %s: use letters, digits and _, not starting with a digit", describe(p.key))
					continue
				}
				declared[p.key.Value] = true
				vt.names = append(vt.names, p.key.Value)
				entries = append(entries, p)
			}
		}
	}

	setNames := make([]string, 0, len(sets))
	for k := range sets {
		setNames = append(setNames, k)
	}
	sort.Strings(setNames)
	for _, k := range setNames {
		if declared[k] {
			continue
		}
		if len(vt.names) == 0 {
			l.errf(0, "--set", "unknown variable %q: the plan declares no vars:", k)
		} else {
			l.errf(0, "--set", "%s", unknownMsg("variable", k, vt.names))
		}
	}

	for _, p := range entries {
		name := p.key.Value
		path := keyPath("vars", name)
		l.lines.set(path, p.key.Line)
		if s, ok := sets[name]; ok {
			vt.values[name] = &yaml.Node{Kind: yaml.ScalarNode, Value: s, Line: p.key.Line, Column: p.key.Column}
			continue
		}
		v := deref(p.value)
		switch {
		case v == nil || isNull(v):
			l.errf(p.key.Line, path, "has no value: give it one, or set it with --set %s=VALUE", name)
			vt.values[name] = nil
			continue
		case v.Kind != yaml.ScalarNode:
			l.errf(v.Line, path, "want a single value (string, number or bool), got %s", describe(v))
			vt.values[name] = nil
			continue
		}
		c := *v
		c.Content = nil
		ok := l.expandScalar(&c, func() string { return path }, func(ref string) (*yaml.Node, string) {
			// vt.values holds exactly the variables declared above.
			if val, ok := vt.values[ref]; ok {
				return val, ""
			}
			if declared[ref] {
				return nil, fmt.Sprintf("${%s} is not declared above %s: a variable may only use variables declared before it", ref, name)
			}
			return nil, vt.undefinedMsg(ref)
		})
		if !ok {
			vt.values[name] = nil
			continue
		}
		vt.values[name] = &c
	}
	return vt
}

// lookup returns the value of a variable for a use in the plan body.
func (vt *varTable) lookup(ref string) (*yaml.Node, string) {
	if v, ok := vt.values[ref]; ok {
		return v, ""
	}
	return nil, vt.undefinedMsg(ref)
}

// resolved returns every well-formed variable's final value as text.
func (vt *varTable) resolved() map[string]string {
	out := make(map[string]string, len(vt.names))
	for _, name := range vt.names {
		if v := vt.values[name]; v != nil {
			out[name] = v.Value
		}
	}
	return out
}

func (vt *varTable) undefinedMsg(ref string) string {
	names := vt.names
	switch {
	case vt.full != nil && vt.full():
		return fmt.Sprintf("undefined variable ${%s}", ref)
	case len(names) == 0:
		return fmt.Sprintf("undefined variable ${%s}: the plan has no vars:", ref)
	case suggest(ref, names) != "":
		return fmt.Sprintf("undefined variable ${%s} (did you mean ${%s}?)", ref, suggest(ref, names))
	}
	return fmt.Sprintf("undefined variable ${%s} (vars: %s)", ref, listed(names))
}

// substitute expands variable references in every scalar value under n
// (keys are left alone). skipTop names a top-level key not to touch
// ("vars", resolved on its own). A node reached twice through aliases is
// expanded once. The path of a value is spelt out only for a problem.
func (l *loader) substitute(n *yaml.Node, at *walkPath, vt *varTable, seen map[*yaml.Node]bool, top bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			l.substitute(c, at, vt, seen, top)
		}
	case yaml.AliasNode:
		l.substitute(n.Alias, at, vt, seen, false)
	case yaml.SequenceNode:
		for i, c := range n.Content {
			l.substitute(c, &walkPath{parent: at, index: i}, vt, seen, false)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if top && k.Value == "vars" {
				continue
			}
			l.substitute(n.Content[i+1], &walkPath{parent: at, key: k.Value, index: -1}, vt, seen, false)
		}
	case yaml.ScalarNode:
		l.expandScalar(n, at.String, vt.lookup)
	}
}

// walkPath is a field path as a walk descends: each level points to its
// parent, so that descending costs the same at any depth.
type walkPath struct {
	parent *walkPath
	key    string
	index  int // -1: a key
}

// String spells the path as keyPath and indexPath do.
func (p *walkPath) String() string {
	if p == nil {
		return ""
	}
	if p.index >= 0 {
		return indexPath(p.parent.String(), p.index)
	}
	return keyPath(p.parent.String(), p.key)
}

const (
	quotedStyles = yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle
)

// expandScalar expands the references in one scalar in place. lookup
// returns a variable's value, or a problem ("" and nil: broken, already
// reported). It reports false, after recording the problems, when a
// reference could not be expanded; the node is then marked bad so that
// decoding it does not report the same mistake again.
func (l *loader) expandScalar(n *yaml.Node, path func() string, lookup func(string) (*yaml.Node, string)) bool {
	if !strings.Contains(n.Value, "${") {
		return true
	}
	literal := n.Style&(quotedStyles|yaml.TaggedStyle) != 0
	// An unquoted scalar that is exactly one reference takes the value
	// with its own YAML type.
	if strings.Contains(n.Value, "${"+envPrefix) {
		plain := lookup
		lookup = func(ref string) (*yaml.Node, string) {
			if strings.HasPrefix(ref, envPrefix) {
				return l.envLookup(ref)
			}
			return plain(ref)
		}
	}
	if !literal && strings.HasPrefix(n.Value, "${") && strings.HasSuffix(n.Value, "}") && validRef(n.Value[2:len(n.Value)-1]) {
		return l.expandWhole(n, path, lookup)
	}
	var b strings.Builder
	s := n.Value
	ok := true
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		if i > 0 && s[i-1] == '$' {
			// "$${" is a literal "${".
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			l.errf(n.Line, path(), "unclosed ${ in %q: write ${name}, or $${ for a literal ${", n.Value)
			ok = false
			break
		}
		ref := s[i+2 : i+j]
		if !validRef(ref) {
			l.errf(n.Line, path(), "bad variable reference %q: a name has letters, digits and _, or is env:NAME (write $${ for a literal ${)", "${"+ref+"}")
			ok = false
		} else if v, problem := lookup(ref); v == nil {
			if problem != "" {
				l.errf(n.Line, path(), "%s", problem)
			}
			ok = false
		} else if !l.spend(len(v.Value), n.Line, path) {
			ok = false
			break
		} else {
			b.WriteString(v.Value)
		}
		s = s[i+j+1:]
	}
	if !ok {
		l.bad[n] = true
		return false
	}
	n.Value = b.String()
	if !literal {
		n.Tag = "" // typed as if the text had been written here
	}
	l.markSecret(n)
	return true
}

// markSecret records n's line when its expanded value holds a secret: a
// problem reported there (a template that does not parse, an expression)
// may quote a token of it that no form of the secret matches.
func (l *loader) markSecret(n *yaml.Node) {
	if !l.secrets.Empty() && l.secrets.Holds(n.Value) {
		l.secretLines[n.Line] = true
	}
}

// expandWhole expands an unquoted scalar that is exactly one reference:
// it takes the value with its own YAML type.
func (l *loader) expandWhole(n *yaml.Node, path func() string, lookup func(string) (*yaml.Node, string)) bool {
	v, problem := lookup(n.Value[2 : len(n.Value)-1])
	if v == nil && problem != "" {
		l.errf(n.Line, path(), "%s", problem)
	}
	if v == nil || !l.spend(len(v.Value), n.Line, path) {
		l.bad[n] = true
		return false
	}
	n.Value, n.Tag, n.Style = v.Value, v.Tag, v.Style
	l.markSecret(n)
	return true
}

// YAML does not allow "{" and "}" in an unquoted scalar inside a flow
// mapping, so `{connections: ${conns}}` would be a syntax error. Before
// parsing, every well-formed reference is rewritten to a form YAML
// accepts anywhere ($⟦name⟧, same line, no indicator characters); right
// after parsing, every scalar gets its ${name} back. The placeholder is
// reserved: a plan cannot contain it literally.
var (
	refPattern         = regexp.MustCompile(`\$\{((?:env:)?[A-Za-z_][A-Za-z0-9_]*)\}`)
	placeholderPattern = regexp.MustCompile(`\$\x{27E6}((?:env:)?[A-Za-z_][A-Za-z0-9_]*)\x{27E7}`)
)

func protectRefs(data []byte) []byte {
	if !bytes.Contains(data, []byte("${")) {
		return data
	}
	return refPattern.ReplaceAll(data, []byte("$$\u27E6${1}\u27E7"))
}

func restoreRefs(n *yaml.Node, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "$\u27E6") {
		n.Value = placeholderPattern.ReplaceAllString(n.Value, "$${${1}}")
	}
	for _, c := range n.Content {
		restoreRefs(c, seen)
	}
	restoreRefs(n.Alias, seen)
}
