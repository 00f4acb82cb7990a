package plan

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Repeats and the parameter matrix.
//
// `repeat: N` (or --count N, which wins) runs every server's phases N times,
// each time on a fresh server process; the engine interleaves the servers
// (A B C A B C) so that drift of the host hits all of them alike.
//
// `matrix:` maps declared variables to lists of values; the plan runs once
// for every combination, as if each had been given with --set. The first
// var varies slowest. A var also given with --set leaves the matrix (the
// --set value wins); --only-matrix VAR=VALUE keeps only the listed values
// of VAR.

// MaxRepeat is the largest `repeat:` (and --count).
const MaxRepeat = 1000

// MaxCombinations bounds the number of combinations a matrix may have.
const MaxCombinations = 1000

// MaxMatrixBytes bounds the combinations of a matrix times the plan's
// size: each combination is a load of the whole plan.
const MaxMatrixBytes = 4 << 20

// Matrix is `matrix:`: the vars a run sweeps, in plan order.
type Matrix []MatrixVar

// JSONSchema describes what matrix: takes, for package schema: declared
// vars → non-empty lists of values.
func (Matrix) JSONSchema() map[string]any {
	return map[string]any{
		"type":          []any{"object", "null"},
		"propertyNames": map[string]any{"pattern": varName.String()},
		"additionalProperties": map[string]any{
			"type":     "array",
			"minItems": 1,
			"items":    map[string]any{"type": []any{"string", "number", "boolean"}},
		},
	}
}

// MatrixVar is one var of `matrix:` with its values as text (as --set
// takes them), in plan order.
type MatrixVar struct {
	Name   string
	Values []string
	Line   int
}

// matrix reads the `matrix:` node against the declared variables. Vars set
// with --set leave it; only (from --only-matrix) narrows the values.
func (l *loader) matrix(n *yaml.Node, vt *varTable, sets map[string]string, only map[string][]string) Matrix {
	out, inMatrix, ok := l.matrixVars(n, vt, sets)
	if !ok {
		return nil
	}
	for name, want := range only {
		l.onlyMatrix(out, name, want, inMatrix[name])
	}
	total := 1
	for _, m := range out {
		total *= len(m.Values)
		if total > MaxCombinations {
			l.errf(m.Line, "matrix", "more than %d combinations: narrow it with --only-matrix or --set", MaxCombinations)
			return nil
		}
	}
	return out
}

// matrixVars reads the vars of the matrix and their values, leaving out
// those given with --set; inMatrix has every var written in it. It
// reports false when matrix: is not a mapping.
func (l *loader) matrixVars(n *yaml.Node, vt *varTable, sets map[string]string) (out Matrix, inMatrix map[string]bool, ok bool) {
	inMatrix = map[string]bool{}
	if n = deref(n); isNull(n) {
		return nil, inMatrix, true
	}
	if n.Kind != yaml.MappingNode {
		l.errf(n.Line, "matrix", "want a mapping of variables to lists of values, got %s", describe(n))
		return nil, inMatrix, false
	}
	for _, p := range l.pairs(n, "matrix") {
		name := p.key.Value
		path := keyPath("matrix", name)
		inMatrix[name] = true
		if !slices.Contains(vt.names, name) {
			l.errf(p.key.Line, path, "%s is not a variable of vars: declare it there (its value there is the one `wsplan validate` shows)", name)
			continue
		}
		v := deref(p.value)
		if v == nil || v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			l.errf(p.key.Line, path, "want a non-empty list of values, e.g. [64, 1KiB]")
			continue
		}
		mv := MatrixVar{Name: name, Line: p.key.Line}
		seen := map[string]bool{}
		for _, item := range v.Content {
			item = deref(item)
			if item.Kind != yaml.ScalarNode {
				l.errf(item.Line, path, "want single values, got %s", describe(item))
				continue
			}
			if seen[item.Value] {
				l.errf(item.Line, path, "%q is listed twice", item.Value)
				continue
			}
			seen[item.Value] = true
			mv.Values = append(mv.Values, item.Value)
		}
		if _, set := sets[name]; set {
			continue // --set wins over the matrix
		}
		out = append(out, mv)
	}
	return out, inMatrix, true
}

