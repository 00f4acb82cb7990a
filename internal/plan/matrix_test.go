package plan

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const matrixPlan = `vars:
  payload: 1024
  conns: 10
repeat: 3
matrix:
  payload: [64, 1KiB, 16KiB]
  conns: [10, 20]
servers: [{name: fake_plan_test}]
phases:
  - connect: {connections: ${conns}}
  - echo: {total: 100, payload: ${payload}}
`

func TestMatrix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(path, []byte(matrixPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		opts   LoadOptions
		combos []string // payload/conns of each loaded plan, in order
	}{
		{"all", LoadOptions{}, []string{"64/10", "64/20", "1KiB/10", "1KiB/20", "16KiB/10", "16KiB/20"}},
		{"set fixes a var", LoadOptions{Sets: map[string]string{"conns": "5"}}, []string{"64/5", "1KiB/5", "16KiB/5"}},
		{"only-matrix", LoadOptions{OnlyMatrix: map[string][]string{"payload": {"64", "16KiB"}, "conns": {"20"}}}, []string{"64/20", "16KiB/20"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := LoadMatrix(path, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ps {
				got = append(got, p.Vars["payload"]+"/"+p.Vars["conns"])
				if p.Repeat != 3 {
					t.Errorf("repeat = %d, want 3", p.Repeat)
				}
				for k, v := range p.Combo {
					if p.Vars[k] != v {
						t.Errorf("combo %v but vars %v", p.Combo, p.Vars)
					}
				}
			}
			if !reflect.DeepEqual(got, tc.combos) {
				t.Errorf("combinations %v, want %v", got, tc.combos)
			}
		})
	}
}

func TestMatrixErrors(t *testing.T) {
	base := "servers: [{name: fake_plan_test}]\nphases:\n  - connect: {connections: 1}\n"
	for _, tc := range []struct {
		name, plan string
		opts       LoadOptions
		want       string
	}{
		{"undeclared var", "vars: {a: 1}\nmatrix: {b: [1, 2]}\n" + base, LoadOptions{}, `m.yaml:2: matrix.b: b is not a variable of vars: declare it there`},
		{"not a list", "vars: {a: 1}\nmatrix: {a: 1}\n" + base, LoadOptions{}, `m.yaml:2: matrix.a: want a non-empty list of values`},
		{"empty list", "vars: {a: 1}\nmatrix: {a: []}\n" + base, LoadOptions{}, `m.yaml:2: matrix.a: want a non-empty list of values`},
		{"twice", "vars: {a: 1}\nmatrix: {a: [1, 1]}\n" + base, LoadOptions{}, `m.yaml:2: matrix.a: "1" is listed twice`},
		{"not a mapping", "vars: {a: 1}\nmatrix: [a]\n" + base, LoadOptions{}, `m.yaml:2: matrix: want a mapping of variables to lists of values, got a list`},
		{"repeat 0 written", "repeat: -1\n" + base, LoadOptions{}, `m.yaml:1: repeat: must be > 0, got -1`},
		{"only-matrix unknown var", "vars: {a: 1}\nmatrix: {a: [1, 2]}\n" + base, LoadOptions{OnlyMatrix: map[string][]string{"b": {"1"}}}, `m.yaml: --only-matrix: unknown matrix variable "b"`},
		{"only-matrix unknown value", "vars: {a: 1}\nmatrix: {a: [1, 2]}\n" + base, LoadOptions{OnlyMatrix: map[string][]string{"a": {"3"}}}, `m.yaml: --only-matrix: a=3: not in the matrix (1, 2)`},
		{"only-matrix of a set var", "vars: {a: 1}\nmatrix: {a: [1, 2]}\n" + base, LoadOptions{Sets: map[string]string{"a": "1"}, OnlyMatrix: map[string][]string{"a": {"1"}}}, `m.yaml: --only-matrix: a is fixed by --set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadBytes("m.yaml", []byte(tc.plan), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}