// onlyMatrix keeps only the values want of the matrix var name
// (--only-matrix); fixed: the var is in the matrix but given with --set.
func (l *loader) onlyMatrix(m Matrix, name string, want []string, fixed bool) {
	i := slices.IndexFunc(m, func(v MatrixVar) bool { return v.Name == name })
	if i < 0 {
		if fixed {
			l.errf(0, "--only-matrix", "%s is fixed by --set", name)
			return
		}
		names := make([]string, len(m))
		for j := range m {
			names[j] = m[j].Name
		}
		l.errf(0, "--only-matrix", "%s", unknownMsg("matrix variable", name, names))
		return
	}
	var kept []string
	for _, w := range want {
		if !slices.Contains(m[i].Values, w) {
			l.errf(0, "--only-matrix", "%s=%s: not in the matrix (%s)", name, w, strings.Join(m[i].Values, ", "))
			continue
		}
		kept = append(kept, w)
	}
	if len(kept) > 0 {
		m[i].Values = kept
	}
}

// Combinations returns every combination of the plan's matrix, the first
// var varying slowest; one empty combination without a matrix.
func (p *Plan) Combinations() []map[string]string {
	out := []map[string]string{{}}
	for _, m := range p.Matrix {
		var next []map[string]string
		for _, c := range out {
			for _, v := range m.Values {
				d := maps.Clone(c)
				d[m.Name] = v
				next = append(next, d)
			}
		}
		out = next
	}
	return out
}

// LoadMatrix loads the plan at path once per combination of its matrix
// (each with the combination's vars set as --set would), in Combinations
// order; each plan's Combo is its combination. Without a matrix it
// returns the one plan. The first plan's Matrix and Repeat are the plan's.
func LoadMatrix(path string, opts LoadOptions) ([]*Plan, error) {
	data, err := readPlan(path)
	if err != nil {
		return nil, err
	}
	base, err := LoadBytes(path, data, opts)
	if err != nil {
		return nil, err
	}
	if len(base.Matrix) == 0 {
		return []*Plan{base}, nil
	}
	combos := base.Combinations()
	if len(combos)*len(data) > MaxMatrixBytes {
		return nil, Errors{{File: path, Line: base.Matrix[0].Line, Field: "matrix",
			Msg: fmt.Sprintf("%d combinations of a plan of %d bytes: more than %d bytes (%s) to load, one plan a combination: narrow it with --only-matrix or --set, or shorten the plan", len(combos), len(data), MaxMatrixBytes, sizeName(MaxMatrixBytes))}}
	}
	var out []*Plan
	var errs Errors
	for _, c := range combos {
		o := LoadOptions{Sets: maps.Clone(opts.Sets), Only: opts.Only}
		if o.Sets == nil {
			o.Sets = map[string]string{}
		}
		maps.Copy(o.Sets, c)
		p, err := LoadBytes(path, data, o)
		if err != nil {
			var es Errors
			if errors.As(err, &es) {
				for _, e := range es {
					e.Msg = fmt.Sprintf("with %s: %s", comboString(c, base.Matrix), e.Msg)
					errs = append(errs, e)
				}
				continue
			}
			return nil, err
		}
		p.Matrix, p.Repeat, p.Combo = base.Matrix, base.Repeat, c
		out = append(out, p)
	}
	if len(errs) > 0 {
		return nil, errs.sorted()
	}
	return out, nil
}

func comboString(c map[string]string, m []MatrixVar) string {
	parts := make([]string, 0, len(m))
	for _, v := range m {
		parts = append(parts, v.Name+"="+c[v.Name])
	}
	return strings.Join(parts, " ")
}
